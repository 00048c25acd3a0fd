// Package changeset performs a run's actions against CloudFormation and observes what they
// did: it is the only place where the deploy engine talks to CloudFormation.
//
// Every call waits for the run's API budget (a rate limiter) before it is made, and the
// SDK's retryer backs off on throttling; an error that outlasts both becomes an
// Observation with Err set, classified as transient (retried by the run) or permanent
// (the stack fails with the reason), so a run never loops and never dies of "Rate exceeded".
package changeset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
	"github.com/cairn-dev/cairn/internal/template"
)

// MaxTemplateBody is the largest template CloudFormation takes inline (TemplateBody);
// larger ones are uploaded to the bucket and passed by TemplateURL.
const MaxTemplateBody = 51200

// API is the part of *cloudformation.Client the engine uses.
type API interface {
	CreateChangeSet(ctx context.Context, in *cloudformation.CreateChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.CreateChangeSetOutput, error)
	ExecuteChangeSet(ctx context.Context, in *cloudformation.ExecuteChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ExecuteChangeSetOutput, error)
	DeleteChangeSet(ctx context.Context, in *cloudformation.DeleteChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DeleteChangeSetOutput, error)
	DeleteStack(ctx context.Context, in *cloudformation.DeleteStackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DeleteStackOutput, error)
	ContinueUpdateRollback(ctx context.Context, in *cloudformation.ContinueUpdateRollbackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ContinueUpdateRollbackOutput, error)
	UpdateTerminationProtection(ctx context.Context, in *cloudformation.UpdateTerminationProtectionInput, optFns ...func(*cloudformation.Options)) (*cloudformation.UpdateTerminationProtectionOutput, error)
	SetStackPolicy(ctx context.Context, in *cloudformation.SetStackPolicyInput, optFns ...func(*cloudformation.Options)) (*cloudformation.SetStackPolicyOutput, error)
	DescribeChangeSet(ctx context.Context, in *cloudformation.DescribeChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeChangeSetOutput, error)
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	DescribeStackEvents(ctx context.Context, in *cloudformation.DescribeStackEventsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackEventsOutput, error)
	DescribeStackResources(ctx context.Context, in *cloudformation.DescribeStackResourcesInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourcesOutput, error)
	ListImports(ctx context.Context, in *cloudformation.ListImportsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ListImportsOutput, error)
	ListChangeSets(ctx context.Context, in *cloudformation.ListChangeSetsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ListChangeSetsOutput, error)
	DetectStackDrift(ctx context.Context, in *cloudformation.DetectStackDriftInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DetectStackDriftOutput, error)
	DescribeStackDriftDetectionStatus(ctx context.Context, in *cloudformation.DescribeStackDriftDetectionStatusInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackDriftDetectionStatusOutput, error)
	DescribeStackResourceDrifts(ctx context.Context, in *cloudformation.DescribeStackResourceDriftsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourceDriftsOutput, error)
}

// Uploader is the part of *s3.Client that stores large templates.
type Uploader interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// AssetsAPI is the part of *s3.Client that stores artifacts.
type AssetsAPI interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, optFns ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
}

// Assets is where the artifacts of the stacks of one account and region are stored:
// their bucket there and a client reaching it (Lambda and most services read code from
// their own region only).
type Assets struct {
	S3     AssetsAPI
	Bucket string
	// Where names the place in messages ("cairn's bucket", "account 111111111111, eu-west-1").
	Where string
}

// Client performs actions and observations for one run.
type Client struct {
	// CFN is CloudFormation of cairn's own account and region.
	CFN API
	S3  Uploader
	// Assets returns where the artifacts of stacks of t go; nil: stacks cannot name local
	// artifacts.
	Assets func(ctx context.Context, t target.Spec) (*Assets, error)
	// Bucket and Region locate templates/SHA256.json for templates too large to pass inline.
	Bucket, Region string
	// Budget is the run's API budget (awsclient.DefaultBudget) at home; every CloudFormation
	// call waits for it. nil: no limit.
	Budget *rate.Limiter
	// Reach returns CloudFormation of a stack's target and the run's API budget there
	// (CloudFormation throttles per account and region); nil: every stack is at home.
	Reach func(ctx context.Context, t target.Spec) (API, *rate.Limiter, error)
	// Clock paces the budgets: the driver's clock (nil: the wall clock).
	Clock  clock.Clock
	Logger *slog.Logger
}

// Budget is an API budget: Wait blocks until one more call is allowed.
type Budget interface {
	Wait(ctx context.Context) error
}

