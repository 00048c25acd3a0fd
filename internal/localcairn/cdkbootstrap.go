package localcairn

import (
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/target"
)

// cdkBootstrapTemplate is what `cdk bootstrap` deploys, written from the CDK's bootstrap
// contract (see its Description).
//
//go:embed cdk-bootstrap.yaml
var cdkBootstrapTemplate string

// The CDK's bootstrap contract: the stack `cdk bootstrap` makes in each account and region,
// its default qualifier, and the names of what it makes there.
const (
	CDKToolkitStack     = "CDKToolkit"
	DefaultCDKQualifier = "hnb659fds"
)

// CDKAssetsBucket is the staging bucket of file assets of qualifier in t.
func CDKAssetsBucket(qualifier string, t target.Target) string {
	return "cdk-" + qualifier + "-assets-" + t.Account + "-" + t.Region
}

// CDKImageRepository is the ECR repository of image assets of qualifier in t.
func CDKImageRepository(qualifier string, t target.Target) string {
	return "cdk-" + qualifier + "-container-assets-" + t.Account + "-" + t.Region
}

// CDKVersionParameter is the SSM parameter holding the bootstrap version of qualifier.
func CDKVersionParameter(qualifier string) string { return "/cdk-bootstrap/" + qualifier + "/version" }

var qualifierRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,10}$`)

// BootstrapCDK makes in each of places what `cdk bootstrap --qualifier QUALIFIER --trust
// TRUSTED` makes there: the CDKToolkit stack of cdk-bootstrap.yaml (the staging bucket, the
// image repository, the deploy, file-publishing, image-publishing, lookup and cfn-exec
// roles, the version parameter), its roles trusting the place's account and, elsewhere
// than in trusted's own account, trusted (cairn's account, whose deployer assumes them).
// A place bootstrapped before keeps its stack (updated when the qualifier or trust
// changed).
func BootstrapCDK(ctx context.Context, e *awslocal.Emulator, places []target.Target, qualifier, trusted string, timeout time.Duration) error {
	if qualifier == "" {
		qualifier = DefaultCDKQualifier
	}
	if !qualifierRE.MatchString(qualifier) {
		return fmt.Errorf("cdk bootstrap: qualifier %q: use 1 to 10 letters, digits, '-' or '_'", qualifier)
	}
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	for _, t := range places {
		place, err := e.Place(t.Account, t.Region)
		if err != nil {
			return fmt.Errorf("cdk bootstrap %s: %w", t, err)
		}
		place.CloudFormation().SetResourceDelay(CDKToolkitStack, 0)
		cfg, err := e.SetupConfigAt(ctx, t.Account, t.Region)
		if err != nil {
			return fmt.Errorf("cdk bootstrap %s: %w", t, err)
		}
		trust := ""
		if trusted != t.Account {
			trust = trusted
		}
		p := provisioner{e: e, cfn: cloudformation.NewFromConfig(cfg), name: CDKToolkitStack, at: t, params: []cfntypes.Parameter{
			{ParameterKey: aws.String("Qualifier"), ParameterValue: aws.String(qualifier)},
			{ParameterKey: aws.String("TrustedAccounts"), ParameterValue: aws.String(trust)},
		}}
		st, err := p.describe(ctx)
		if err != nil {
			return err
		}
		if st == nil {
			if err := clearLeftovers(ctx, cfg, qualifier, t); err != nil {
				return err
			}
		}
		if _, err := p.stack(ctx, cdkBootstrapTemplate, "", timeout); err != nil {
			return fmt.Errorf("cdk bootstrap %s: %w", t, err)
		}
	}
	return nil
}

// clearLeftovers removes, before the CDKToolkit stack is first made in t, the assets bucket
// and version parameter of qualifier that local mode's own deployment of cairn's stack
// made there without --cdk-bootstrap (bootstrap), which the stack makes now: the objects
// in the bucket are cairn's own template and placeholder code, which Provision uploads
// again.
func clearLeftovers(ctx context.Context, cfg aws.Config, qualifier string, t target.Target) error {
	params := ssm.NewFromConfig(cfg)
	name := CDKVersionParameter(qualifier)
	if _, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)}); err == nil {
		if _, err := params.DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: aws.String(name)}); err != nil {
			return fmt.Errorf("cdk bootstrap %s: remove the version parameter an earlier local up made: %w", t, err)
		}
	}
	c := awsclient.S3(cfg)
	bucket := CDKAssetsBucket(qualifier, t)
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return nil
	}
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}
	for {
		page, err := c.ListObjectVersions(ctx, in)
		if err != nil {
			return fmt.Errorf("cdk bootstrap %s: list the bucket an earlier local up made: %w", t, err)
		}
		for _, v := range page.Versions {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: v.Key, VersionId: v.VersionId}); err != nil {
				return fmt.Errorf("cdk bootstrap %s: empty the bucket an earlier local up made: %w", t, err)
			}
		}
		for _, m := range page.DeleteMarkers {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: m.Key, VersionId: m.VersionId}); err != nil {
				return fmt.Errorf("cdk bootstrap %s: empty the bucket an earlier local up made: %w", t, err)
			}
		}
		if !aws.ToBool(page.IsTruncated) {
			break
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("cdk bootstrap %s: remove the bucket an earlier local up made: %w", t, err)
	}
	return nil
}

// CDKBootstrapTemplate is the template of the CDKToolkit stack BootstrapCDK deploys.
func CDKBootstrapTemplate() string { return cdkBootstrapTemplate }
