package deployer

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/seal"
)

// SSMAPI reads the SSM parameters of ${ssm} lookups.
type SSMAPI interface {
	GetParameters(ctx context.Context, in *ssm.GetParametersInput, optFns ...func(*ssm.Options)) (*ssm.GetParametersOutput, error)
}

// ssmParameter is one parameter as SSM answers it, SecureStrings decrypted: held in
// memory only, never written anywhere.
type ssmParameter struct {
	Type, Value string
	Version     int64
}

// getParametersMax is how many names one GetParameters call takes.
const getParametersMax = 10

// readSSM reads names (as written in lookups, with any :VERSION selector), SecureStrings
// decrypted. A name SSM does not know is absent from the result: the stacks reading it
// fail with the reason, before any change set.
func (b *base) readSSM(ctx context.Context, names []string) (map[string]ssmParameter, error) {
	out := map[string]ssmParameter{}
	if len(names) == 0 {
		return out, nil
	}
	if b.ssm == nil {
		return nil, fmt.Errorf("the config reads SSM parameters (%s, ...) but the deployer has no SSM client", names[0])
	}
	for start := 0; start < len(names); start += getParametersMax {
		batch := names[start:min(start+getParametersMax, len(names))]
		res, err := b.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: batch, WithDecryption: aws.Bool(true)})
		if err != nil && awserr.Permanent(err) {
			return nil, ssmRefused(batch, err)
		}
		if err != nil {
			return nil, fmt.Errorf("read SSM parameters %v: %w", batch, err)
		}
		for _, p := range res.Parameters {
			out[aws.ToString(p.Name)+aws.ToString(p.Selector)] = ssmParameter{Type: string(p.Type), Value: aws.ToString(p.Value), Version: p.Version}
		}
	}
	return out, nil
}

// refusedError is SSM's answer to a read that retrying cannot help, as a person reads it.
type refusedError struct {
	msg string
	err error
}

func (e refusedError) Error() string { return e.msg }
func (e refusedError) Unwrap() error { return e.err }

// ssmRefused says which parameters SSM refused to read and why, and, when IAM denied the
// read, how to allow it.
func ssmRefused(names []string, err error) error {
	msg := fmt.Sprintf("SSM refused to read the parameters %s: %s", strings.Join(names, ", "), awserr.Message(err))
	if awserr.AccessDenied(err) {
		msg += ": the deployer's role reads only the Parameter Store paths of cairn's CDK context cairn:ssmPaths " +
			"(default /NAMESPACE/*): add the path there and deploy cairn again (make deploy), or move the parameter"
	}
	return refusedError{msg: msg, err: err}
}

// ssmValues reads names and keeps what cairn may keep of them: a SecureString's seal
// under k only.
func (b *base) ssmValues(ctx context.Context, k seal.Key, names []string) (map[string]config.SSMValue, error) {
	read, err := b.readSSM(ctx, names)
	if err != nil || len(read) == 0 {
		return nil, err
	}
	out := make(map[string]config.SSMValue, len(read))
	for name, p := range read {
		out[name] = config.NewSSMValue(k, name, p.Type, p.Value, p.Version)
	}
	return out, nil
}

// outputReader reads the outputs refs name (config name of the stack, output) again from
// CloudFormation, for unsealing; one not there is absent.
type outputReader func(ctx context.Context, refs [][2]string) (map[[2]string]string, error)

// unseal reads the secrets params refer to (config.Unseal: SecureStrings from SSM, NoEcho
// values from cs, the stack of the bundle the run deploys, secret outputs through outputs) and returns params with their
// values, for the CreateChangeSet call only, and the names of the parameters holding one.
// An error is permanent when the source answered: the value is gone or changed since the
// run resolved it.
func (b *base) unseal(ctx context.Context, params map[string]string, cs *config.Stack, outputs outputReader) (map[string]string, []string, error) {
	var secret []string
	for k, v := range params {
		if config.HoldsSealed(v) {
			secret = append(secret, k)
		}
	}
	if len(secret) == 0 {
		return params, nil, nil
	}
	k, err := b.key(ctx)
	if err != nil {
		return nil, nil, err
	}
	plain := config.Plain{Key: k, Stack: cs.Name, Bundle: cs.BundleSecrets(), SSM: map[string]string{}}
	if names := config.Sealed(params); len(names) > 0 {
		read, err := b.readSSM(ctx, names)
		if err != nil && awserr.Permanent(err) {
			return nil, nil, run.Permanent(err)
		}
		if err != nil {
			return nil, nil, err
		}
		for name, p := range read {
			if p.Type == config.SecureString {
				plain.SSM[name] = p.Value
			}
		}
	}
	if refs := config.SealedOutputs(params); len(refs) > 0 {
		if plain.Outputs, err = outputs(ctx, refs); err != nil {
			return nil, nil, err
		}
	}
	out, err := config.Unseal(params, plain)
	if err != nil {
		return nil, nil, run.Permanent(err)
	}
	return out, secret, nil
}
