package cfnlocal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

const samplesDir = "../../../../shared/templates/aws-samples" // shared/ lies beside the repository

// sampleTemplates lists the shared AWS sample templates, skipping when they are absent.
func sampleTemplates(t *testing.T) ([]string, map[string]map[string]string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	if len(files) == 0 {
		t.Skipf("no sample templates in %s (the shared folder is absent on this machine)", samplesDir)
	}
	var params map[string]map[string]string
	if err := json.Unmarshal([]byte(readFixture(t, "sample-parameters.json")), &params); err != nil {
		t.Fatal(err)
	}
	return files, params
}

func TestEverySampleTemplateValidatesAndDeploys(t *testing.T) {
	files, params := sampleTemplates(t)
	e := newEnv(t, nil)
	ctx := context.Background()
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasPrefix(base, "ECS_FargateLaunchType_services") {
			continue // needs its cluster stack: TestECSClusterAndServiceLinkedByImports
		}
		t.Run(base, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.cfn.ValidateTemplate(ctx, &cloudformation.ValidateTemplateInput{TemplateBody: aws.String(string(b))}); err != nil {
				t.Fatalf("validate: %v", err)
			}
			name := strings.ToLower(strings.NewReplacer("_", "-", ".yaml", "").Replace(base))
			if _, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(string(b)),
				Parameters: sdkParams(params[base]), Capabilities: []types.Capability{types.CapabilityCapabilityNamedIam}}); err != nil {
				t.Fatalf("create: %v", err)
			}
			st := e.settle(name)
			if st.StackStatus != types.StackStatusCreateComplete {
				t.Fatalf("status %s (%s); events:\n%s", st.StackStatus, aws.ToString(st.StackStatusReason), strings.Join(eventLines(e.allEvents(name)), "\n"))
			}
			for _, o := range st.Outputs {
				if v := aws.ToString(o.OutputValue); v == "" || strings.Contains(v, knownAfterApply) {
					t.Errorf("output %s = %q", aws.ToString(o.OutputKey), v)
				}
			}
		})
	}
}

func TestECSClusterAndServiceLinkedByImports(t *testing.T) {
	files, _ := sampleTemplates(t)
	var cluster, service string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.Contains(f, "ECS_FargateLaunchType_clusters"):
			cluster = string(b)
		case strings.Contains(f, "ECS_FargateLaunchType_services"):
			service = string(b)
		}
	}
	if cluster == "" || service == "" {
		t.Skip("the ECS cluster/service sample pair is not in the shared folder")
	}
	ctx := context.Background()
	e := newEnv(t, nil)
	// the service template's StackName parameter defaults to "production"
	e.create("production", cluster, nil)
	if st := e.settle("production"); st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("cluster stack = %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	e.create("nginx", service, nil)
	if st := e.settle("nginx"); st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("service stack = %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	ex, err := e.cfn.ListExports(ctx, &cloudformation.ListExportsInput{})
	if err != nil {
		t.Fatal(err)
	}
	imported := 0
	for _, x := range ex.Exports {
		out, err := e.cfn.ListImports(ctx, &cloudformation.ListImportsInput{ExportName: x.Name})
		if err == nil && len(out.Imports) == 1 && out.Imports[0] == "nginx" {
			imported++
		}
	}
	if imported == 0 {
		t.Fatalf("no export of the cluster stack is imported by the service stack (%d exports)", len(ex.Exports))
	}
	if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("production")}); err != nil {
		t.Fatal(err)
	}
	if st := e.settle("production"); st.StackStatus != types.StackStatusCreateComplete ||
		!strings.Contains(aws.ToString(st.StackStatusReason), "cannot be deleted as it is in use by nginx") {
		t.Fatalf("cluster delete while imported = %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
}