// At returns CloudFormation of t and the run's budget there, paced on the client's clock.
func (c *Client) At(ctx context.Context, t target.Spec) (API, Budget, error) {
	api, budget := c.CFN, c.Budget
	if c.Reach != nil {
		var err error
		if api, budget, err = c.Reach(ctx, t); err != nil {
			return nil, nil, err
		}
	} else if !t.IsHome() {
		return nil, nil, run.Permanent(fmt.Errorf("this deployer reaches cairn's own account and region only, not region %q, role %q", t.Region, t.RoleARN))
	}
	return api, awsclient.Budget{Limiter: budget, Clock: c.Clock}, nil
}

func (c *Client) log() *slog.Logger {
	if c.Logger == nil {
		return slog.Default()
	}
	return c.Logger
}

// Inputs is what CreateChangeSet needs beyond the action: the stack's template,
// capabilities, tags and stack options; and what ExecuteChangeSet needs: the stack
// policy and DisableRollback.
type Inputs struct {
	TemplateBody []byte
	// Tree, when set, is the template with the bundle templates its nested stacks name:
	// they are uploaded content-addressed and the template sent names them by URL.
	Tree *template.Tree
	// IncludeNested asks for the change sets of the template's nested stacks too.
	IncludeNested bool
	// TemplateURL is used as is when the config names a template_url.
	TemplateURL  string
	Capabilities []string
	Tags         map[string]string
	// NotificationARNs and Rollback go with the change set; for an update, an empty
	// (non-nil) list and an empty configuration clear what the stack had.
	NotificationARNs []string
	Rollback         *cfntypes.RollbackConfiguration
	// StackPolicy, when set, is set on the stack (SetStackPolicy) right before its change
	// set is executed, so it guards that update already.
	StackPolicy string
	// DisableRollback keeps a failed create's resources (ExecuteChangeSet's).
	DisableRollback bool
	// ServiceRole is the CloudFormation service role the change set runs with ("": the
	// caller's rights).
	ServiceRole string
	// DeploymentMode is REVERT_DRIFT for a drift-aware change set (on_drift revert or
	// refuse), "" for an ordinary one.
	DeploymentMode string
}

// Perform makes the call a and returns its result as an observation of a.Stack: Err and
// Permanent when the call failed, the new ids when it succeeded. in is needed by
// CreateChangeSet only.
func (c *Client) Perform(ctx context.Context, a run.Action, in *Inputs) run.Observation {
	o := run.Observation{Stack: a.Stack}
	log := c.log().With("stack", a.Stack, "stack_name", a.StackName, "action", string(a.Kind), "change_set", a.ChangeSetName)
	if !a.Target.IsHome() {
		log = log.With("region", a.Target.Region, "role_arn", a.Target.RoleARN)
	}
	api, budget, err := c.At(ctx, a.Target)
	if err == nil {
		err = budget.Wait(ctx)
	}
	if err == nil {
		err = c.perform(ctx, api, a, in, &o)
	}
	if err != nil {
		// The reason keeps CloudFormation's words only; the log has the SDK's whole error.
		reason := fmt.Errorf("%s %s: %s", a.Kind, a.StackName, awserr.Reason(err))
		// Permanent as AWS answered, or as cairn found it (run.Permanent: a template that
		// does not package, a place without an assets bucket).
		if awserr.Permanent(err) || run.Failure(a.Stack, err).Permanent {
			reason = run.Permanent(reason)
		}
		o = run.Failure(a.Stack, reason)
		log.Warn("changeset: action failed", "err", reason, "permanent", o.Permanent, "detail", err)
		return o
	}
	log.Info("changeset: action performed", "change_set_id", o.ChangeSetID)
	return o
}

func stackRef(a run.Action) *string {
	if a.StackID != "" {
		return aws.String(a.StackID)
	}
	return aws.String(a.StackName)
}

