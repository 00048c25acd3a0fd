package awslocal

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/ssmlocal"
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

// --- SQS ---

// queueAttributes maps AWS::SQS::Queue properties to SetQueueAttributes attributes.
var queueAttributes = []string{"DelaySeconds", "MaximumMessageSize", "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds",
	"VisibilityTimeout", "RedrivePolicy", "RedriveAllowPolicy", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled"}

func queueAttrs(props map[string]any) map[string]string {
	out := map[string]string{}
	for _, k := range queueAttributes {
		if v, ok := props[k]; ok {
			out[k] = text(v)
		}
	}
	return out
}

func (e *Emulator) queueProvider() cfnlocal.Provider {
	return cfnlocal.Provider{
		Create: func(_ ctxT, r cfnlocal.Resource) (string, map[string]any, error) {
			if text(r.Props["FifoQueue"]) == "true" {
				return "", nil, fmt.Errorf("FIFO queues are not emulated by cairn's local SQS; use a standard queue")
			}
			name := r.Name("QueueName", 80)
			if e.sqs.Exists(e.sqs.QueueARN(name)) {
				return "", nil, fmt.Errorf("%s already exists", name)
			}
			url, err := e.sqs.CreateQueue(name, queueAttrs(r.Props))
			if err != nil {
				return "", nil, err
			}
			if tags := tagMap(r.Props["Tags"]); len(tags) > 0 {
				if err := e.sqs.Tag(name, tags); err != nil {
					return "", nil, err
				}
			}
			return url, nil, nil
		},
		Update: func(_ ctxT, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			attrs := queueAttrs(r.Props)
			defaults := sqslocalDefaults()
			for k := range queueAttrs(old) {
				if _, kept := attrs[k]; !kept {
					// A property removed from the template goes back to its default.
					attrs[k] = defaults[k]
				}
			}
			return nil, e.sqs.SetAttributes(lastSegment(r.PhysicalID), attrs)
		},
		Delete: func(_ ctxT, r cfnlocal.Resource) error {
			err := e.sqs.DeleteQueue(lastSegment(r.PhysicalID))
			if err != nil && !e.sqs.Exists(e.sqs.QueueARN(lastSegment(r.PhysicalID))) {
				return nil // already gone
			}
			return err
		},
		Read: func(_ ctxT, r cfnlocal.Resource) (map[string]any, bool, error) {
			attrs, err := e.sqs.Attributes(lastSegment(r.PhysicalID))
			if err != nil {
				return nil, false, nil
			}
			out := map[string]any{}
			for _, k := range queueAttributes {
				if v, ok := attrs[k]; ok {
					if k == "RedrivePolicy" || k == "RedriveAllowPolicy" {
						out[k] = asJSON(v)
					} else {
						out[k] = v
					}
				}
			}
			return out, true, nil
		},
	}
}

func tagMap(v any) map[string]string {
	out := map[string]string{}
	for _, t := range list(v) {
		m := object(t)
		out[text(m["Key"])] = text(m["Value"])
	}
	return out
}

func (e *Emulator) queuePolicyProvider() cfnlocal.Provider {
	apply := func(queues []any, policy string) error {
		for _, q := range queues {
			if err := e.sqs.SetAttributes(lastSegment(text(q)), map[string]string{"Policy": policy}); err != nil {
				return err
			}
		}
		return nil
	}
	return cfnlocal.Provider{
		Create: func(_ ctxT, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, apply(list(r.Props["Queues"]), text(r.Props["PolicyDocument"]))
		},
		Update: func(_ ctxT, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			kept := map[string]bool{}
			for _, q := range list(r.Props["Queues"]) {
				kept[text(q)] = true
			}
			var dropped []any
			for _, q := range list(old["Queues"]) {
				if !kept[text(q)] {
					dropped = append(dropped, q)
				}
			}
			if err := apply(dropped, ""); err != nil {
				return nil, err
			}
			return nil, apply(list(r.Props["Queues"]), text(r.Props["PolicyDocument"]))
		},
		Delete: func(_ ctxT, r cfnlocal.Resource) error {
			for _, q := range list(r.Props["Queues"]) {
				_ = e.sqs.SetAttributes(lastSegment(text(q)), map[string]string{"Policy": ""})
			}
			return nil
		},
		Read: func(_ ctxT, r cfnlocal.Resource) (map[string]any, bool, error) {
			qs := list(r.Props["Queues"])
			if len(qs) == 0 {
				return nil, true, nil
			}
			attrs, err := e.sqs.Attributes(lastSegment(text(qs[0])))
			if err != nil || attrs["Policy"] == "" {
				return nil, false, nil
			}
			return map[string]any{"PolicyDocument": asJSON(attrs["Policy"])}, true, nil
		},
	}
}

// --- SNS ---

func (e *Emulator) topicProvider() cfnlocal.Provider {
	subscriptions := func(props map[string]any) map[[2]string]bool {
		out := map[[2]string]bool{}
		for _, s := range list(props["Subscription"]) {
			m := object(s)
			out[[2]string{text(m["Protocol"]), text(m["Endpoint"])}] = true
		}
		return out
	}
	subscribe := func(arn string, subs map[[2]string]bool) error {
		keys := make([][2]string, 0, len(subs))
		for k := range subs {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i][1] < keys[j][1] })
		for _, k := range keys {
			if _, err := e.sns.Subscribe(arn, k[0], k[1], nil); err != nil {
				return err
			}
		}
		return nil
	}
	return cfnlocal.Provider{
		Create: func(_ ctxT, r cfnlocal.Resource) (string, map[string]any, error) {
			name := lastSegment(r.PhysicalID)
			arn := e.sns.TopicARN(name)
			if e.sns.Exists(arn) {
				return "", nil, fmt.Errorf("%s already exists", name)
			}
			attrs := map[string]string{}
			for _, k := range []string{"DisplayName", "KmsMasterKeyId", "FifoTopic", "ContentBasedDeduplication", "TracingConfig", "SignatureVersion"} {
				if v, ok := r.Props[k]; ok {
					attrs[k] = text(v)
				}
			}
			if _, err := e.sns.CreateTopic(name, attrs, tagMap(r.Props["Tags"])); err != nil {
				return "", nil, err
			}
			return arn, nil, subscribe(arn, subscriptions(r.Props))
		},
		Update: func(_ ctxT, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			for _, k := range []string{"DisplayName", "KmsMasterKeyId", "TracingConfig", "SignatureVersion"} {
				if text(r.Props[k]) != text(old[k]) {
					if err := e.sns.SetTopicAttribute(r.PhysicalID, k, text(r.Props[k])); err != nil {
						return nil, err
					}
				}
			}
			want := subscriptions(r.Props)
			for k := range subscriptions(old) {
				if !want[k] {
					if arn := e.sns.SubscriptionARN(r.PhysicalID, k[0], k[1]); arn != "" {
						_ = e.sns.Unsubscribe(arn)
					}
				}
			}
			return nil, subscribe(r.PhysicalID, want)
		},
		Delete: func(_ ctxT, r cfnlocal.Resource) error { return e.sns.DeleteTopic(r.PhysicalID) },
		Read: func(_ ctxT, r cfnlocal.Resource) (map[string]any, bool, error) {
			attrs, err := e.sns.TopicAttributes(r.PhysicalID)
			if err != nil {
				return nil, false, nil
			}
			out := map[string]any{}
			for _, k := range []string{"DisplayName", "KmsMasterKeyId"} {
				out[k] = attrs[k]
			}
			return out, true, nil
		},
	}
}

