package config

import (
	"regexp"
	"strings"
	"testing"
)

// TestNamespaceAllowList: with an allow-list, a namespace outside it and stack names not
// named NAMESPACE-* of an allowed namespace are errors located at their keys; without one,
// any namespace loads.
func TestNamespaceAllowList(t *testing.T) {
	const stacks = "stacks:\n  - {name: app, template_path: templates/app.yaml, parameters: {Name: a}}\n"
	tests := []struct {
		name, cfg, allowed string
		want               []string
	}{
		{"allowed", "namespace: shop\n" + stacks, "shop,web", nil},
		{"no list allows every namespace", "namespace: other\n" + stacks, "", nil},
		{"namespace outside the list", "namespace: other\n" + stacks, "shop", []string{
			`1:12: namespace: namespace "other" is not one this cairn may manage (allowed: shop): use one of those, or have cairn deployed with it in the CDK context cairn:namespaces`,
		}},
		{"stack_name outside the namespaces", "namespace: shop\nstacks:\n  - {name: app, stack_name: finance-ledger, template_path: templates/app.yaml, parameters: {Name: a}}\n  - {name: web, stack_name: web-front, template_path: templates/app.yaml, parameters: {Name: b}}\n", "shop,web", []string{
			`3:29: stacks[0].stack_name: stack name "finance-ledger" is outside the namespaces this cairn may manage: it must be named shop-* or web-*`,
		}},
		{"a namespace prefix is not a namespace", "namespace: shop\nstacks:\n  - {name: app, stack_name: shopping-app, template_path: templates/app.yaml, parameters: {Name: a}}\n", "shop", []string{
			`3:29: stacks[0].stack_name: stack name "shopping-app" is outside the namespaces this cairn may manage: it must be named shop-*`,
		}},
		{"another delimiter leaves the namespace", "namespace: shop\nnamespace_delimiter: x\n" + stacks, "shop", []string{
			`4:12: stacks[0].name: stack name "shopxapp" is outside the namespaces this cairn may manage: it must be named shop-*`,
		}},
		{"no stacks hides no other error", "namespace: other\nmax_concurrency: 0\n", "shop", []string{
			`1:1: stacks: missing: a config needs a list of stacks`,
			`1:12: namespace: namespace "other" is not one this cairn may manage (allowed: shop): use one of those, or have cairn deployed with it in the CDK context cairn:namespaces`,
			`2:18: max_concurrency: must be at least 1, got 0`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, err := ParseNamespaces(tt.allowed)
			if err != nil {
				t.Fatal(err)
			}
			_, err = LoadOptions{Namespaces: ns}.Load(fuzzBundle(t, []byte(tt.cfg)))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			checkErrors(t, err, "cairn.yaml", tt.want)
		})
	}
}

func TestParseNamespaces(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{in: "", want: "every namespace"},
		{in: " shop, web ,shop", want: "shop, web"},
		{in: "shop,9lives", err: `namespace "9lives" in "shop,9lives": use letters, digits and hyphens, starting with a letter`},
	} {
		ns, err := ParseNamespaces(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || ns.String() != tt.want {
			t.Errorf("%q: %q, %v; want %q", tt.in, ns, err, tt.want)
		}
	}
}

func TestTakeOverGraphFrom(t *testing.T) {
	const stacks = "stacks:\n  - {name: app, template_path: templates/app.yaml, parameters: {Name: a}}\n"
	c, err := Load(fuzzBundle(t, []byte("namespace: shop\ntake_over_graph_from: shop-old\n"+stacks)))
	if err != nil || c.TakeOverGraphFrom != "shop-old" {
		t.Fatalf("take_over_graph_from: %q, %v", c.TakeOverGraphFrom, err)
	}
	_, err = Load(fuzzBundle(t, []byte("namespace: shop\ntake_over_graph_from: ../x\n"+stacks)))
	checkErrors(t, err, "cairn.yaml", []string{`2:23: take_over_graph_from: "../x" is not a deployment name: use letters, digits, '-', '_' and '.'`})
}