func (c *Client) perform(ctx context.Context, api API, a run.Action, in *Inputs, o *run.Observation) error {
	switch a.Kind {
	case run.CreateChangeSet:
		if in == nil {
			return fmt.Errorf("change set %s: no template given", a.ChangeSetName)
		}
		req := &cloudformation.CreateChangeSetInput{
			StackName:     aws.String(a.StackName),
			ChangeSetName: aws.String(a.ChangeSetName),
			ChangeSetType: cfntypes.ChangeSetType(a.ChangeSetType),
			ClientToken:   aws.String(a.Token),
			Description:   aws.String("cairn " + a.ChangeSetName),
			Parameters:    parameters(a.Parameters),
			Tags:          tags(in.Tags),

			NotificationARNs:      in.NotificationARNs,
			RollbackConfiguration: in.Rollback,
			DeploymentMode:        cfntypes.DeploymentMode(in.DeploymentMode),
		}
		if in.ServiceRole != "" {
			req.RoleARN = aws.String(in.ServiceRole)
		}
		for _, cp := range in.Capabilities {
			req.Capabilities = append(req.Capabilities, cfntypes.Capability(cp))
		}
		if in.IncludeNested {
			req.IncludeNestedStacks = aws.Bool(true)
		}
		body := in.TemplateBody
		if in.Tree != nil {
			var err error
			if body, err = c.packageTree(ctx, a.Target, in.Tree); err != nil {
				return err
			}
		}
		switch {
		case in.TemplateURL != "":
			req.TemplateURL = aws.String(in.TemplateURL)
		case len(body) > MaxTemplateBody:
			u, err := c.upload(ctx, body)
			if err != nil {
				return err
			}
			req.TemplateURL = aws.String(u)
		default:
			req.TemplateBody = aws.String(string(body))
		}
		out, err := api.CreateChangeSet(ctx, req)
		if awserr.ErrorCode(err) == "AlreadyExistsException" {
			// The change set is named after the run and step: it is ours, from an
			// attempt whose answer was lost. Describing it tells the rest.
			return nil
		}
		if err != nil {
			return err
		}
		o.ChangeSetID, o.StackID = aws.ToString(out.Id), aws.ToString(out.StackId)
	case run.ExecuteChangeSet:
		req := &cloudformation.ExecuteChangeSetInput{ChangeSetName: aws.String(a.ChangeSetName), StackName: aws.String(a.StackName), ClientRequestToken: aws.String(a.Token)}
		if a.ChangeSetID != "" {
			req.ChangeSetName, req.StackName = aws.String(a.ChangeSetID), nil
		}
		if in != nil && in.StackPolicy != "" {
			// Idempotent: set again when the execution is retried.
			if _, err := api.SetStackPolicy(ctx, &cloudformation.SetStackPolicyInput{StackName: stackRef(a), StackPolicyBody: aws.String(in.StackPolicy)}); err != nil {
				return fmt.Errorf("set the stack policy before executing %s: %w", a.ChangeSetName, err)
			}
		}
		if in != nil && in.DisableRollback {
			req.DisableRollback = aws.Bool(true)
		}
		_, err := api.ExecuteChangeSet(ctx, req)
		if awserr.ErrorCode(err) == "InvalidChangeSetStatus" && alreadyExecuted(err) {
			return nil // an earlier attempt executed it; the stack's status tells the rest
		}
		return err
	case run.DeleteChangeSet:
		req := &cloudformation.DeleteChangeSetInput{ChangeSetName: aws.String(a.ChangeSetName), StackName: aws.String(a.StackName)}
		if a.ChangeSetID != "" {
			req.ChangeSetName, req.StackName = aws.String(a.ChangeSetID), nil
		}
		_, err := api.DeleteChangeSet(ctx, req)
		if awserr.ChangeSetMissing(err) {
			return nil
		}
		return err
	case run.DeleteStack:
		_, err := api.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: stackRef(a), ClientRequestToken: tokenOr(a), RetainResources: a.Retain})
		return err
	case run.ContinueUpdateRollback:
		_, err := api.ContinueUpdateRollback(ctx, &cloudformation.ContinueUpdateRollbackInput{StackName: stackRef(a), ClientRequestToken: tokenOr(a)})
		return err
	case run.DetectStackDrift:
		out, err := api.DetectStackDrift(ctx, &cloudformation.DetectStackDriftInput{StackName: stackRef(a)})
		if err != nil {
			return err
		}
		o.DriftDetectionID = aws.ToString(out.StackDriftDetectionId)
		return nil
	case run.SetTerminationProtection:
		_, err := api.UpdateTerminationProtection(ctx, &cloudformation.UpdateTerminationProtectionInput{StackName: stackRef(a), EnableTerminationProtection: aws.Bool(a.Protect)})
		if err != nil {
			return fmt.Errorf("set termination protection to %v: %w", a.Protect, err)
		}
		return nil
	default:
		return fmt.Errorf("unknown action %q", a.Kind)
	}
	return nil
}

func tokenOr(a run.Action) *string {
	if a.Token == "" {
		return nil
	}
	return aws.String(a.Token)
}

