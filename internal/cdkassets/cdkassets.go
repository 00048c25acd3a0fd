// Package cdkassets does, for the stacks of a CDK cloud assembly, what the CDK CLI does
// before it deploys them, from cairn's deployer: it verifies each environment's bootstrap
// version (with the CLI's own message), checks that every Docker image asset is already in
// its repository and that every asset cairn cannot build (an image, a file an executable
// produces) is already published, and publishes the missing file assets as cdk-assets
// does — to the bucket and key each destination names, through the role it names, only
// when the object is not there already (the key is the asset's content hash).
//
// Images cannot be built in a Lambda function, so a missing one stops the deployment
// before any CloudFormation call, naming the asset and the command that publishes it.
package cdkassets

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	ecrtypes "github.com/aws/aws-sdk-go-v2/service/ecr/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"golang.org/x/sync/errgroup"

	"github.com/cairn-dev/cairn/internal/access"
	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/assembly"
	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/target"
)

// S3API is the part of *s3.Client publishing file assets uses.
type S3API interface {
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// ECRAPI is the part of *ecr.Client checking image assets uses.
type ECRAPI interface {
	DescribeImages(ctx context.Context, in *ecr.DescribeImagesInput, optFns ...func(*ecr.Options)) (*ecr.DescribeImagesOutput, error)
}

// SSMAPI is the part of *ssm.Client reading the bootstrap version uses.
type SSMAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// Clients gives the clients of a region reached through a role (target.Spec's Region,
// RoleARN and ExternalID; an empty role is the caller's own credentials).
type Clients interface {
	S3(spec target.Spec) S3API
	ECR(spec target.Spec) ECRAPI
	SSM(spec target.Spec) SSMAPI
}

// FromConfig makes Clients from the SDK configuration of each spec (access.Reacher.Config
// of the run), one client per spec and service.
func FromConfig(config func(target.Spec) aws.Config) Clients {
	return &sdkClients{config: config, made: map[string]any{}}
}

type sdkClients struct {
	config func(target.Spec) aws.Config
	mu     sync.Mutex
	made   map[string]any
}

func (c *sdkClients) client(kind string, spec target.Spec, make func(aws.Config) any) any {
	key := kind + "|" + spec.Region + "|" + spec.RoleARN + "|" + spec.ExternalID
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.made[key]; ok {
		return v
	}
	v := make(c.config(spec))
	c.made[key] = v
	return v
}

func (c *sdkClients) S3(spec target.Spec) S3API {
	return c.client("s3", spec, func(cfg aws.Config) any { return awsclient.S3(cfg) }).(S3API)
}

func (c *sdkClients) ECR(spec target.Spec) ECRAPI {
	return c.client("ecr", spec, func(cfg aws.Config) any { return ecr.NewFromConfig(cfg) }).(ECRAPI)
}

func (c *sdkClients) SSM(spec target.Spec) SSMAPI {
	return c.client("ssm", spec, func(cfg aws.Config) any { return ssm.NewFromConfig(cfg) }).(SSMAPI)
}

// Stack is a stack of the assembly as a run deploys it.
type Stack struct {
	// Name is the stack's name in cairn (the assembly's display name, Dev/Service).
	Name string
	// Assembly is the assembly's stack: its assets and bootstrap needs.
	Assembly *assembly.Stack
	// Account and Region are where it deploys, for the assembly's placeholders.
	Account, Region string
	// Target is how the deployer reaches it: its bootstrap version is read through it.
	Target target.Spec
	// Where names the place in messages ("111111111111, eu-west-1").
	Where string
}

// Publisher checks and publishes the assets of a run's assembly stacks.
type Publisher struct {
	Clients Clients
	// Own is cairn's bucket: no asset is ever published there (Destinations).
	Own string
	// Trust is cairn's account, which an environment's bootstrap must trust (cdk bootstrap
	// --trust): named in the message of an environment not bootstrapped.
	Trust string
	// Concurrency bounds the assets looked at or uploaded at once (default 8).
	Concurrency int
	Logger      *slog.Logger
}

func (p *Publisher) log() *slog.Logger {
	if p.Logger == nil {
		return slog.Default()
	}
	return p.Logger
}

// Problems is what stops a deployment before any CloudFormation call: each entry says what
// is missing where, and how to fix it.
type Problems []string

func (ps Problems) Error() string { return strings.Join(ps, "; ") }

// fileJob is one file asset at one resolved destination.
type fileJob struct {
	stack   string
	env     string // the stack's environment, aws://ACCOUNT/REGION
	account string // the stack's
	publish string // the command publishing it
	files   *artifact.Set
	asset   assembly.FileAsset
	dest    assembly.Destination
}

// imageJob is one image asset at one resolved destination.
type imageJob struct {
	stack   string
	env     string // the stack's environment, aws://ACCOUNT/REGION
	publish string // the command publishing it
	asset   assembly.ImageAsset
	dest    assembly.Destination
}

func spec(d assembly.Destination) target.Spec {
	return target.Spec{Region: d.Region, RoleARN: d.RoleARN, ExternalID: d.ExternalID}
}

// Prepare makes the stacks deployable as `cdk deploy` would before it touches
// CloudFormation: every problem it finds is returned as Problems (nothing is published
// then); an error is a failure of AWS itself (throttling past retries, a service error),
// worth trying again.
func (p *Publisher) Prepare(ctx context.Context, stacks []Stack) error {
	var files []fileJob
	var images []imageJob
	seenFile, seenImage := map[string]bool{}, map[string]bool{}
	for _, s := range stacks {
		for _, a := range s.Assembly.Files {
			for _, d := range a.Destinations {
				d = d.Resolve(s.Account, s.Region)
				if k := d.Bucket + "/" + d.Key + "|" + d.Region; !seenFile[k] {
					seenFile[k] = true
					files = append(files, fileJob{stack: s.Name, env: env(s), account: s.Account, files: s.Assembly.Bundle, asset: a, dest: d,
						publish: assembly.PublishCommand(s.Assembly.Dir, a.Manifest, a.ID)})
				}
			}
		}
		for _, a := range s.Assembly.Images {
			for _, d := range a.Destinations {
				d = d.Resolve(s.Account, s.Region)
				if k := d.Repository + ":" + d.Tag + "|" + d.Region + "|" + d.RoleARN; !seenImage[k] {
					seenImage[k] = true
					images = append(images, imageJob{stack: s.Name, env: env(s), asset: a, dest: d,
						publish: assembly.PublishCommand(s.Assembly.Dir, a.Manifest, a.ID)})
				}
			}
		}
	}
	problems := environments(stacks)
	if len(problems) > 0 {
		return problems // where the stacks go is wrong: nothing there is worth reading
	}
	if problems := p.destinations(files); len(problems) > 0 {
		return problems // nothing is looked at, nothing published
	}
	problems, bare, err := p.bootstrap(ctx, stacks)
	if err != nil {
		return err
	}
	// The assets of an environment not bootstrapped are not looked for: its bucket,
	// repository and publishing roles are what the bootstrap makes, so each would only
	// repeat that they are missing.
	files = slices.DeleteFunc(files, func(j fileJob) bool { return bare[j.env] })
	images = slices.DeleteFunc(images, func(j imageJob) bool { return bare[j.env] })
	more, err := p.images(ctx, images)
	if err != nil {
		return err
	}
	problems = append(problems, more...)
	missing, more, err := p.missingFiles(ctx, files)
	if err != nil {
		return err
	}
	problems = append(problems, more...)
	if len(problems) > 0 {
		return problems
	}
	return p.upload(ctx, missing)
}

// environments reports the stacks cairn would deploy elsewhere than the environment the
// app synthesized them for (a role_arn of cairn.yaml naming another account, a stack left
// without its role): their templates name that environment's bootstrap resources.
func environments(stacks []Stack) Problems {
	var out Problems
	for _, s := range stacks {
		a := s.Assembly
		if (a.Account != "" && a.Account != s.Account) || (a.Region != "" && a.Region != s.Region) {
			out = append(out, fmt.Sprintf("stack %s: the app synthesized it for aws://%s/%s, but it would deploy to account %s in %s: deploy it through that environment's role (role_arn), or synthesize the app for this one",
				s.Name, cmp.Or(a.Account, "unknown-account"), cmp.Or(a.Region, "unknown-region"), s.Account, s.Region))
		}
	}
	return out
}

// destinations refuses every file destination cairn will not write to: a manifest is the
// bundle's, and whoever may upload a bundle (a pull request's plan job) must not make the
// deployer write where it says with credentials of cairn's. A file asset is published
// only through the role its destination names (the bootstrap's file-publishing role), of
// the account the stack deploys to, never one of cairn's own roles nor the deployer's own
// credentials, and never into cairn's bucket or a target's assets bucket.
func (p *Publisher) destinations(jobs []fileJob) Problems {
	var out Problems
	for _, j := range jobs {
		if problem := Destination(j.dest, j.account, p.Own); problem != "" {
			out = append(out, fmt.Sprintf("file asset %s of stack %s: %s", j.asset.Label(), j.stack, problem))
		}
	}
	return out
}

// Destination is why cairn will not publish a file asset to d (resolved) for a stack of
// account, with cairn's bucket own; "" when it will.
func Destination(d assembly.Destination, account, own string) string {
	where := "s3://" + d.Bucket + "/" + d.Key
	switch {
	case d.Bucket == "" || d.Bucket == own || strings.HasPrefix(d.Bucket, target.AssetsBucketPrefix):
		return fmt.Sprintf("its destination %s is a bucket of cairn's own: cairn publishes an asset only to the staging bucket of the environment's CDK bootstrap; synthesize the app with the default synthesizer (cdk bootstrap)", where)
	case d.RoleARN == "":
		return fmt.Sprintf("its destination %s names no role to publish it with (assumeRoleArn): cairn publishes assets only through the file-publishing role the manifest names, never with its own credentials; synthesize the app with the default synthesizer (cdk bootstrap)", where)
	}
	m := target.RoleARNPattern().FindStringSubmatch(d.RoleARN)
	switch {
	case m == nil:
		return fmt.Sprintf("its destination %s names the role %q, which is no IAM role ARN", where, d.RoleARN)
	case m[1] != account:
		return fmt.Sprintf("its destination %s names the role %s of account %s, but the stack deploys to account %s: publish through that environment's own file-publishing role", where, d.RoleARN, m[1], account)
	case strings.HasPrefix(d.RoleARN[strings.LastIndex(d.RoleARN, "/")+1:], "cairn-"):
		return fmt.Sprintf("its destination %s names %s, a role of cairn's own: publish through the environment's CDK file-publishing role (cdk bootstrap)", where, d.RoleARN)
	}
	return ""
}

// env is where a stack deploys, as the CDK names an environment: aws://ACCOUNT/REGION.
func env(s Stack) string { return "aws://" + s.Account + "/" + s.Region }

// NotBootstrappedPhrase begins the message of an environment without the CDK bootstrap
// (run.NextStep recognizes it).
const NotBootstrappedPhrase = "is not bootstrapped for the CDK"

// bootstrap verifies each environment's bootstrap version, read once per place and
// parameter through the first stack's target there, as the CDK CLI does
// (validateVersion): CDK's own messages for a version too old. An environment whose
// version parameter does not exist, or whose deploy role (the bootstrap's, which the
// stacks' targets name) cannot be assumed, is not bootstrapped: one message for it, naming
// the environment, its stacks and the commands that bootstrap it; bare holds those
// environments.
func (p *Publisher) bootstrap(ctx context.Context, stacks []Stack) (problems Problems, bare map[string]bool, err error) {
	type key struct{ account, region, parameter string }
	need := map[key]int{}
	via := map[key]Stack{}
	names := map[key][]string{}
	for _, s := range stacks {
		b := s.Assembly.Bootstrap
		if b.Version == 0 || b.Parameter == "" {
			continue
		}
		k := key{s.Account, s.Region, b.Parameter}
		if b.Version > need[k] {
			need[k] = b.Version
		}
		if _, ok := via[k]; !ok {
			via[k] = s
		}
		names[k] = append(names[k], s.Name)
	}
	bare = map[string]bool{}
	for _, k := range slices.SortedFunc(maps.Keys(need), func(a, b key) int {
		return cmp.Or(strings.Compare(a.account, b.account), strings.Compare(a.region, b.region), strings.Compare(a.parameter, b.parameter))
	}) {
		s, want := via[k], need[k]
		out, err := p.Clients.SSM(s.Target).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(k.parameter), WithDecryption: aws.Bool(true)})
		var problem, missing string
		var refused *access.Refused
		switch {
		case awserr.ErrorCode(err) == "ParameterNotFound":
			missing = fmt.Sprintf("its SSM parameter %s does not exist", k.parameter)
		case err != nil && errors.As(err, &refused):
			missing = fmt.Sprintf("its deploy role %s cannot be assumed, so it does not exist or does not trust cairn's account (%s)", s.Target.RoleARN, awserr.Message(refused.Unwrap()))
		case err != nil && !permanent(err):
			return nil, nil, fmt.Errorf("read the bootstrap version %s (%s): %w", k.parameter, s.Where, err)
		case err != nil:
			problem = fmt.Sprintf("This CDK deployment requires bootstrap stack version '%d', but during the confirmation via SSM parameter %s the following error occurred: %s", want, k.parameter, message(err))
		default:
			v, cerr := strconv.Atoi(aws.ToString(out.Parameter.Value))
			switch {
			case cerr != nil:
				problem = fmt.Sprintf("SSM parameter %s not a number: %s", k.parameter, aws.ToString(out.Parameter.Value))
			case v < want:
				problem = fmt.Sprintf("This CDK deployment requires bootstrap stack version '%d', found '%d'. Please run 'cdk bootstrap'.", want, v)
			}
		}
		if missing != "" {
			e := env(s)
			bare[e] = true
			problems = append(problems, p.notBootstrapped(e, k.account, k.region, k.parameter, names[k], missing))
			continue
		}
		if problem != "" {
			problems = append(problems, fmt.Sprintf("stack %s (%s): %s", s.Name, s.Where, problem))
		}
	}
	return problems, bare, nil
}