// TestHandOverGraphTo: hand_over_graph_to names the deployment the owner consents may take
// its graph over, checked as take_over_graph_from is.
func TestHandOverGraphTo(t *testing.T) {
	const stacks = "stacks:\n  - {name: app, template_path: templates/app.yaml, parameters: {Name: a}}\n"
	c, err := Load(fuzzBundle(t, []byte("namespace: shop\nhand_over_graph_to: shop-new\n"+stacks)))
	if err != nil || c.HandOverGraphTo != "shop-new" {
		t.Fatalf("hand_over_graph_to: %q, %v", c.HandOverGraphTo, err)
	}
	_, err = Load(fuzzBundle(t, []byte("namespace: shop\nhand_over_graph_to: a/b\n"+stacks)))
	checkErrors(t, err, "cairn.yaml", []string{`2:21: hand_over_graph_to: "a/b" is not a deployment name: use letters, digits, '-', '_' and '.'`})
}

// TestSSMPathsPerNamespace: with CAIRN_SSM_PATHS, a ${ssm} lookup (of a parameter or a
// tag, at any depth) reading outside the paths of the config's namespace is an error at
// the lookup; "*" holds paths every namespace may read; without the list any name loads.
func TestSSMPathsPerNamespace(t *testing.T) {
	const paths = `{"shop": ["/shop/*", "/ops/db/password"], "*": ["/shared/*"], "web": ["/web/*"]}`
	tests := []struct {
		name, value, paths string
		want               []string
	}{
		{"own path", "${ssm /shop/db/host}", paths, nil},
		{"a version selector", "${ssm /shop/db/host:3}", paths, nil},
		{"one named parameter", "${ssm /ops/db/password}", paths, nil},
		{"every namespace's path", "${ssm /shared/zones}", paths, nil},
		{"no list reads anything", "${ssm /web/secret}", "", nil},
		{"another namespace's path", "x-${ssm /web/secret}", paths, []string{
			`4:71: stacks[0].parameters.Name: SSM parameter /web/secret is outside the Parameter Store paths namespace shop may read (/ops/db/password, /shared/*, /shop/*): move the parameter under one of them, or have cairn deployed with the path in the CDK context cairn:ssmPaths for namespace shop`}},
		{"a sibling of the named one", "${ssm /ops/db/password2}", paths, []string{"SSM parameter /ops/db/password2 is outside"}},
		{"a path that leaves its folder", "${ssm /shop/../web/secret}", paths, []string{"SSM parameter /shop/../web/secret is outside"}},
		{"a name without a slash", "${ssm secret}", paths, []string{"SSM parameter secret is outside"}},
		{"nested in another lookup", "${join ,::${ssm /web/a}::b}", paths, []string{"SSM parameter /web/a is outside"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseSSMPaths(tt.paths)
			if err != nil {
				t.Fatal(err)
			}
			cfg := "namespace: shop\ntags: {zone: z}\nstacks:\n  - {name: app, template_path: templates/app.yaml, parameters: {Name: \"" + tt.value + "\"}}\n"
			_, err = LoadOptions{SSMPaths: p}.Load(fuzzBundle(t, []byte(cfg)))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want[0]) {
				t.Fatalf("Load: %v, want %q", err, tt.want[0])
			}
		})
	}
	// A tag's lookup too.
	p, _ := ParseSSMPaths(paths)
	_, err := LoadOptions{SSMPaths: p}.Load(fuzzBundle(t, []byte("namespace: web\ntags: {owner: \"${ssm /shop/owner}\"}\nstacks:\n  - {name: app, template_path: templates/app.yaml, parameters: {Name: a}}\n  - {name: b, template_path: templates/app.yaml, parameters: {Name: a}}\n")))
	if err == nil || strings.Count(err.Error(), "SSM parameter /shop/owner is outside the Parameter Store paths namespace web may read (/shared/*, /web/*)") != 1 {
		t.Errorf("a config tag reading another namespace's parameter: %v", err)
	}
	for _, bad := range []string{"[1]", `{"shop": ["/*"]}`, `{"shop": ["shop/*"]}`, `{"shop": ["/a/*/b"]}`} {
		if _, err := ParseSSMPaths(bad); err == nil {
			t.Errorf("ParseSSMPaths(%s) accepted", bad)
		}
	}
}

// TestValidStackName checks the stack name check against CloudFormation's pattern.
func TestValidStackName(t *testing.T) {
	pattern := regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]*$`)
	for _, name := range []string{"", "a", "Z", "app", "shop-app-2", "a-", "a--b", "-a", "1a", "a_b", "a.b", "a b",
		"a\n", "\na", "é", "aé", "a/b", "A9-z", "stack-00001", "z" + string(rune(0))} {
		if got, want := validStackName(name), pattern.MatchString(name); got != want {
			t.Errorf("validStackName(%q) = %v, want %v", name, got, want)
		}
	}
}
