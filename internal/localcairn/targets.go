package localcairn

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cairn-dev/cairn/internal/target"
)

// targetGoldenName is the synthesized target stack: what infra/ makes for each of
// cairn:targets, synthesized with cdk.json's context, cairn:home 000000000000:us-east-1 and
// one target (its template names the target's account and region only through pseudo
// parameters, so it serves every target). `make synth` rewrites it.
const targetGoldenName = "internal/localcairn/target.template.json"

//go:embed target.template.json
var targetGolden []byte

// The home account and region the target golden template was synthesized for.
const (
	goldenHomeAccount = "000000000000"
	goldenHomeRegion  = "us-east-1"
)

// TargetTemplate returns the target stack's template for cairn in o.Home managing
// o.Namespaces, as `cdk synth` with that context would make it.
func TargetTemplate(o Options) (string, error) {
	o = o.withDefaults()
	var doc map[string]any
	if err := json.Unmarshal(targetGolden, &doc); err != nil {
		return "", fmt.Errorf("%s is not JSON: %v (run make synth)", targetGoldenName, err)
	}
	// The namespaces: the deploy role's stack ARNs and the forwarding rule's prefixes.
	resources, _ := doc["Resources"].(map[string]any)
	var roles, rules int
	for id, v := range resources {
		r, _ := v.(map[string]any)
		props, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::IAM::Policy":
			for _, st := range asList(dig(props, "PolicyDocument", "Statement")) {
				m, _ := st.(map[string]any)
				if m["Sid"] != "ManagedStacks" {
					continue
				}
				res, err := perNamespace(m["Resource"], "-*/*", o.Namespaces)
				if len(o.Namespaces) == 0 {
					res, err = withStackName(m["Resource"], "*/*") // every namespace
				}
				if err != nil {
					return "", fmt.Errorf("%s: %s: %w", targetGoldenName, id, err)
				}
				m["Resource"] = res
				roles++
			}
		case "AWS::Events::Rule":
			detail, _ := dig(props, "EventPattern", "detail").(map[string]any)
			prefixes, _ := detail["stack-id"].([]any)
			if len(prefixes) == 0 {
				continue
			}
			p, _ := prefixes[0].(map[string]any)
			var out []any
			for _, ns := range o.Namespaces {
				c, err := renamespace(p, ns)
				if err != nil {
					return "", fmt.Errorf("%s: rule %s: %w", targetGoldenName, id, err)
				}
				out = append(out, c)
			}
			if len(o.Namespaces) == 0 {
				// Every namespace: every stack of the target.
				c, err := withStackName(p["prefix"], "")
				if err != nil {
					return "", fmt.Errorf("%s: rule %s: %w", targetGoldenName, id, err)
				}
				out = append(out, map[string]any{"prefix": c})
			}
			detail["stack-id"] = out
			rules++
		}
	}
	if roles != 1 || rules != 1 {
		return "", fmt.Errorf("%s has %d deploy role policies and %d forwarding rules; local mode expects 1 and 1: update internal/localcairn with infra/targets.go", targetGoldenName, roles, rules)
	}
	b, _ := json.Marshal(doc)
	s := string(b)
	// cairn's home: its account and region in the trusted role ARNs, the bus, the bucket.
	home := o.Home.Account + ":" + o.Home.Region
	for _, r := range []struct{ from, to string }{
		{"(" + goldenHomeAccount + ":" + goldenHomeRegion + ")", "(" + home + ")"},
		{":iam::" + goldenHomeAccount + ":role/" + target.DeployerRoleName(goldenHomeRegion), ":iam::" + o.Home.Account + ":role/" + target.DeployerRoleName(o.Home.Region)},
		{":iam::" + goldenHomeAccount + ":role/" + target.DriftRoleName(goldenHomeRegion), ":iam::" + o.Home.Account + ":role/" + target.DriftRoleName(o.Home.Region)},
		{":iam::" + goldenHomeAccount + ":root", ":iam::" + o.Home.Account + ":root"},
		{":events:" + goldenHomeRegion + ":" + goldenHomeAccount + ":event-bus/default", ":events:" + o.Home.Region + ":" + o.Home.Account + ":event-bus/default"},
		{":sqs:" + goldenHomeRegion + ":" + goldenHomeAccount + ":*", ":sqs:" + o.Home.Region + ":" + o.Home.Account + ":*"},
		{"cairn-" + goldenHomeAccount + "-" + goldenHomeRegion + "/", "cairn-" + o.Home.Account + "-" + o.Home.Region + "/"},
		{`"` + goldenHomeAccount + `"`, `"` + o.Home.Account + `"`},
	} {
		s = strings.ReplaceAll(s, r.from, r.to)
	}
	if strings.Contains(s, goldenHomeAccount) && o.Home.Account != goldenHomeAccount {
		return "", fmt.Errorf("%s names cairn's home account where local mode does not expect it: update internal/localcairn with infra/targets.go", targetGoldenName)
	}
	return s, nil
}

