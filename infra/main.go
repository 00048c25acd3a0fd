// Command infra is the AWS CDK app that deploys cairn itself: run it through
// the CDK CLI (`make deploy`, `npx aws-cdk@2 deploy`) or directly with
// `go run .` (`make synth`), which writes the template to $CDK_OUTDIR.
//
// Configuration is CDK context; see cdk.json and README.md.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/cairn-dev/cairn/internal/target"
)

// stackName is the CloudFormation stack cairn runs in.
const stackName = "cairn"

func main() {
	os.Exit(run())
}

func run() int {
	defer jsii.Close()
	props := &awscdk.AppProps{}
	// The CDK CLI passes cdk.json's context in CDK_CONTEXT_JSON; run
	// directly, the app reads cdk.json itself so both give the same template.
	if os.Getenv("CDK_CONTEXT_JSON") == "" {
		ctx, err := cdkJSONContext("cdk.json")
		if err != nil {
			fmt.Fprintln(os.Stderr, "infra:", err)
			return 1
		}
		props.Context = &ctx
	}
	app := awscdk.NewApp(props)
	if err := build(app); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		return 1
	}
	app.Synth(nil)
	return 0
}

// build adds cairn's stack and, for each of cairn:targets, a target stack to app. cairn's
// stack depends on the target stacks, so `cdk deploy --all` makes the targets' ports topics
// before cairn subscribes to them.
func build(app awscdk.App) error {
	cairn, err := NewCairnStack(app, "Cairn", &CairnStackProps{StackProps: awscdk.StackProps{
		StackName: jsii.String(stackName),
		// Environment-agnostic on purpose: the template synthesizes without
		// an AWS account and deploys to whichever account the CLI targets.
	}})
	if err != nil {
		return err
	}
	cfg, err := LoadConfig(app.Node())
	if err != nil {
		return err
	}
	for _, t := range cfg.Targets {
		ts, err := NewTargetStack(app, TargetStackID(t.Target), &TargetStackProps{Target: t, StackProps: awscdk.StackProps{
			StackName: jsii.String(target.StackName),
			Env:       &awscdk.Environment{Account: jsii.String(t.Account), Region: jsii.String(t.Region)},
		}})
		if err != nil {
			return err
		}
		cairn.AddStackDependency(ts, jsii.String("cairn subscribes to the target's ports topic"))
	}
	return nil
}

// TargetStackID is the construct id (and template file name) of a target's stack:
// CairnTarget-ACCOUNT-REGION.
func TargetStackID(t target.Target) string { return "CairnTarget-" + t.Account + "-" + t.Region }

// cdkJSONContext returns the "context" object of a cdk.json file.
func cdkJSONContext(path string) (map[string]interface{}, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CDK context: %w (run from the infra folder)", err)
	}
	var f struct {
		Context map[string]interface{} `json:"context"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %v", path, err)
	}
	return f.Context, nil
}
