package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/cairn-dev/cairn/internal/target"
)

// Context keys of CDK apps' deployments (docs/cdk.md, "Deploying a CDK app"): the environments
// "ACCOUNT:REGION" bootstrapped with `cdk bootstrap --trust CAIRN_ACCOUNT` whose bootstrap
// roles cairn's deployer and drift function may assume, and their bootstrap qualifier.
const (
	ctxCDKEnvironments = "cairn:cdkEnvironments"
	ctxCDKQualifier    = "cairn:cdkQualifier"
)

// defaultCDKQualifier is `cdk bootstrap`'s default qualifier.
const defaultCDKQualifier = "hnb659fds"

var cdkQualifierRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,10}$`)

// loadCDK reads cairn:cdkEnvironments (sorted, deduplicated) and cairn:cdkQualifier.
func loadCDK(cfg *Config, envs, qualifier interface{}) error {
	list, err := stringList(envs)
	if err != nil {
		return fmt.Errorf("context %s: %w", ctxCDKEnvironments, err)
	}
	for _, s := range list {
		t, err := target.Parse(s)
		if err != nil {
			return fmt.Errorf("context %s: %w", ctxCDKEnvironments, err)
		}
		if slices.Contains(cfg.CDKEnvironments, t) {
			return fmt.Errorf("context %s: %s is listed twice: remove the duplicate", ctxCDKEnvironments, t)
		}
		cfg.CDKEnvironments = append(cfg.CDKEnvironments, t)
	}
	slices.SortFunc(cfg.CDKEnvironments, func(a, b target.Target) int { return strings.Compare(a.String(), b.String()) })
	cfg.CDKQualifier = defaultCDKQualifier
	if qualifier != nil {
		q, ok := qualifier.(string)
		if !ok || !cdkQualifierRe.MatchString(q) {
			return fmt.Errorf("context %s: %v is not a bootstrap qualifier: use 1 to 10 letters, digits, '-' or '_' (cdk bootstrap --qualifier), or leave it unset for %s", ctxCDKQualifier, qualifier, defaultCDKQualifier)
		}
		cfg.CDKQualifier = q
	}
	return nil
}

// cdkRole is the ARN of a bootstrap role (deploy, file-publishing, image-publishing) of
// the qualifier in t, as the default stack synthesizer names it.
func cdkRole(stack awscdk.Stack, qualifier, role string, t target.Target) *string {
	return stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("iam"), Region: jsii.String(""), Account: jsii.String(t.Account),
		Resource: jsii.String("role"), ResourceName: jsii.String("cdk-" + qualifier + "-" + role + "-role-" + t.Account + "-" + t.Region),
		ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})
}

// wireCDK lets the deployer assume the bootstrap roles a CDK app's assembly names in each
// of cairn:cdkEnvironments — the deploy role its stacks are deployed through, the
// file-publishing role it publishes file assets through, the image-publishing role it
// checks images through — and the drift function the deploy role, through which it reads
// the stacks there. Each role's own policy (cdk bootstrap's) bounds what cairn does with
// it; its trust must admit cairn's account (cdk bootstrap --trust).
func wireCDK(stack awscdk.Stack, cfg Config, deployerRole, driftRole awsiam.IRole) {
	if len(cfg.CDKEnvironments) == 0 {
		return
	}
	var deployer, drift []*string
	for _, t := range cfg.CDKEnvironments {
		deploy := cdkRole(stack, cfg.CDKQualifier, "deploy", t)
		deployer = append(deployer, deploy, cdkRole(stack, cfg.CDKQualifier, "file-publishing", t), cdkRole(stack, cfg.CDKQualifier, "image-publishing", t))
		drift = append(drift, deploy)
	}
	deployerRole.AddToPrincipalPolicy(allow("DeployerAssumeCDKRoles", []string{"sts:AssumeRole"}, deployer))
	driftRole.AddToPrincipalPolicy(allow("DriftAssumeCDKRoles", []string{"sts:AssumeRole"}, drift))
}