// perNamespace turns the Fn::Join ARN of the golden's one namespace (ending in
// ":stack/NS"+suffix) into one per namespace: a single value for one, a list for more, as
// the CDK renders them.
func perNamespace(v any, suffix string, namespaces []string) (any, error) {
	var out []any
	for _, ns := range namespaces {
		c, err := withStackName(v, ns+suffix)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

// renamespace copies a {"prefix": Fn::Join} matcher for namespace ns.
func renamespace(matcher map[string]any, ns string) (any, error) {
	c, err := withStackName(matcher["prefix"], ns+"-")
	if err != nil {
		return nil, err
	}
	return map[string]any{"prefix": c}, nil
}

// withStackName copies an Fn::Join ARN whose last part ends in ":stack/..." with what
// follows ":stack/" replaced.
func withStackName(v any, rest string) (any, error) {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	join, _ := m["Fn::Join"].([]any)
	if len(join) != 2 {
		return nil, errors.New("the stack ARN is not an Fn::Join")
	}
	parts, _ := join[1].([]any)
	if len(parts) == 0 {
		return nil, errors.New("the stack ARN has no parts")
	}
	last, _ := parts[len(parts)-1].(string)
	i := strings.LastIndex(last, ":stack/")
	if i < 0 {
		return nil, fmt.Errorf("the stack ARN ends in %q, not :stack/...", last)
	}
	parts[len(parts)-1] = last[:i] + ":stack/" + rest
	return m, nil
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// single renders a list as the CDK renders IAM values: one element alone.
func single(l []any) any {
	if len(l) == 1 {
		return l[0]
	}
	return l
}

func partitionJoin(rest string) any {
	return map[string]any{"Fn::Join": []any{"", []any{"arn:", map[string]any{"Ref": "AWS::Partition"}, rest}}}
}

// sortedTargets are o.Targets in the order infra's config sorts them.
func sortedTargets(ts []target.Target) []target.Target {
	out := slices.Clone(ts)
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// otherAccounts are the targets' accounts other than home, sorted, once each.
func otherAccounts(home target.Target, ts []target.Target) []string {
	var out []string
	for _, t := range ts {
		if t.Account != home.Account && !slices.Contains(out, t.Account) {
			out = append(out, t.Account)
		}
	}
	sort.Strings(out)
	return out
}

// addTargets adds to cairn's template what infra's wireTargets adds for o.Targets (see
// infra/targets.go): bus policies, ports subscriptions and the queue policy statement
// admitting their topics, the deployer's and drift's right to assume the deploy roles, the
// bucket policy statement letting other accounts' deploy roles read templates, and the
// targets' stacks in the event rules.
func addTargets(doc map[string]any, o Options) error {
	if len(o.Targets) == 0 {
		return nil
	}
	ts := sortedTargets(o.Targets)
	resources, _ := doc["Resources"].(map[string]any)
	ids := map[string]string{} // construct id -> logical id
	for id := range resources {
		if m := cdkID.FindStringSubmatch(id); m != nil {
			ids[m[1]] = id
		}
	}
	for _, need := range []string{"PortsQueue", "PortsQueuePolicy", "Bucket", "BucketPolicy", "DeployerRole", "DeployerRoleDefaultPolicy", "DriftRoleDefaultPolicy", "StackEvents", "DriftEvents"} {
		if ids[need] == "" {
			return fmt.Errorf("%s has no %s: update internal/localcairn with infra/stack.go", goldenName, need)
		}
	}
	others := otherAccounts(o.Home, ts)
	for _, a := range others {
		resources["TargetEvents"+a] = map[string]any{"Type": "AWS::Events::EventBusPolicy", "Properties": map[string]any{
			"EventBusName": "default", "StatementId": "cairn-target-" + a,
			"Statement": map[string]any{"Action": "events:PutEvents", "Effect": "Allow", "Sid": "cairn-target-" + a,
				"Principal": map[string]any{"AWS": partitionJoin(":iam::" + a + ":root")},
				"Resource": map[string]any{"Fn::Join": []any{"", []any{"arn:", map[string]any{"Ref": "AWS::Partition"}, ":events:",
					map[string]any{"Ref": "AWS::Region"}, ":", map[string]any{"Ref": "AWS::AccountId"}, ":event-bus/default"}}}},
		}}
	}
	var topics, roles, foreign []any
	for _, t := range ts {
		topic := partitionJoin(":sns:" + t.Region + ":" + t.Account + ":" + target.PortsTopicName)
		resources["TargetPorts"+t.Account+strings.ReplaceAll(t.Region, "-", "")] = map[string]any{"Type": "AWS::SNS::Subscription", "Properties": map[string]any{
			"Endpoint": map[string]any{"Fn::GetAtt": []any{ids["PortsQueue"], "Arn"}}, "Protocol": "sqs", "Region": t.Region, "TopicArn": topic}}
		topics = append(topics, topic)
		role := partitionJoin(":iam::" + t.Account + ":role/" + target.DeployRoleName(t.Region))
		roles = append(roles, role)
		if t.Account != o.Home.Account {
			foreign = append(foreign, role)
		}
	}
	appendStatement := func(id string, st map[string]any) {
		doc := dig(resources[id], "Properties", "PolicyDocument").(map[string]any)
		doc["Statement"] = append(asList(doc["Statement"]), st)
	}
	appendStatement(ids["PortsQueuePolicy"], map[string]any{"Action": "sqs:SendMessage", "Effect": "Allow", "Sid": "TargetPortsTopics",
		"Condition": map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": topics}},
		"Principal": map[string]any{"Service": "sns.amazonaws.com"}, "Resource": map[string]any{"Fn::GetAtt": []any{ids["PortsQueue"], "Arn"}}})
	appendStatement(ids["DeployerRoleDefaultPolicy"], map[string]any{"Action": "sts:AssumeRole", "Effect": "Allow", "Resource": single(roles), "Sid": "DeployerAssumeTargetRoles"})
	appendStatement(ids["DriftRoleDefaultPolicy"], map[string]any{"Action": "sts:AssumeRole", "Effect": "Allow", "Resource": single(roles), "Sid": "DriftAssumeTargetRoles"})
	// The assets buckets of the targets in cairn's own account, which the deployer writes
	// with its own credentials.
	var buckets, assets, findings []any
	for _, t := range ts {
		if t.Account == o.Home.Account {
			buckets = append(buckets, partitionJoin(":s3:::"+t.AssetsBucketName()))
			assets = append(assets, partitionJoin(":s3:::"+t.AssetsBucketName()+"/assets/*"))
			findings = append(findings, "Resource::arn:<AWS::Partition>:s3:::"+t.AssetsBucketName()+"/assets/*")
		}
	}
	if len(assets) > 0 {
		appendStatement(ids["DeployerRoleDefaultPolicy"], map[string]any{"Action": []any{"s3:GetObject", "s3:PutObject"}, "Effect": "Allow", "Resource": single(assets), "Sid": "DeployerStoreTargetAssets"})
		appendStatement(ids["DeployerRoleDefaultPolicy"], map[string]any{"Action": "s3:ListBucket", "Effect": "Allow", "Resource": single(buckets), "Sid": "DeployerListTargetAssets"})
		for _, id := range []string{ids["DeployerRole"], ids["DeployerRoleDefaultPolicy"]} {
			nag, _ := dig(resources[id], "Metadata", "cdk_nag").(map[string]any)
			if nag == nil {
				return fmt.Errorf("%s: %s has no cdk_nag metadata: update internal/localcairn with infra/targets.go", goldenName, id)
			}
			nag["rules_to_suppress"] = append([]any{map[string]any{"applies_to": findings, "id": "AwsSolutions-IAM5",
				"reason": "Packaged artifacts (Lambda code, definitions) are stored content-addressed under assets/ (the file name is the artifact's SHA-256, chosen at deploy time), so the prefix ends in a wildcard."}},
				asList(nag["rules_to_suppress"])...)
		}
	}
	if len(foreign) > 0 {
		appendStatement(ids["BucketPolicy"], map[string]any{"Action": "s3:GetObject", "Effect": "Allow", "Sid": "TargetTemplates",
			"Principal": map[string]any{"AWS": single(foreign)},
			"Resource":  map[string]any{"Fn::Join": []any{"", []any{map[string]any{"Fn::GetAtt": []any{ids["Bucket"], "Arn"}}, "/templates/*"}}}})
	}
	for _, rule := range []string{ids["StackEvents"], ids["DriftEvents"]} {
		pattern := dig(resources[rule], "Properties", "EventPattern").(map[string]any)
		accounts := asList(pattern["account"])
		for _, a := range others {
			accounts = append(accounts, a)
		}
		pattern["account"] = accounts
		detail := pattern["detail"].(map[string]any)
		var prefixes []any
		for _, p := range asList(detail["stack-id"]) {
			prefixes = append(prefixes, p)
			stacks := ""
			if dig(p, "anything-but") == nil { // every namespace: every stack of the target
				ns, err := namespaceOf(p)
				if err != nil {
					return fmt.Errorf("%s: rule %s: %w", goldenName, rule, err)
				}
				stacks = ns + "-"
			}
			for _, t := range ts {
				prefixes = append(prefixes, map[string]any{"prefix": partitionJoin(":cloudformation:" + t.Region + ":" + t.Account + ":stack/" + stacks)})
			}
		}
		detail["stack-id"] = prefixes
	}
	return nil
}

// namespaceOf reads NS of a {"prefix": Fn::Join [... ":stack/NS-"]} matcher.
func namespaceOf(matcher any) (string, error) {
	join, _ := dig(matcher, "prefix", "Fn::Join").([]any)
	if len(join) != 2 {
		return "", errors.New("the stack-id matcher is not a prefix of an Fn::Join")
	}
	parts, _ := join[1].([]any)
	last, _ := parts[len(parts)-1].(string)
	_, ns, ok := strings.Cut(last, ":stack/")
	if !ok || !strings.HasSuffix(ns, "-") {
		return "", fmt.Errorf("the stack-id prefix ends in %q, not :stack/NAMESPACE-", last)
	}
	return strings.TrimSuffix(ns, "-"), nil
}
