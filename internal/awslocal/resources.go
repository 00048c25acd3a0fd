package awslocal

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/pattern"
	"github.com/cairn-dev/cairn/internal/awslocal/sqslocal"
)

// providers are the resource types whose stack resources the emulator's own services
// make: what a stack creates exists (a queue can be sent to, a topic published to, a
// function invoked), Ref and Fn::GetAtt return the real identifiers, and drift is measured
// against the live resource. Every other type is simulated by the CloudFormation emulator.
func (e *Emulator) providers() map[string]cfnlocal.Provider {
	return map[string]cfnlocal.Provider{
		"AWS::S3::Bucket":                 e.bucketProvider(),
		"AWS::S3::BucketPolicy":           e.bucketPolicyProvider(),
		"AWS::SQS::Queue":                 e.queueProvider(),
		"AWS::SQS::QueuePolicy":           e.queuePolicyProvider(),
		"AWS::SNS::Topic":                 e.topicProvider(),
		"AWS::SNS::TopicPolicy":           e.topicPolicyProvider(),
		"AWS::SNS::Subscription":          e.subscriptionProvider(),
		"AWS::SSM::Parameter":             e.parameterProvider(),
		"AWS::CloudWatch::Alarm":          e.alarmProvider(),
		"AWS::Events::Rule":               e.ruleProvider(),
		"AWS::Scheduler::Schedule":        e.scheduleProvider(),
		"AWS::Lambda::Function":           e.functionProvider(),
		"AWS::Lambda::EventSourceMapping": e.eventSourceMappingProvider(),
	}
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

func patternParse(doc string) (*pattern.Pattern, error) { return pattern.Parse([]byte(doc)) }

func sqslocalDefaults() map[string]string { return sqslocal.Defaults() }