func (e *Emulator) topicPolicyProvider() cfnlocal.Provider {
	apply := func(topics []any, policy string) error {
		for _, t := range topics {
			if err := e.sns.SetTopicAttribute(text(t), "Policy", policy); err != nil {
				return err
			}
		}
		return nil
	}
	return cfnlocal.Provider{
		Create: func(_ ctxT, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, apply(list(r.Props["Topics"]), text(r.Props["PolicyDocument"]))
		},
		Update: func(_ ctxT, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			return nil, apply(list(r.Props["Topics"]), text(r.Props["PolicyDocument"]))
		},
		Delete: func(_ ctxT, r cfnlocal.Resource) error {
			for _, t := range list(r.Props["Topics"]) {
				_ = e.sns.SetTopicAttribute(text(t), "Policy", "")
			}
			return nil
		},
	}
}

// subscriptionAttributes are the AWS::SNS::Subscription properties that are attributes.
var subscriptionAttributes = []string{"RawMessageDelivery", "FilterPolicy", "FilterPolicyScope", "RedrivePolicy"}

func (e *Emulator) subscriptionProvider() cfnlocal.Provider {
	attrs := func(props map[string]any) map[string]string {
		out := map[string]string{}
		for _, k := range subscriptionAttributes {
			if v, ok := props[k]; ok {
				out[k] = text(v)
			}
		}
		return out
	}
	return cfnlocal.Provider{
		Create: func(_ ctxT, r cfnlocal.Resource) (string, map[string]any, error) {
			arn, err := e.sns.Subscribe(text(r.Props["TopicArn"]), text(r.Props["Protocol"]), text(r.Props["Endpoint"]), attrs(r.Props))
			return arn, nil, err
		},
		Update: func(_ ctxT, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			now := attrs(r.Props)
			for k := range attrs(old) {
				if _, kept := now[k]; !kept {
					now[k] = map[string]string{"RawMessageDelivery": "false", "FilterPolicyScope": "MessageAttributes"}[k]
				}
			}
			for _, k := range sortedKeys(now) {
				if err := e.sns.SetSubscriptionAttribute(r.PhysicalID, k, now[k]); err != nil {
					return nil, err
				}
			}
			return nil, nil
		},
		Delete: func(_ ctxT, r cfnlocal.Resource) error { return e.sns.Unsubscribe(r.PhysicalID) },
		Read: func(_ ctxT, r cfnlocal.Resource) (map[string]any, bool, error) {
			a, err := e.sns.SubscriptionAttributes(r.PhysicalID)
			if err != nil {
				return nil, false, nil
			}
			out := map[string]any{"TopicArn": a["TopicArn"], "Protocol": a["Protocol"], "Endpoint": a["Endpoint"], "RawMessageDelivery": a["RawMessageDelivery"]}
			for _, k := range []string{"FilterPolicy", "RedrivePolicy"} {
				if v, ok := a[k]; ok {
					out[k] = asJSON(v)
				}
			}
			if v, ok := a["FilterPolicyScope"]; ok {
				out["FilterPolicyScope"] = v
			}
			return out, true, nil
		},
	}
}

