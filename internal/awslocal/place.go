package awslocal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/cloudwatchlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/ecrlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/kmslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/secretslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/snslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/sqslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/ssmlocal"
)

// A Place is one account in one region: its own SQS, SNS, Parameter Store, Secrets
// Manager, CloudFormation and event buses, as AWS keeps them apart. The emulator makes a place on the first
// request signed for it (the account from the credentials, the region from the signature)
// and keeps its state under Options.Dir/accounts/ACCOUNT/REGION. S3 (bucket names are
// global), STS, IAM roles and Lambda functions are the emulator's, not a place's.
type Place struct {
	e               *Emulator
	account, region string
	sqs             *sqslocal.Service
	sns             *snslocal.Service
	ssm             *ssmlocal.Service
	secrets         *secretslocal.Service
	cw              *cloudwatchlocal.Service
	kms             *kmslocal.Service
	ecr             *ecrlocal.Service
	cfn             *cfnlocal.Service
	services        map[string]http.Handler // by signing name

	// dir keeps the place's state ("" in memory).
	dir string

	// Guarded by e.mu.
	buses     map[string]*eventBus // by name, the default one made on first use
	databases map[string]dbTarget  // the stacks' RDS instances and clusters, by identifier
}

// placesDir holds the state of every place but the home one.
const placesDir = "accounts"

// placePrefix is where a place's custom resource ResponseURLs point:
// /_local/at/ACCOUNT/REGION/_local/cfn-response/ID.
const placePrefix = "/_local/at/"

