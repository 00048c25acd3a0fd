package judge_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/loadavg"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/policy"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// BenchmarkJudge200Stacks judges a 200-stack plan (10 resources a stack, each with its
// change) with the whole starter library as the team's policies, through the path the
// deployer takes: Lambda's Invoke of the policy function in the emulator, which reads
// the policies and the bundle from the bucket, compiles and evaluates. It reports the
// median and 90th percentile of an invocation, the request's size (Lambda takes at most
// 6 MB), and /proc/loadavg, since the machine is shared.
func BenchmarkJudge200Stacks(b *testing.B) {
	v := newEnv(b)
	err := fs.WalkDir(policy.Library(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		body, err := fs.ReadFile(policy.Library(), p)
		if err == nil {
			v.put(b, "policies/"+p, body)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	v.put(b, "policies/config.json", []byte(`{"config": {"allowed_regions": ["us-east-1"], "home_region": "us-east-1"}}`))
	files := map[string]string{}
	var cfg strings.Builder
	cfg.WriteString("namespace: shop\nstacks:\n")
	doc := &plan.Document{ID: "p1", Deployment: "shop", Namespace: "shop", Status: plan.Planned,
		Run: &run.Run{ID: "p1", Deployment: "shop", Mode: run.ModePlan, Stacks: map[string]*run.Stack{}}}
	for i := range 200 {
		name := fmt.Sprintf("s%03d", i)
		fmt.Fprintf(&cfg, "  - name: %s\n    template_path: %s.yaml\n", name, name)
		var t strings.Builder
		t.WriteString("Resources:\n")
		ps := plan.Stack{Name: name, StackName: "shop-" + name, Action: plan.Update}
		for r := range 10 {
			id := fmt.Sprintf("R%d", r)
			switch r % 3 {
			case 0:
				fmt.Fprintf(&t, "  %s:\n    Type: AWS::S3::Bucket\n    Properties:\n      BucketName: b-%s-%d\n", id, name, r)
			case 1:
				fmt.Fprintf(&t, "  %s:\n    Type: AWS::SQS::Queue\n    DeletionPolicy: Retain\n    UpdateReplacePolicy: Retain\n", id)
			default:
				fmt.Fprintf(&t, "  %s:\n    Type: AWS::SNS::Topic\n", id)
			}
			ps.Changes = append(ps.Changes, plan.Change{LogicalID: id, Type: "AWS::SNS::Topic", Action: "Modify", Replacement: "False", Details: []string{"Properties TopicName (recreation: Never, Static)"}})
		}
		files[name+".yaml"] = t.String()
		doc.Stacks = append(doc.Stacks, ps)
		doc.Run.Stacks[name] = &run.Stack{Name: name, StackName: "shop-" + name, Intent: run.IntentDeploy, Parameters: map[string]string{"Env": "prod"}}
	}
	files["cairn.yaml"] = cfg.String()
	doc.Bundle = v.upload(b, "plans/shop.zip", files)
	body, err := json.Marshal(doc)
	if err != nil {
		b.Fatal(err)
	}
	req := verdict.Request{Kind: verdict.Plan, Deployment: "shop", PlanID: "p1", RunID: "p1", Time: at, Plan: body}
	reqBytes, _ := json.Marshal(req)
	var took []time.Duration
	results := 0
	for b.Loop() {
		start := time.Now()
		a := v.invoke(b, req)
		took = append(took, time.Since(start))
		if a.Error != "" {
			b.Fatal(a.Error)
		}
		results = len(a.Results)
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "ms-p90")
	b.ReportMetric(float64(len(reqBytes))/1e6, "MB-request")
	b.Logf("200 stacks, 2000 resources, %d results; request %d bytes; %d invocations: p50 %v, p90 %v; loadavg %s",
		results, len(reqBytes), len(took), took[len(took)/2].Round(time.Millisecond), took[len(took)*9/10].Round(time.Millisecond), loadavg.Read())
}