// --- SSM ---

func (e *Emulator) parameterProvider() cfnlocal.Provider {
	put := func(r cfnlocal.Resource, overwrite bool) error {
		typ := text(r.Props["Type"])
		if typ == "SecureString" {
			return fmt.Errorf("SecureString parameters cannot be created by CloudFormation: use String or StringList")
		}
		_, err := e.ssm.Put(ssmPut(r.PhysicalID, typ, r.Props, overwrite))
		return err
	}
	return cfnlocal.Provider{
		Create: func(_ ctxT, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, put(r, false)
		},
		Update: func(_ ctxT, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			return nil, put(r, true)
		},
		Delete: func(_ ctxT, r cfnlocal.Resource) error {
			if err := e.ssm.Delete(r.PhysicalID); err != nil && !strings.Contains(err.Error(), "ParameterNotFound") {
				return err
			}
			return nil
		},
		Read: func(_ ctxT, r cfnlocal.Resource) (map[string]any, bool, error) {
			p, err := e.ssm.Get(r.PhysicalID, false)
			if err != nil {
				return nil, false, nil
			}
			out := map[string]any{"Name": p.Name, "Type": p.Type, "Value": p.Value}
			if d, ok := e.ssm.Description(r.PhysicalID); ok {
				out["Description"] = d
			}
			return out, true, nil
		},
	}
}

// --- EventBridge ---

func (e *Emulator) ruleProvider() cfnlocal.Provider {
	install := func(r cfnlocal.Resource) error {
		if bus := text(r.Props["EventBusName"]); bus != "" && bus != "default" && !strings.HasSuffix(bus, ":event-bus/default") {
			return fmt.Errorf("event bus %s: the emulator serves the default event bus only", bus)
		}
		rl := &rule{schedule: text(r.Props["ScheduleExpression"]), enabled: text(r.Props["State"]) != "DISABLED"}
		if p, ok := r.Props["EventPattern"]; ok {
			doc := text(p)
			pat, err := patternParse(doc)
			if err != nil {
				return fmt.Errorf("Event pattern is not valid. Reason: %v", err)
			}
			rl.pattern = pat
		}
		if rl.pattern == nil && rl.schedule == "" {
			return fmt.Errorf("Parameter(s) EventPattern or ScheduleExpression must be specified.")
		}
		for _, t := range list(r.Props["Targets"]) {
			m := object(t)
			for _, unsupported := range []string{"InputPath", "InputTransformer"} {
				if _, ok := m[unsupported]; ok {
					return fmt.Errorf("target %s: %s is not emulated (Input is)", text(m["Id"]), unsupported)
				}
			}
			rl.targets = append(rl.targets, ruleTarget{ID: text(m["Id"]), ARN: text(m["Arn"]), Input: text(m["Input"])})
		}
		return e.putRule(r.PhysicalID, rl)
	}
	return cfnlocal.Provider{
		Create: func(_ ctxT, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, install(r)
		},
		Update:  func(_ ctxT, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) { return nil, install(r) },
		Delete:  func(_ ctxT, r cfnlocal.Resource) error { e.deleteRule(r.PhysicalID); return nil },
		Restore: func(_ ctxT, r cfnlocal.Resource) error { return install(r) },
	}
}

