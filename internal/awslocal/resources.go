package awslocal

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/eventpattern"
	"github.com/cairn-dev/cairn/internal/awslocal/sqslocal"
)

// providers are the resource types whose stack resources the emulator's own services
// make: what a stack creates exists (a queue can be sent to, a topic published to, a
// function invoked, a role assumed), Ref and Fn::GetAtt return the real identifiers, and
// drift is measured against the live resource. Every other type is simulated by the
// CloudFormation emulator. Lambda functions, their event source mappings and schedules run
// in the home account and region only (in process, bound to handlers); elsewhere they are
// simulated.
func (p *Place) providers() map[string]cfnlocal.Provider {
	out := map[string]cfnlocal.Provider{
		"AWS::S3::Bucket":             p.bucketProvider(),
		"AWS::S3::BucketPolicy":       p.bucketPolicyProvider(),
		"AWS::SQS::Queue":             p.queueProvider(),
		"AWS::SQS::QueuePolicy":       p.queuePolicyProvider(),
		"AWS::SNS::Topic":             p.topicProvider(),
		"AWS::SNS::TopicPolicy":       p.topicPolicyProvider(),
		"AWS::SNS::Subscription":      p.subscriptionProvider(),
		"AWS::SSM::Parameter":         p.parameterProvider(),
		"AWS::CloudWatch::Alarm":      p.alarmProvider(),
		"AWS::Events::Rule":           p.ruleProvider(),
		"AWS::Events::EventBusPolicy": p.busPolicyProvider(),
		"AWS::Events::EventBus":       p.eventBusProvider(),
		"AWS::IAM::Role":              p.roleProvider(),

		"AWS::SecretsManager::Secret":                 p.secretProvider(),
		"AWS::SecretsManager::SecretTargetAttachment": p.secretTargetAttachmentProvider(),
		"AWS::RDS::DBInstance":                        p.databaseProvider(false),
		"AWS::RDS::DBCluster":                         p.databaseProvider(true),
		"AWS::KMS::Key":                               p.keyProvider(),
		"AWS::ECR::Repository":                        p.repositoryProvider(),
	}
	if p.account == p.e.opts.AccountID && p.region == p.e.opts.Region {
		out["AWS::Scheduler::Schedule"] = p.scheduleProvider()
		out["AWS::Lambda::Function"] = p.functionProvider()
		out["AWS::Lambda::EventSourceMapping"] = p.eventSourceMappingProvider()
	}
	return out
}

// text renders a template scalar as the APIs take it: numbers without exponent, booleans
// as true/false; objects and lists as JSON (policies, redrive policies, filter policies).
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// asJSON parses a JSON document given as text (a template may give a policy either way).
func asJSON(v string) any {
	var out any
	if json.Unmarshal([]byte(v), &out) != nil {
		return v
	}
	return out
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func lastSegment(s string) string { return s[strings.LastIndexAny(s, "/:")+1:] }

func tagMap(v any) map[string]string {
	out := map[string]string{}
	for _, t := range list(v) {
		m := object(t)
		out[text(m["Key"])] = text(m["Value"])
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func patternParse(doc string) (*eventpattern.Pattern, error) { return eventpattern.Parse([]byte(doc)) }

func sqslocalDefaults(fifo bool) map[string]string { return sqslocal.Defaults(fifo) }
