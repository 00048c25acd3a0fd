package localcairn

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/target"
)

// goldenName is the synthesized template's file; infra's TestGoldenTemplate fails when it
// differs from what infra/ synthesizes with cdk.json's context, and `make synth` rewrites it.
const goldenName = "internal/localcairn/cairn.template.json"

//go:embed cairn.template.json
var golden []byte

// What `cdk bootstrap` makes, which the synthesized template relies on: the bootstrap
// version parameter its BootstrapVersion parameter reads, and the assets bucket `cdk deploy`
// uploads the template to.
var bootstrapParameter = CDKVersionParameter(DefaultCDKQualifier)

const bootstrapVersion = "30"

// Template returns the synthesized template with local mode's context values in the places
// the CDK puts them (as `cdk synth -c cairn:...=...` would): the functions' CAIRN_NAMESPACES
// and CAIRN_PORT_POOLS, the drift schedule's expression, and the stack-id prefixes the event
// rules select.
func Template(o Options) (string, error) {
	o = o.withDefaults()
	var doc map[string]any
	if err := json.Unmarshal(golden, &doc); err != nil {
		return "", fmt.Errorf("%s is not JSON: %v (run make synth)", goldenName, err)
	}
	resources, _ := doc["Resources"].(map[string]any)
	var functions, schedules, rules int
	for id, v := range resources {
		r, _ := v.(map[string]any)
		props, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::Lambda::Function":
			vars, _ := dig(props, "Environment", "Variables").(map[string]any)
			if vars == nil {
				return "", fmt.Errorf("%s: function %s has no environment", goldenName, id)
			}
			vars["CAIRN_NAMESPACES"] = strings.Join(o.Namespaces, ",")
			vars["CAIRN_PORT_POOLS"] = o.PortPools
			if _, ok := vars["CAIRN_SSM_PATHS"]; ok {
				vars["CAIRN_SSM_PATHS"] = ssmPaths(o.Namespaces).Env()
			}
			functions++
		case "AWS::Events::Rule":
			if _, ok := props["ScheduleExpression"]; ok {
				props["ScheduleExpression"] = o.DriftSchedule
				schedules++
			}
			detail, _ := dig(props, "EventPattern", "detail").(map[string]any)
			if detail == nil {
				continue
			}
			prefixes, _ := detail["stack-id"].([]any)
			if len(prefixes) == 0 {
				return "", fmt.Errorf("%s: rule %s selects no stack ids", goldenName, id)
			}
			var out []any
			for _, ns := range o.Namespaces {
				p, err := withNamespace(prefixes[0], ns)
				if err != nil {
					return "", fmt.Errorf("%s: rule %s: %w", goldenName, id, err)
				}
				out = append(out, p)
			}
			if len(o.Namespaces) == 0 {
				// Every namespace: every stack but cairn's own.
				p, err := everyStackBut(prefixes[0], StackName)
				if err != nil {
					return "", fmt.Errorf("%s: rule %s: %w", goldenName, id, err)
				}
				out = append(out, p)
			}
			detail["stack-id"] = out
			rules++
		}
	}
	if functions != 4 || schedules != 1 || rules != 2 {
		return "", fmt.Errorf("%s has %d functions, %d schedules and %d stack-event rules; local mode expects 4, 1 and 2: update internal/localcairn with infra/stack.go", goldenName, functions, schedules, rules)
	}
	if err := addTargets(doc, o); err != nil {
		return "", err
	}
	b, err := json.Marshal(doc)
	return string(b), err
}

// ssmPaths are the Parameter Store paths of each namespace as the CDK context's default
// makes them (/NAMESPACE/*), or nil, every name, when local mode allows every namespace.
func ssmPaths(namespaces []string) config.SSMPaths {
	if len(namespaces) == 0 {
		return nil
	}
	p := config.SSMPaths{}
	for _, ns := range namespaces {
		p[ns] = []string{"/" + ns + "/*"}
	}
	return p
}

// withNamespace copies a stack-id prefix matcher, {"prefix": {"Fn::Join": ["", [...,
// ":stack/NS-"]]}}, for another namespace.
func withNamespace(matcher any, ns string) (any, error) {
	return withStackPrefix(matcher, ns+"-")
}