var (
	accountRE = regexp.MustCompile(`^\d{12}$`)
	regionRE  = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d{1,2}$`)
)

func placeKey(account, region string) string { return account + "/" + region }

// newPlace makes the services of account in region, with their state under dir ("" in
// memory).
func newPlace(e *Emulator, account, region, dir string) (_ *Place, err error) {
	p := &Place{e: e, account: account, region: region, dir: dir, buses: map[string]*eventBus{}, databases: map[string]dbTarget{}}
	defer func() {
		if err != nil { // the services made before the failure are closed
			if p.sqs != nil {
				p.sqs.Close()
			}
			p.closeServices()
		}
	}()
	sub := func(name string) string {
		if dir == "" {
			return ""
		}
		return filepath.Join(dir, name)
	}
	o := e.opts
	p.sqs, err = sqslocal.New(sqslocal.Options{Region: region, AccountID: account, Clock: o.Clock, Dir: sub("sqs"), BaseURL: e.URL, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	p.sns, err = snslocal.New(snslocal.Options{Region: region, AccountID: account, Clock: o.Clock, Dir: sub("sns"), Send: e.send, SendFIFO: e.sendFIFO, Invoke: e.notifyFunction, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	p.ssm, err = ssmlocal.New(ssmlocal.Options{Region: region, AccountID: account, Clock: o.Clock, Dir: sub("ssm"), Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	p.secrets, err = secretslocal.New(secretslocal.Options{Region: region, AccountID: account, Clock: o.Clock, Dir: sub("secretsmanager"), Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	p.cw, err = cloudwatchlocal.New(cloudwatchlocal.Options{Region: region, AccountID: account, Clock: o.Clock, Dir: sub("cloudwatch"), Logger: o.Logger,
		OnStateChange: func(string, string) {
			if p.cfn != nil {
				p.cfn.AlarmStateChanged()
			}
		}})
	if err != nil {
		return nil, err
	}
	p.kms, err = kmslocal.New(kmslocal.Options{Region: region, AccountID: account, Clock: o.Clock, Dir: sub("kms"), Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	p.ecr, err = ecrlocal.New(ecrlocal.Options{Region: region, AccountID: account, Clock: o.Clock, Dir: sub("ecr"), Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	p.cfn, err = cfnlocal.New(cfnlocal.Options{
		Region: region, AccountID: account, Clock: o.Clock, Dir: sub("cloudformation"), Logger: o.Logger,
		GetObject: e.s3.GetObject,
		Publish: func(ctx context.Context, topicARN, subject, message string) error {
			_, err := e.publish(ctx, topicARN, subject, message)
			return err
		},
		PutEvent:              p.PutEvent,
		SSMParameter:          p.ssmParameter,
		DynamicReference:      p.dynamicReference,
		Alarm:                 p.cw.State,
		Providers:             p.providers(),
		FunctionRuns:          e.functionRuns,
		InvokeFunction:        e.invokeEvent,
		BaseURL:               p.baseURL,
		ResourceDelay:         o.CloudFormation.ResourceDelay,
		ChangeSetDelay:        o.CloudFormation.ChangeSetDelay,
		ResourceDelayMax:      o.CloudFormation.ResourceDelayMax,
		ChangeSetDelayMax:     o.CloudFormation.ChangeSetDelayMax,
		DelaySeed:             o.CloudFormation.DelaySeed,
		CustomResourceTimeout: o.CloudFormation.CustomResourceTimeout,
	})
	if err != nil {
		return nil, err
	}
	p.services = map[string]http.Handler{"sqs": p.sqs, "sns": p.sns, "ssm": p.ssm, "secretsmanager": p.secrets, "monitoring": p.cw, "kms": p.kms,
		"cloudformation": p.cfn, "ecr": p.ecr, "events": eventsAPI{p}}
	if err = p.loadEvents(); err != nil {
		return nil, err
	}
	return p, nil
}

// closeServices closes the place's services that were made, SQS aside: the emulator
// closes SQS first (its Close ends long polls), then waits for its pollers, then the rest.
func (p *Place) closeServices() error {
	p.kms.Close()
	return errors.Join(closeMade(p.cfn), closeMade(p.sns), closeMade(p.ssm), closeMade(p.secrets), closeMade(p.cw), closeMade(p.ecr))
}

// closeMade closes s unless it was never made (nil).
func closeMade[T any, P interface {
	*T
	Close() error
}](s P) error {
	if s == nil {
		return nil
	}
	return s.Close()
}

// loadPlaces brings back every place whose state is under Dir, so their stacks, queues and
// rules live on after a restart whether or not anyone asks for them.
func (e *Emulator) loadPlaces() error {
	if e.opts.Dir == "" {
		return nil
	}
	accounts, err := os.ReadDir(filepath.Join(e.opts.Dir, placesDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("emulator: read the accounts under %s: %w", e.opts.Dir, err)
	}
	for _, a := range accounts {
		if !a.IsDir() || !accountRE.MatchString(a.Name()) {
			continue
		}
		regions, err := os.ReadDir(filepath.Join(e.opts.Dir, placesDir, a.Name()))
		if err != nil {
			return fmt.Errorf("emulator: read the regions of account %s: %w", a.Name(), err)
		}
		for _, r := range regions {
			if !r.IsDir() || !regionRE.MatchString(r.Name()) || (a.Name() == e.opts.AccountID && r.Name() == e.opts.Region) {
				continue
			}
			p, err := newPlace(e, a.Name(), r.Name(), filepath.Join(e.opts.Dir, placesDir, a.Name(), r.Name()))
			if err != nil {
				return fmt.Errorf("emulator: account %s in %s: %w", a.Name(), r.Name(), err)
			}
			e.places[placeKey(a.Name(), r.Name())] = p
		}
	}
	return nil
}

// Place returns account's services in region, making them on first use: what a request
// signed for that account and region reaches.
func (e *Emulator) Place(account, region string) (*Place, error) {
	if !accountRE.MatchString(account) {
		return nil, fmt.Errorf("account %q is not 12 digits", account)
	}
	if !regionRE.MatchString(region) {
		return nil, fmt.Errorf("%q is not an AWS region name (e.g. us-east-1, eu-west-1)", region)
	}
	key := placeKey(account, region)
	if p := e.lookupPlace(account, region); p != nil {
		return p, nil
	}
	e.placeMu.Lock()
	defer e.placeMu.Unlock()
	if p := e.lookupPlace(account, region); p != nil {
		return p, nil
	}
	if e.ctx.Err() != nil {
		return nil, errors.New("the emulator is stopping")
	}
	dir := ""
	if e.opts.Dir != "" {
		dir = filepath.Join(e.opts.Dir, placesDir, account, region)
	}
	p, err := newPlace(e, account, region, dir)
	if err != nil {
		return nil, fmt.Errorf("emulator: account %s in %s: %w", account, region, err)
	}
	e.mu.Lock()
	e.places[key] = p
	e.mu.Unlock()
	e.log.Info("emulator: serving a new account and region", "account", account, "region", region)
	p.cfn.Wake()
	return p, nil
}

func (e *Emulator) lookupPlace(account, region string) *Place {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.places[placeKey(account, region)]
}

// allPlaces returns every place, the home one first.
func (e *Emulator) allPlaces() []*Place {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []*Place{e.home}
	for _, k := range sortedKeys(e.places) {
		if p := e.places[k]; p != e.home {
			out = append(out, p)
		}
	}
	return out
}

// Places lists the accounts and regions served so far, as ACCOUNT/REGION, sorted.
func (e *Emulator) Places() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return sortedKeys(e.places)
}

func (e *Emulator) closePlaces() {
	for _, p := range e.allPlaces() {
		if p == nil {
			continue
		}
		p.sqs.Close()
		p.closeServices()
	}
}

// placeOfARN returns the existing place an ARN (arn:aws:SERVICE:REGION:ACCOUNT:...) lives
// in, or nil.
func (e *Emulator) placeOfARN(arn string) *Place {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 || parts[0] != "arn" {
		return nil
	}
	return e.lookupPlace(parts[4], parts[3])
}

// send enqueues a message on the SQS queue with that ARN, in whichever account and region
// it is (SNS subscriptions, S3 notifications and event rules deliver across them).
func (e *Emulator) send(ctx context.Context, queueARN, body string, attrs map[string]events.SQSMessageAttribute) error {
	p := e.placeOfARN(queueARN)
	if p == nil {
		return fmt.Errorf("queue %s does not exist", queueARN)
	}
	_, err := p.sqs.Send(ctx, queueARN, body, attrs, 0)
	return err
}

// sendFIFO is send with a FIFO topic's message group and deduplication ids.
func (e *Emulator) sendFIFO(ctx context.Context, queueARN, body string, attrs map[string]events.SQSMessageAttribute, groupID, dedupID string) error {
	p := e.placeOfARN(queueARN)
	if p == nil {
		return fmt.Errorf("queue %s does not exist", queueARN)
	}
	_, err := p.sqs.SendGroup(ctx, queueARN, body, attrs, 0, groupID, dedupID)
	return err
}

// publish publishes to the SNS topic with that ARN, wherever it is.
func (e *Emulator) publish(ctx context.Context, topicARN, subject, message string) (string, error) {
	p := e.placeOfARN(topicARN)
	if p == nil {
		return "", fmt.Errorf("topic %s does not exist", topicARN)
	}
	return p.sns.Publish(ctx, topicARN, subject, message)
}

func (e *Emulator) queueExists(arn string) bool {
	p := e.placeOfARN(arn)
	return p != nil && p.sqs.Exists(arn)
}

func (e *Emulator) topicExists(arn string) bool {
	p := e.placeOfARN(arn)
	return p != nil && p.sns.Exists(arn)
}

// snsOf returns the SNS of the place an SNS ARN (a topic's or a subscription's) names,
// making the place if need be: a stack may subscribe to a topic of another region.
func (p *Place) snsOf(arn string) (*snslocal.Service, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 || parts[2] != "sns" {
		return nil, fmt.Errorf("%s is not an SNS ARN", arn)
	}
	if parts[3] == p.region && parts[4] == p.account {
		return p.sns, nil
	}
	q, err := p.e.Place(parts[4], parts[3])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", arn, err)
	}
	return q.sns, nil
}

// Account returns the place's account.
func (p *Place) Account() string { return p.account }

// Region returns the place's region.
func (p *Place) Region() string { return p.region }

// SQS returns the place's SQS, for in-process callers.
func (p *Place) SQS() *sqslocal.Service { return p.sqs }

// SNS returns the place's SNS, for in-process callers.
func (p *Place) SNS() *snslocal.Service { return p.sns }

// SSM returns the place's Parameter Store, for in-process callers.
func (p *Place) SSM() *ssmlocal.Service { return p.ssm }

// SecretsManager returns the place's Secrets Manager, for in-process callers.
func (p *Place) SecretsManager() *secretslocal.Service { return p.secrets }

// CloudWatch returns the place's CloudWatch alarms, for in-process callers.
func (p *Place) CloudWatch() *cloudwatchlocal.Service { return p.cw }

// KMS returns the place's KMS, for in-process callers.
func (p *Place) KMS() *kmslocal.Service { return p.kms }

// CloudFormation returns the place's CloudFormation, for fault injection and records.
func (p *Place) CloudFormation() *cfnlocal.Service { return p.cfn }

// baseURL is where the place's custom resource ResponseURLs point (see servePlace); the
// home place's are at the emulator's root, as they were before there were others.
func (p *Place) baseURL() string {
	u := p.e.URL()
	if u == "" || p == p.e.home {
		return u
	}
	return u + placePrefix + p.account + "/" + p.region
}

// servePlace answers custom resource responses of a place:
// PUT /_local/at/ACCOUNT/REGION/_local/cfn-response/ID.
func (e *Emulator) servePlace(w http.ResponseWriter, r *http.Request) {
	account, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, placePrefix), "/")
	region, rest, _ := strings.Cut(rest, "/")
	p := e.lookupPlace(account, region)
	if p == nil || !strings.HasPrefix("/"+rest, cfnlocal.ResponsePath) {
		http.Error(w, "no custom resource request at "+r.URL.Path, http.StatusNotFound)
		return
	}
	p.cfn.ResponseHandler().ServeHTTP(w, r)
}

// serveCloudFormationControl serves /_local/cloudformation/... of the place named by the
// query's account and region (the home account and region by default).
func (e *Emulator) serveCloudFormationControl(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	account, region := orDefault(q.Get("account"), e.opts.AccountID), orDefault(q.Get("region"), e.opts.Region)
	p, err := e.Place(account, region)
	if err != nil {
		http.Error(w, "cloudformation control: "+err.Error(), http.StatusBadRequest)
		return
	}
	p.cfn.ControlHandler().ServeHTTP(w, r)
}

// ssmParameter resolves an AWS::SSM::Parameter::Value<...> stack parameter from the place's
// Parameter Store, as CloudFormation does. AWS's public parameters (/aws/service/...), which
// exist in every account, get a stable stand-in value.
func (p *Place) ssmParameter(name, typ string) (string, error) {
	v, err := p.ssm.Get(name, false)
	if err == nil {
		return v.Value, nil
	}
	if strings.HasPrefix(name, "/aws/service/") {
		return cfnlocal.PublicParameter(name, typ), nil
	}
	return "", fmt.Errorf("Unable to fetch parameters [%s] from parameter store for this account.", name)
}