func alreadyExecuted(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "EXECUTE_IN_PROGRESS") || strings.Contains(msg, "EXECUTE_COMPLETE")
}

// upload stores a large template content-addressed and returns its URL.
func (c *Client) upload(ctx context.Context, body []byte) (string, error) {
	if c.S3 == nil || c.Bucket == "" {
		return "", fmt.Errorf("template is %d bytes, more than %d, and no bucket is configured to upload it to", len(body), MaxTemplateBody)
	}
	sum := sha256.Sum256(body)
	return c.put(ctx, hex.EncodeToString(sum[:]), body)
}

// put stores a template at templates/SHA256.json and returns its URL.
func (c *Client) put(ctx context.Context, sha string, body []byte) (string, error) {
	key := bucket.TemplateKey(sha)
	if _, err := objects.Put(ctx, c.S3, c.Bucket, key, body, objects.Write{ContentType: "application/json"}); err != nil {
		return "", fmt.Errorf("upload template: %w", err)
	}
	return c.templateURL(sha), nil
}

func (c *Client) templateURL(sha string) string {
	region := c.Region
	if region == "" {
		region = "us-east-1"
	}
	return fmt.Sprintf("https://%s.s3.%s.amazonaws.com/%s", c.Bucket, region, bucket.TemplateKey(sha))
}

// packageTree packages a template as `aws cloudformation package` does: its artifacts
// stored in the assets bucket of the stack's place, the bundle templates of its nested
// stacks in cairn's bucket (deepest first), and returns the template naming them by their
// S3 locations.
func (c *Client) packageTree(ctx context.Context, t target.Spec, tree *template.Tree) ([]byte, error) {
	var store *Assets
	bucketName := ""
	if hasAssets(tree) {
		if c.Assets == nil {
			return nil, run.Permanent(fmt.Errorf("the template names local artifacts, and no assets bucket is configured to store them in"))
		}
		var err error
		if store, err = c.Assets(ctx, t); err != nil {
			return nil, err
		}
		bucketName = store.Bucket
	}
	p, err := tree.Package(c.templateURL, bucketName)
	if err != nil {
		return nil, run.Permanent(err)
	}
	if len(p.Assets) > 0 {
		if err := c.storeAssets(ctx, store, tree.Assets, p.Assets); err != nil {
			return nil, err
		}
	}
	if len(p.Templates) > 0 && (c.S3 == nil || c.Bucket == "") {
		return nil, fmt.Errorf("the template's nested stacks name templates of the bundle, and no bucket is configured to upload them to")
	}
	for _, u := range p.Templates {
		if _, err := c.put(ctx, u.SHA256, u.Body); err != nil {
			return nil, fmt.Errorf("nested stack template: %w", err)
		}
	}
	return p.Body, nil
}

func hasAssets(t *template.Tree) bool {
	seen := map[*template.Tree]bool{}
	var walk func(*template.Tree) bool
	walk = func(n *template.Tree) bool {
		if seen[n] {
			return false
		}
		seen[n] = true
		if len(n.Template.Artifacts()) > 0 {
			return true
		}
		for _, c := range n.Children {
			if walk(c) {
				return true
			}
		}
		return false
	}
	return walk(t)
}

// storeAssets makes sure each artifact is in the store: an object already there (the same
// key is the same content) is left alone, or written again (a copy onto itself) when older
// than bucket.AssetsRefreshAfter, so the assets' lifecycle never expires what stacks keep
// being deployed with; a missing one is built and uploaded.
func (c *Client) storeAssets(ctx context.Context, store *Assets, set *artifact.Set, assets []template.Asset) error {
	log := c.log()
	for _, a := range assets {
		head, err := store.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(a.Key)})
		if err != nil && !awserr.NotFound(err) {
			return fmt.Errorf("look for artifact %s (s3://%s/%s, %s): %w", a.Source.Path, store.Bucket, a.Key, store.Where, err)
		}
		if err == nil {
			// The key names the content: an object holding anything else (written by
			// another hand) is never used, but written again with the right content.
			held, err := holds(ctx, store, a)
			if err != nil {
				return fmt.Errorf("verify artifact %s (s3://%s/%s, %s): %w", a.Source.Path, store.Bucket, a.Key, store.Where, err)
			}
			if held {
				if age := c.now().Sub(aws.ToTime(head.LastModified)); age > bucket.AssetsRefreshAfter {
					_, err := store.S3.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(a.Key),
						CopySource: aws.String(store.Bucket + "/" + a.Key), MetadataDirective: s3types.MetadataDirectiveReplace,
						Metadata: map[string]string{"cairn-source": a.Source.Path}})
					if err != nil {
						return fmt.Errorf("refresh artifact %s (s3://%s/%s, %s): %w", a.Source.Path, store.Bucket, a.Key, store.Where, err)
					}
					log.Info("changeset: artifact refreshed", "artifact", a.Source.Path, "key", a.Key, "bucket", store.Bucket)
				}
				continue
			}
			log.Warn("changeset: artifact did not hold the content its key names; it is written again", "artifact", a.Source.Path, "key", a.Key, "bucket", store.Bucket)
		}
		if err := c.uploadAsset(ctx, store, set, a); err != nil {
			return err
		}
		log.Info("changeset: artifact stored", "artifact", a.Source.Path, "key", a.Key, "bucket", store.Bucket, "bytes", a.Digest.Size)
	}
	return nil
}