// notBootstrapped is the message of an environment without the CDK bootstrap: what shows
// it, and the two ways to bootstrap it (in AWS, and in cairn's local emulator).
func (p *Publisher) notBootstrapped(env, account, region, parameter string, stacks []string, missing string) string {
	trust, qualifier, local := "", "", "cairn local up --cdk-bootstrap"
	if p.Trust != "" {
		trust = " --trust " + p.Trust
	}
	if q := strings.TrimSuffix(strings.TrimPrefix(parameter, "/cdk-bootstrap/"), "/version"); q != parameter && q != "hnb659fds" {
		qualifier = " --qualifier " + q
		local += " --cdk-qualifier " + q
	}
	if p.Trust != "" && account != p.Trust {
		local += " --targets " + account + ":" + region
	}
	label := "stack"
	if len(stacks) > 1 {
		label = "stacks"
	}
	return fmt.Sprintf("environment %s %s (%s %s: %s): bootstrap it with `cdk bootstrap %s%s%s`, or, against cairn's local emulator, start it with `%s`",
		env, NotBootstrappedPhrase, label, strings.Join(stacks, ", "), missing, env, trust, qualifier, local)
}

// images checks each image asset is in its repository under its tag.
func (p *Publisher) images(ctx context.Context, jobs []imageJob) (Problems, error) {
	results := make([]string, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.concurrency())
	for i, j := range jobs {
		g.Go(func() error {
			_, err := p.Clients.ECR(spec(j.dest)).DescribeImages(gctx, &ecr.DescribeImagesInput{
				RepositoryName: aws.String(j.dest.Repository), ImageIds: []ecrtypes.ImageIdentifier{{ImageTag: aws.String(j.dest.Tag)}},
			})
			switch code := awserr.ErrorCode(err); {
			case err == nil:
				return nil
			case code == "ImageNotFoundException":
				results[i] = fmt.Sprintf("image asset %s of stack %s is not in ECR repository %s (%s) with tag %s: cairn does not build Docker images; publish it before the push, in CI: %s (or cdk publish-assets %s in the app)",
					j.asset.Label(), j.stack, j.dest.Repository, j.dest.Region, j.dest.Tag, j.publish, j.stack)
			case code == "RepositoryNotFoundException":
				results[i] = fmt.Sprintf("image asset %s of stack %s: ECR repository %s does not exist in %s: has the environment been bootstrapped? Please run 'cdk bootstrap', then publish the image: %s",
					j.asset.Label(), j.stack, j.dest.Repository, j.dest.Region, j.publish)
			case permanent(err):
				results[i] = fmt.Sprintf("image asset %s of stack %s: cannot look for it in ECR repository %s (%s): %s", j.asset.Label(), j.stack, j.dest.Repository, j.dest.Region, message(err))
			default:
				return fmt.Errorf("look for image asset %s in %s: %w", j.asset.Label(), j.dest.Repository, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return compact(results), nil
}

// missingFiles looks for each file asset at its destination and returns those to upload;
// one cairn cannot build (an executable's output) and that is missing is a problem.
func (p *Publisher) missingFiles(ctx context.Context, jobs []fileJob) ([]fileJob, Problems, error) {
	missing := make([]bool, len(jobs))
	results := make([]string, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.concurrency())
	for i, j := range jobs {
		g.Go(func() error {
			_, err := p.Clients.S3(spec(j.dest)).HeadObject(gctx, &s3.HeadObjectInput{Bucket: aws.String(j.dest.Bucket), Key: aws.String(j.dest.Key),
				ExpectedBucketOwner: aws.String(j.account)})
			switch {
			case err == nil:
				return nil
			case awserr.ErrorCode(err) == "NoSuchBucket":
				results[i] = fmt.Sprintf("file asset %s of stack %s: bucket %s does not exist in %s: has the environment been bootstrapped? Please run 'cdk bootstrap'", j.asset.Label(), j.stack, j.dest.Bucket, j.dest.Region)
			case awserr.NotFound(err) && len(j.asset.Executable) > 0:
				results[i] = fmt.Sprintf("file asset %s of stack %s is made by a command (%s), which cairn does not run, and is not at s3://%s/%s: publish it before the push, in CI: %s",
					j.asset.Label(), j.stack, strings.Join(j.asset.Executable, " "), j.dest.Bucket, j.dest.Key, j.publish)
			case awserr.NotFound(err):
				missing[i] = true
			case permanent(err):
				results[i] = fmt.Sprintf("file asset %s of stack %s: cannot look for s3://%s/%s (%s): %s", j.asset.Label(), j.stack, j.dest.Bucket, j.dest.Key, j.dest.Region, message(err))
			default:
				return fmt.Errorf("look for file asset %s at s3://%s/%s: %w", j.asset.Label(), j.dest.Bucket, j.dest.Key, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	var out []fileJob
	for i, j := range jobs {
		if missing[i] {
			out = append(out, j)
		}
	}
	return out, compact(results), nil
}

// upload builds and uploads each missing file asset: a folder zipped (deterministically,
// see artifact), a file as it is.
func (p *Publisher) upload(ctx context.Context, jobs []fileJob) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.concurrency())
	var mu sync.Mutex
	var problems Problems
	for _, j := range jobs {
		g.Go(func() error {
			o, err := j.files.Build(artifact.Source{Path: j.asset.Source, Zip: j.asset.Zip}, artifact.Digest{})
			if err != nil {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("file asset %s of stack %s: %v", j.asset.Label(), j.stack, err))
				mu.Unlock()
				return nil
			}
			defer o.Close()
			body, err := o.Body()
			if err != nil {
				return err
			}
			contentType := "application/octet-stream"
			if j.asset.Zip {
				contentType = "application/zip"
			} else if strings.HasSuffix(j.dest.Key, ".json") {
				contentType = "application/json"
			}
			_, err = p.Clients.S3(spec(j.dest)).PutObject(gctx, &s3.PutObjectInput{Bucket: aws.String(j.dest.Bucket), Key: aws.String(j.dest.Key), ExpectedBucketOwner: aws.String(j.account),
				Body: body, ContentLength: aws.Int64(o.Size), ContentType: aws.String(contentType)})
			if err != nil {
				if permanent(err) {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("file asset %s of stack %s: cannot upload it to s3://%s/%s (%s): %s", j.asset.Label(), j.stack, j.dest.Bucket, j.dest.Key, j.dest.Region, message(err)))
					mu.Unlock()
					return nil
				}
				return fmt.Errorf("upload file asset %s to s3://%s/%s: %w", j.asset.Label(), j.dest.Bucket, j.dest.Key, err)
			}
			p.log().Info("cdkassets: file asset published", "stack", j.stack, "asset", j.asset.ID, "bucket", j.dest.Bucket, "key", j.dest.Key, "bytes", o.Size)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return problems
	}
	return nil
}

func (p *Publisher) concurrency() int {
	if p.Concurrency > 0 {
		return p.Concurrency
	}
	return 8
}

func compact(results []string) Problems {
	var out Problems
	for _, r := range results {
		if r != "" {
			out = append(out, r)
		}
	}
	return out
}

// permanent reports an answer that asking again cannot change: AWS's permanent errors,
// and a role that cannot be assumed (access.Refused wraps STS's answer).
func permanent(err error) bool { return awserr.Permanent(err) }

// message is an AWS error as a person reads it; a role that cannot be assumed says so
// (access.Refused).
func message(err error) string {
	var refused *access.Refused
	if errors.As(err, &refused) {
		return refused.Error()
	}
	return awserr.Message(err)
}