// everyStackBut turns a stack-id prefix matcher into one of every stack but stackName:
// {"anything-but": {"prefix": {"Fn::Join": ["", [..., ":stack/NAME/"]]}}}.
func everyStackBut(matcher any, stackName string) (any, error) {
	m, err := withStackPrefix(matcher, stackName+"/")
	if err != nil {
		return nil, err
	}
	return map[string]any{"anything-but": m}, nil
}

// withStackPrefix copies a stack-id prefix matcher with what follows ":stack/" replaced.
func withStackPrefix(matcher any, prefix string) (map[string]any, error) {
	b, _ := json.Marshal(matcher)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	join, _ := dig(m, "prefix", "Fn::Join").([]any)
	if len(join) != 2 {
		return nil, errors.New("the stack-id matcher is not a prefix of an Fn::Join")
	}
	parts, _ := join[1].([]any)
	if len(parts) == 0 {
		return nil, errors.New("the stack-id prefix has no parts")
	}
	last, _ := parts[len(parts)-1].(string)
	i := strings.LastIndex(last, ":stack/")
	if i < 0 {
		return nil, fmt.Errorf("the stack-id prefix ends in %q, not :stack/NAMESPACE-", last)
	}
	parts[len(parts)-1] = last[:i] + ":stack/" + prefix
	return m, nil
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		if m == nil {
			return nil
		}
		v = m[k]
	}
	return v
}

// provisioner deploys one stack (cairn's or a target's) as `cdk deploy` does.
type provisioner struct {
	e    *awslocal.Emulator
	cfn  *cloudformation.Client
	name string        // the stack
	at   target.Target // its account and region
	// params are the stack's parameters (none for cairn's and the target stacks).
	params []cfntypes.Parameter
}

// template is how CreateStack and UpdateStack take the template: by URL when the
// template was uploaded, else its body.
func template(body, templateURL string) (*string, *string) {
	if templateURL != "" {
		return nil, aws.String(templateURL)
	}
	return aws.String(body), nil
}

// sameParameters reports whether the stack has the provisioner's parameters.
func (p provisioner) sameParameters(st *cfntypes.Stack) bool {
	have := map[string]string{}
	for _, sp := range st.Parameters {
		have[aws.ToString(sp.ParameterKey)] = aws.ToString(sp.ParameterValue)
	}
	for _, want := range p.params {
		if have[aws.ToString(want.ParameterKey)] != aws.ToString(want.ParameterValue) {
			return false
		}
	}
	return true
}

// bootstrap makes what `cdk bootstrap` makes and uploads the template to the assets bucket,
// as `cdk deploy` does; it returns the template's URL.
func (p provisioner) bootstrap(ctx context.Context, cfg aws.Config, body string) (string, error) {
	params := ssm.NewFromConfig(cfg)
	if _, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(bootstrapParameter)}); err != nil {
		if _, err := params.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(bootstrapParameter), Value: aws.String(bootstrapVersion),
			Type: ssmtypes.ParameterTypeString, Description: aws.String("The version of the bootstrap resources that are currently mastered in this stack")}); err != nil {
			return "", fmt.Errorf("provision cairn: bootstrap parameter %s: %w", bootstrapParameter, err)
		}
	}
	c := awsclient.S3(cfg)
	bucket := CDKAssetsBucket(DefaultCDKQualifier, p.at)
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			return "", fmt.Errorf("provision cairn: create the CDK assets bucket %s: %w", bucket, err)
		}
	}
	if err := publishAssets(ctx, c, bucket, body); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(body))
	key := hex.EncodeToString(sum[:]) + ".json"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte(body))}); err != nil {
		return "", fmt.Errorf("provision cairn: upload the template to %s: %w", bucket, err)
	}
	return p.e.URL() + "/" + bucket + "/" + key, nil
}

// publishAssets stores the code objects the template's functions name in the assets
// bucket, as `cdk deploy` publishes a stack's assets before deploying it (Lambda reads a
// function's code from S3, and fails when it is not there). The synthesized template holds
// placeholder code, which the in-process handlers stand for; an object already there stays.
func publishAssets(ctx context.Context, c *s3.Client, bucket, body string) error {
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties struct{ Code struct{ S3Key string } }
		}
	}
	if err := json.Unmarshal([]byte(body), &tpl); err != nil {
		return fmt.Errorf("provision cairn: read the template's assets: %w", err)
	}
	for id, r := range tpl.Resources {
		key := r.Properties.Code.S3Key
		if r.Type != "AWS::Lambda::Function" || key == "" {
			continue
		}
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err == nil {
			continue
		}
		placeholder := []byte("placeholder code of " + id + ": the function runs in process in local mode\n")
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(placeholder)}); err != nil {
			return fmt.Errorf("provision cairn: publish the code of %s to %s: %w", id, bucket, err)
		}
	}
	return nil
}