func (e *Emulator) scheduleProvider() cfnlocal.Provider {
	key := func(r cfnlocal.Resource) string {
		return orDefault(text(r.Props["GroupName"]), "default") + "/" + r.PhysicalID
	}
	install := func(r cfnlocal.Resource) error {
		target := object(r.Props["Target"])
		if text(target["Arn"]) == "" {
			return fmt.Errorf("Target.Arn is required")
		}
		return e.putSchedule(key(r), text(r.Props["ScheduleExpression"]), text(r.Props["ScheduleExpressionTimezone"]),
			text(target["Arn"]), text(target["Input"]), text(r.Props["State"]) != "DISABLED")
	}
	return cfnlocal.Provider{
		Create: func(_ ctxT, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, install(r)
		},
		Update:  func(_ ctxT, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) { return nil, install(r) },
		Delete:  func(_ ctxT, r cfnlocal.Resource) error { e.deleteSchedule(key(r)); return nil },
		Restore: func(_ ctxT, r cfnlocal.Resource) error { return install(r) },
	}
}

// --- Lambda ---

func (e *Emulator) functionProvider() cfnlocal.Provider {
	define := func(r cfnlocal.Resource) {
		timeout := 3 * time.Second // Lambda's default
		if v := text(r.Props["Timeout"]); v != "" {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				timeout = time.Duration(n) * time.Second
			}
		}
		env := map[string]string{}
		for k, v := range object(object(r.Props["Environment"])["Variables"]) {
			env[k] = text(v)
		}
		e.defineFunction(r.PhysicalID, timeout, env)
	}
	return cfnlocal.Provider{
		Create: func(_ ctxT, r cfnlocal.Resource) (string, map[string]any, error) {
			if e.functionExists(r.PhysicalID) && r.Props["FunctionName"] != nil {
				return "", nil, fmt.Errorf("Function already exist: %s", r.PhysicalID)
			}
			define(r)
			return r.PhysicalID, nil, nil
		},
		Update: func(_ ctxT, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			define(r)
			return nil, nil
		},
		Delete:  func(_ ctxT, r cfnlocal.Resource) error { e.removeFunction(r.PhysicalID); return nil },
		Restore: func(_ ctxT, r cfnlocal.Resource) error { define(r); return nil },
	}
}

func (e *Emulator) eventSourceMappingProvider() cfnlocal.Provider {
	install := func(r cfnlocal.Resource) error {
		source := text(r.Props["EventSourceArn"])
		if !strings.HasPrefix(source, "arn:aws:sqs:") {
			return fmt.Errorf("event source %s: the emulator maps SQS queues only", source)
		}
		fn := functionName(text(r.Props["FunctionName"]))
		if !e.functionExists(fn) {
			return fmt.Errorf("Function not found: %s", e.functionARN(fn))
		}
		o := ESMOptions{}
		if v := text(r.Props["BatchSize"]); v != "" {
			o.BatchSize, _ = strconv.Atoi(v)
		}
		if v := text(r.Props["MaximumBatchingWindowInSeconds"]); v != "" {
			n, _ := strconv.Atoi(v)
			o.MaxBatchingWindow = time.Duration(n) * time.Second
		}
		for _, t := range list(r.Props["FunctionResponseTypes"]) {
			if text(t) == "ReportBatchItemFailures" {
				o.ReportBatchItemFailures = true
			}
		}
		if text(r.Props["Enabled"]) == "false" {
			e.stopMapping(r.PhysicalID)
			return nil
		}
		return e.startMapping(r.PhysicalID, lastSegment(source), fn, o)
	}
	return cfnlocal.Provider{
		Create: func(_ ctxT, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, install(r)
		},
		Update:  func(_ ctxT, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) { return nil, install(r) },
		Delete:  func(_ ctxT, r cfnlocal.Resource) error { e.stopMapping(r.PhysicalID); return nil },
		Restore: func(_ ctxT, r cfnlocal.Resource) error { return install(r) },
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// ssmPut builds PutParameter's request from an AWS::SSM::Parameter's properties.
func ssmPut(name, typ string, props map[string]any, overwrite bool) ssmlocal.PutInput {
	in := ssmlocal.PutInput{Name: name, Type: typ, Value: text(props["Value"]), Description: text(props["Description"]),
		AllowedPattern: text(props["AllowedPattern"]), DataType: text(props["DataType"]), Tier: text(props["Tier"]), Overwrite: overwrite}
	if !overwrite {
		tags := map[string]string{}
		for k, v := range object(props["Tags"]) {
			tags[k] = text(v)
		}
		if len(tags) > 0 {
			in.Tags = tags
		}
	}
	return in
}