// holds reports whether the object of artifact a in store has the sha256 its key names.
func holds(ctx context.Context, store *Assets, a template.Asset) (bool, error) {
	sha, ok := bucket.ContentAddressed(a.Key)
	if !ok {
		return false, fmt.Errorf("%s is not a content-addressed key", a.Key)
	}
	out, err := store.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(a.Key)})
	if err != nil {
		return false, err
	}
	defer out.Body.Close()
	got, err := objects.SHA256(out.Body)
	return got == sha, err
}

func (c *Client) uploadAsset(ctx context.Context, store *Assets, set *artifact.Set, a template.Asset) error {
	o, err := set.Build(a.Source, a.Digest)
	if err != nil {
		return run.Permanent(err)
	}
	defer o.Close()
	body, err := o.Body()
	if err != nil {
		return err
	}
	contentType := "application/zip"
	if a.Digest.Ext != "zip" {
		contentType = "application/octet-stream"
	}
	_, err = store.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(a.Key), Body: body,
		ContentLength: aws.Int64(o.Size), ContentType: aws.String(contentType), Metadata: map[string]string{"cairn-source": a.Source.Path}})
	if awserr.ErrorCode(err) == "NoSuchBucket" {
		return run.Permanent(fmt.Errorf("store artifact %s: the assets bucket %s does not exist (%s): %s", a.Source.Path, store.Bucket, store.Where, MissingAssetsBucketFix))
	}
	if err != nil {
		return fmt.Errorf("store artifact %s (s3://%s/%s, %s): %w", a.Source.Path, store.Bucket, a.Key, store.Where, err)
	}
	return nil
}

// MissingAssetsBucketFix says how a place gets its assets bucket.
const MissingAssetsBucketFix = "stacks outside cairn's own account and region store their artifacts in the assets bucket of infra's target stack there: add ACCOUNT:REGION to the CDK context cairn:targets and deploy cairn again (make deploy CDK_FLAGS=--all)"

func (c *Client) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock.Now()
}

func parameters(m map[string]string) []cfntypes.Parameter {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]cfntypes.Parameter, 0, len(keys))
	for _, k := range keys {
		out = append(out, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(m[k])})
	}
	return out
}

func tags(m map[string]string) []cfntypes.Tag {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]cfntypes.Tag, 0, len(keys))
	for _, k := range keys {
		if m[k] == "" {
			continue // CloudFormation refuses empty tag values
		}
		out = append(out, cfntypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// Importers returns, for each export name of t's account and region, the stacks there
// importing it (ListImports, all pages). An export nobody imports is absent.
func (c *Client) Importers(ctx context.Context, t target.Spec, exports []string) (map[string][]string, error) {
	out := map[string][]string{}
	api, budget, err := c.At(ctx, t)
	if err != nil && len(exports) > 0 {
		return nil, err
	}
	for _, exp := range exports {
		in := &cloudformation.ListImportsInput{ExportName: aws.String(exp)}
		for {
			if err := budget.Wait(ctx); err != nil {
				return nil, err
			}
			page, err := api.ListImports(ctx, in)
			if err != nil {
				if awserr.ErrorCode(err) == "ValidationError" && strings.Contains(err.Error(), "not imported") {
					break
				}
				return nil, fmt.Errorf("list imports of export %s: %w", exp, err)
			}
			out[exp] = append(out[exp], page.Imports...)
			if aws.ToString(page.NextToken) == "" {
				break
			}
			in.NextToken = page.NextToken
		}
		sort.Strings(out[exp])
		if len(out[exp]) == 0 {
			delete(out, exp)
		}
	}
	return out, nil
}