// pollInterval is how often Provision looks at the cairn stack while it settles.
const pollInterval = 20 * time.Millisecond

// stack creates the cairn stack, or updates it when its template differs from body, or
// re-creates it when an earlier attempt left it failed, and waits until it is complete.
func (p provisioner) stack(ctx context.Context, body, templateURL string, timeout time.Duration) (*cfntypes.Stack, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	caps := []cfntypes.Capability{cfntypes.CapabilityCapabilityIam, cfntypes.CapabilityCapabilityNamedIam}
	done := map[string]bool{} // actions taken, each at most once: a stack that fails again is an error
	act := func(action string, f func() error) error {
		if done[action] {
			return fmt.Errorf("provision cairn: stack %s is still not as wanted after %s it: see its events (aws cloudformation describe-stack-events --stack-name %s)",
				p.name, strings.ToLower(action), p.name)
		}
		done[action] = true
		return f()
	}
	// lost reports a read whose answer did not come (a dropped connection, a throttle, a
	// server fault): the stack is looked at again at the next poll rather than given up on.
	lost := func(err error) bool { return !awserr.Permanent(err) && ctx.Err() == nil }
	for {
		st, err := p.describe(ctx)
		if err != nil && !lost(err) {
			return nil, err
		}
		switch {
		case err != nil:
			err = nil // looked at again below
		case st == nil:
			err = act("creating", func() error {
				tb, tu := template(body, templateURL)
				_, err := p.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{
					StackName: aws.String(p.name), TemplateBody: tb, TemplateURL: tu, Capabilities: caps, Parameters: p.params,
				})
				return err
			})
		case strings.HasSuffix(string(st.StackStatus), "_IN_PROGRESS"):
			// Settling, perhaps from before a restart: wait.
		case st.StackStatus == cfntypes.StackStatusCreateComplete || st.StackStatus == cfntypes.StackStatusUpdateComplete ||
			st.StackStatus == cfntypes.StackStatusUpdateRollbackComplete:
			cur, gerr := p.cfn.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String(p.name)})
			if gerr != nil && lost(gerr) {
				break // looked at again below
			}
			if gerr != nil {
				return nil, fmt.Errorf("provision cairn: read the template of stack %s: %w", p.name, gerr)
			}
			if aws.ToString(cur.TemplateBody) == body && p.sameParameters(st) {
				return st, nil
			}
			if strings.Contains(aws.ToString(cur.TemplateBody), "AWS::CloudFormation::WaitConditionHandle") {
				return nil, fmt.Errorf("provision cairn: the state folder holds cairn's stack as an earlier cairn made it by hand, not from infra's template: delete the folder (or pass another --dir) and start again")
			}
			err = act("updating", func() error {
				tb, tu := template(body, templateURL)
				_, err := p.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{
					StackName: aws.String(p.name), TemplateBody: tb, TemplateURL: tu, Capabilities: caps, Parameters: p.params,
				})
				return err
			})
		default:
			// ROLLBACK_COMPLETE, *_FAILED: nothing to keep; start again.
			err = act("deleting", func() error {
				_, err := p.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: st.StackId})
				return err
			})
		}
		if err != nil {
			return nil, fmt.Errorf("provision cairn: stack %s: %w", p.name, err)
		}
		select {
		case <-p.e.Clock().After(pollInterval):
		case <-ctx.Done():
			status := "missing"
			if st != nil {
				status = string(st.StackStatus)
			}
			return nil, fmt.Errorf("provision cairn: stack %s did not settle within %s (last status %s): %w", p.name, timeout, status, ctx.Err())
		}
	}
}

// describe returns the cairn stack, or nil when it does not exist.
func (p provisioner) describe(ctx context.Context) (*cfntypes.Stack, error) {
	out, err := p.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(p.name)})
	if awserr.StackMissing(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("provision cairn: describe stack %s: %w", p.name, err)
	}
	for i := range out.Stacks {
		if out.Stacks[i].StackStatus != cfntypes.StackStatusDeleteComplete {
			return &out.Stacks[i], nil
		}
	}
	return nil, nil
}
