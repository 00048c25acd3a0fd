package awslocal

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
)

func (p *Place) topicProvider() cfnlocal.Provider {
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
			if _, err := p.sns.Subscribe(arn, k[0], k[1], nil); err != nil {
				return err
			}
		}
		return nil
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			name := lastSegment(r.PhysicalID)
			arn := p.sns.TopicARN(name)
			if p.sns.Exists(arn) {
				return "", nil, fmt.Errorf("%s already exists", name)
			}
			attrs := map[string]string{}
			for _, k := range []string{"DisplayName", "KmsMasterKeyId", "FifoTopic", "ContentBasedDeduplication", "TracingConfig", "SignatureVersion"} {
				if v, ok := r.Props[k]; ok {
					attrs[k] = text(v)
				}
			}
			if _, err := p.sns.CreateTopic(name, attrs, tagMap(r.Props["Tags"])); err != nil {
				return "", nil, err
			}
			return arn, nil, subscribe(arn, subscriptions(r.Props))
		},
		Update: func(_ context.Context, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			for _, k := range []string{"DisplayName", "KmsMasterKeyId", "TracingConfig", "SignatureVersion"} {
				if text(r.Props[k]) != text(old[k]) {
					if err := p.sns.SetTopicAttribute(r.PhysicalID, k, text(r.Props[k])); err != nil {
						return nil, err
					}
				}
			}
			want := subscriptions(r.Props)
			for k := range subscriptions(old) {
				if !want[k] {
					if arn := p.sns.SubscriptionARN(r.PhysicalID, k[0], k[1]); arn != "" {
						_ = p.sns.Unsubscribe(arn)
					}
				}
			}
			return nil, subscribe(r.PhysicalID, want)
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error { return p.sns.DeleteTopic(r.PhysicalID) },
		Read: func(_ context.Context, r cfnlocal.Resource) (map[string]any, bool, error) {
			attrs, err := p.sns.TopicAttributes(r.PhysicalID)
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

func (p *Place) topicPolicyProvider() cfnlocal.Provider {
	apply := func(topics []any, policy string) error {
		for _, t := range topics {
			if err := p.sns.SetTopicAttribute(text(t), "Policy", policy); err != nil {
				return err
			}
		}
		return nil
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, apply(list(r.Props["Topics"]), text(r.Props["PolicyDocument"]))
		},
		Update: func(_ context.Context, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			return nil, apply(list(r.Props["Topics"]), text(r.Props["PolicyDocument"]))
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			for _, t := range list(r.Props["Topics"]) {
				_ = p.sns.SetTopicAttribute(text(t), "Policy", "")
			}
			return nil
		},
	}
}

// subscriptionAttributes are the AWS::SNS::Subscription properties that are attributes.
var subscriptionAttributes = []string{"RawMessageDelivery", "FilterPolicy", "FilterPolicyScope", "RedrivePolicy"}

func (p *Place) subscriptionProvider() cfnlocal.Provider {
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
		// The topic may be in another region (the Region property says which; the ARN does
		// anyway), so each call goes to the SNS the ARN names.
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			topic := text(r.Props["TopicArn"])
			if region := text(r.Props["Region"]); region != "" && !strings.HasPrefix(topic, "arn:aws:sns:"+region+":") {
				return "", nil, fmt.Errorf("Invalid parameter: TopicArn %s is not in Region %s", topic, region)
			}
			sns, err := p.snsOf(topic)
			if err != nil {
				return "", nil, err
			}
			arn, err := sns.Subscribe(topic, text(r.Props["Protocol"]), text(r.Props["Endpoint"]), attrs(r.Props))
			return arn, nil, err
		},
		Update: func(_ context.Context, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			now := attrs(r.Props)
			for k := range attrs(old) {
				if _, kept := now[k]; !kept {
					now[k] = map[string]string{"RawMessageDelivery": "false", "FilterPolicyScope": "MessageAttributes"}[k]
				}
			}
			sns, err := p.snsOf(r.PhysicalID)
			if err != nil {
				return nil, err
			}
			for _, k := range sortedKeys(now) {
				if err := sns.SetSubscriptionAttribute(r.PhysicalID, k, now[k]); err != nil {
					return nil, err
				}
			}
			return nil, nil
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			sns, err := p.snsOf(r.PhysicalID)
			if err != nil {
				return err
			}
			return sns.Unsubscribe(r.PhysicalID)
		},
		Read: func(_ context.Context, r cfnlocal.Resource) (map[string]any, bool, error) {
			sns, err := p.snsOf(r.PhysicalID)
			if err != nil {
				return nil, false, nil
			}
			a, err := sns.SubscriptionAttributes(r.PhysicalID)
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
