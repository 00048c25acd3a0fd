package config

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/target"
)

// exampleApp is the example CDK app's synthesized assembly.
const exampleApp = "../../testdata/cdkapp/assemblies/base"

// TestLoadCloudAssembly loads a cdk.out alone as a bundle: each stack of the assembly (of
// its stage too) is a stack named by its display name, with the assembly's stack name,
// template, environment (the region, and CDK's bootstrap deploy and execution roles),
// tags and dependencies; the namespace is the deployment's name.
func TestLoadCloudAssembly(t *testing.T) {
	c := load(t, exampleApp, LoadOptions{Deployment: "orders"})
	if c.Namespace != "orders" || c.PersistentGraphKey != "orders" || c.File != filepath.Join(exampleApp, "manifest.json") {
		t.Errorf("namespace %q, graph key %q, file %s", c.Namespace, c.PersistentGraphKey, c.File)
	}
	var names []string
	for _, s := range c.Stacks {
		names = append(names, s.Name)
	}
	if want := []string{"Audit", "Dev/Data", "Dev/Service"}; !slices.Equal(names, want) {
		t.Fatalf("stacks %v, want %v", names, want)
	}
	svc := c.Stack("Dev/Service")
	wantTarget := target.Spec{Region: "us-east-1", RoleARN: "arn:aws:iam::000000000000:role/cdk-hnb659fds-deploy-role-000000000000-us-east-1",
		ServiceRole: "arn:aws:iam::000000000000:role/cdk-hnb659fds-cfn-exec-role-000000000000-us-east-1"}
	if svc.StackName != "Dev-Service" || svc.TemplatePath != "assembly-Dev/DevServiceED593074.template.json" || svc.Template == nil ||
		svc.Target != wantTarget || !slices.Equal(svc.Requires, []string{"Dev/Data"}) || svc.Tags["app"] != "orders" {
		t.Errorf("Dev/Service %+v", svc)
	}
	// Granted what its template needs (the function's role), as any stack.
	if !slices.Equal(svc.Capabilities, []string{"CAPABILITY_IAM"}) || !svc.CapabilitiesFromTemplate {
		t.Errorf("Dev/Service capabilities %v (from template %v)", svc.Capabilities, svc.CapabilitiesFromTemplate)
	}
	if svc.Assembly == nil || svc.Assembly.Path != "Dev/Service" || len(svc.Assembly.Files) != 2 {
		t.Errorf("Dev/Service's assembly facts %+v", svc.Assembly)
	}
	audit := c.Stack("Audit")
	if audit.StackName != "orders-audit" || audit.Target.Account() != "111111111111" || audit.Target.Region != "eu-west-1" {
		t.Errorf("Audit %+v", audit)
	}
	g, err := c.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if deps := g.Dependencies("Dev/Service"); !slices.Equal(deps, []string{"Dev/Data"}) {
		t.Errorf("the graph's Dev/Service depends on %v", deps)
	}
}

// withConfig copies the example assembly to DIR/cdk.out beside a cairn.yaml (and other files).
func withConfig(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "cdk.out"), os.DirFS(exampleApp)); err != nil {
		t.Fatal(err)
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLoadAssemblyWithConfig: cairn.yaml beside the assembly adds what CDK does not say —
// namespace, graph key, protection, deletion policy, drift ignores, stack options — and may
// add tags, parameters and dependencies to the assembly's.
func TestLoadAssemblyWithConfig(t *testing.T) {
	dir := withConfig(t, map[string]string{
		"cairn.yaml": `assembly: cdk.out
namespace: orders
persistent_graph_key: orders-main
deletion_policy: {max_deletions: 1}
drift: {ignore: [Dev/*]}
tags: {cost-center: "4711"}
stacks:
  - name: Dev/Data
    protected: true
    termination_protection: true
    stack_policy_path: policies/data.json
    tags: {app: orders-data, tier: storage}
  - name: Dev/Service
    timeout_in_minutes: 15
    requires: [Audit]
`,
		"policies/data.json": `{"Statement":[{"Effect":"Deny","Action":"Update:Replace","Principal":"*","Resource":"*"}]}`,
	})
	c := load(t, dir, LoadOptions{Deployment: "orders-prod"})
	if c.Namespace != "orders" || c.PersistentGraphKey != "orders-main" || c.DeletionPolicy.MaxDeletions != 1 || !slices.Equal(c.Drift.Ignore, []string{"Dev/*"}) {
		t.Errorf("config %+v", c)
	}
	data := c.Stack("Dev/Data")
	if !data.Protected || !data.TerminationProtection || len(data.Options.StackPolicy) == 0 {
		t.Errorf("Dev/Data %+v", data)
	}
	if want := map[string]string{"app": "orders-data", "tier": "storage", "cost-center": "4711"}; !maps.Equal(data.Tags, want) {
		t.Errorf("Dev/Data tags %v, want %v", data.Tags, want)
	}
	svc := c.Stack("Dev/Service")
	if svc.Options.TimeoutInMinutes != 15 || !slices.Equal(svc.Requires, []string{"Dev/Data", "Audit"}) || svc.Protected {
		t.Errorf("Dev/Service %+v", svc)
	}
	if svc.Assembly == nil || c.Stack("Audit").Assembly == nil {
		t.Error("stacks lost their assembly facts")
	}
}

// TestLoadAssemblyConfigErrors: every problem of a cairn.yaml beside an assembly at once,
// located in it: what the assembly decides, a stack it does not have, a key no stack has,
// an assembly key naming no assembly.
func TestLoadAssemblyConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name, config string
		want         []string
	}{
		{"stack keys", `assembly: cdk.out
stacks:
  - name: Dev/Data
    stack_name: orders-data
    region: eu-west-1
  - name: Dev/Servic
    protected: true
  - name: Audit
    protectd: true
`, []string{
			`cairn.yaml:4:5: stacks[0].stack_name: the assembly decides stack_name for its stacks: change it in the CDK app and synthesize again`,
			`cairn.yaml:5:5: stacks[0].region: the assembly decides region for its stacks`,
			`cairn.yaml:6:11: stacks[1].name: the assembly has no stack "Dev/Servic" (did you mean "Dev/Service"?): its stacks are Audit, Dev/Data, Dev/Service`,
			`cairn.yaml:9:5: stacks[1].protectd: unknown key "protectd" (did you mean "protected"?)`,
		}},
		{"assembly outside", "assembly: ../cdk.out\n", []string{`cairn.yaml:1:11: assembly: "../cdk.out" leaves the bundle`}},
		{"no assembly there", "assembly: build\n", []string{`cairn.yaml:1:11: assembly: build holds no cloud assembly (no manifest.json): run cdk synth first`}},
		{"not a list", "assembly: cdk.out\nstacks: {name: Audit}\n", []string{`cairn.yaml:2:9: stacks: must be a list of the assembly's stacks`}},
		{"lookups checked", "assembly: cdk.out\nstacks:\n  - name: Audit\n    tags: {owner: '${var who}'}\n", []string{`cairn.yaml:4:19: stacks[0].tags.owner: ${var who}: unknown variable who`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := withConfig(t, map[string]string{"cairn.yaml": c.config})
			b, err := bundle.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = LoadOptions{Deployment: "orders"}.Load(b)
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load = %v, want Errors", err)
			}
			got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("errors:\n%s\nwant one saying\n%s", got, w)
				}
			}
		})
	}
}
