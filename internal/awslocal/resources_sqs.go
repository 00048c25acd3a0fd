package awslocal

import (
	"context"
	"fmt"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
)

// queueAttributes maps AWS::SQS::Queue properties to SetQueueAttributes attributes.
var queueAttributes = []string{"DelaySeconds", "MaximumMessageSize", "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds",
	"VisibilityTimeout", "RedrivePolicy", "RedriveAllowPolicy", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled",
	"ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"}

func queueAttrs(props map[string]any) map[string]string {
	out := map[string]string{}
	for _, k := range queueAttributes {
		if v, ok := props[k]; ok {
			out[k] = text(v)
		}
	}
	return out
}

// queueName is the name of a stack's queue: its QueueName, or the name CloudFormation
// generates, which for a FIFO queue ends in .fifo.
func queueName(r cfnlocal.Resource) string {
	if text(r.Props["FifoQueue"]) != "true" || r.Props["QueueName"] != nil {
		return r.Name("QueueName", 80)
	}
	return r.Name("QueueName", 75) + ".fifo"
}

func (p *Place) queueProvider() cfnlocal.Provider {
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			name := queueName(r)
			if p.sqs.Exists(p.sqs.QueueARN(name)) {
				return "", nil, fmt.Errorf("%s already exists", name)
			}
			attrs := queueAttrs(r.Props)
			if text(r.Props["FifoQueue"]) == "true" {
				attrs["FifoQueue"] = "true"
			}
			url, err := p.sqs.CreateQueue(name, attrs)
			if err != nil {
				return "", nil, err
			}
			if tags := tagMap(r.Props["Tags"]); len(tags) > 0 {
				if err := p.sqs.Tag(name, tags); err != nil {
					return "", nil, err
				}
			}
			return url, nil, nil
		},
		Update: func(_ context.Context, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			attrs := queueAttrs(r.Props)
			defaults := sqslocalDefaults(text(r.Props["FifoQueue"]) == "true")
			for k := range queueAttrs(old) {
				if _, kept := attrs[k]; !kept {
					// A property removed from the template goes back to its default.
					attrs[k] = defaults[k]
				}
			}
			return nil, p.sqs.SetAttributes(lastSegment(r.PhysicalID), attrs)
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			err := p.sqs.DeleteQueue(lastSegment(r.PhysicalID))
			if err != nil && !p.sqs.Exists(p.sqs.QueueARN(lastSegment(r.PhysicalID))) {
				return nil // already gone
			}
			return err
		},
		Read: func(_ context.Context, r cfnlocal.Resource) (map[string]any, bool, error) {
			attrs, err := p.sqs.Attributes(lastSegment(r.PhysicalID))
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

func (p *Place) queuePolicyProvider() cfnlocal.Provider {
	apply := func(queues []any, policy string) error {
		for _, q := range queues {
			if err := p.sqs.SetAttributes(lastSegment(text(q)), map[string]string{"Policy": policy}); err != nil {
				return err
			}
		}
		return nil
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, apply(list(r.Props["Queues"]), text(r.Props["PolicyDocument"]))
		},
		Update: func(_ context.Context, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
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
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			for _, q := range list(r.Props["Queues"]) {
				_ = p.sqs.SetAttributes(lastSegment(text(q)), map[string]string{"Policy": ""})
			}
			return nil
		},
		Read: func(_ context.Context, r cfnlocal.Resource) (map[string]any, bool, error) {
			qs := list(r.Props["Queues"])
			if len(qs) == 0 {
				return nil, true, nil
			}
			attrs, err := p.sqs.Attributes(lastSegment(text(qs[0])))
			if err != nil || attrs["Policy"] == "" {
				return nil, false, nil
			}
			return map[string]any{"PolicyDocument": asJSON(attrs["Policy"])}, true, nil
		},
	}
}
