package deployer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/target"
)

// Templates of TestRemovedImporterIsDeletedFirst, and the role of its other account.
const (
	otherRole = "arn:aws:iam::111111111111:role/cairn-deploy-us-east-1"
	exporterX = `Resources:
  Topic: {Type: AWS::SNS::Topic}
Outputs:
  Arn:
    Value: !Ref Topic
    Export: {Name: shop-X}
`
	exporterDropped = `Resources:
  Topic: {Type: AWS::SNS::Topic}
Outputs:
  Arn:
    Value: !Ref Topic
`
	exporterReplaced = `Resources:
  Topic:
    Type: AWS::SNS::Topic
    Properties: {TopicName: shop-replaced}
Outputs:
  Arn:
    Value: !Ref Topic
    Export: {Name: shop-X}
`
	exporterRenamed = `Resources:
  Topic: {Type: AWS::SNS::Topic}
Outputs:
  Arn:
    Value: !Ref Topic
    Export: {Name: shop-Y}
`
	importerOf = `Resources:
  Param:
    Type: AWS::SSM::Parameter
    Properties: {Type: String, Value: !ImportValue %s}
`
	nestingRoot = `Resources:
  Child:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: ./child.yaml
`
)

// TestRemovedImporterIsDeletedFirst: an app removes stack importer, which imported
// exporter's export shop-X, and changes exporter so that CloudFormation would refuse its
// update while shop-X is imported (the export dropped, its value changed by a
// replacement, renamed). Through a push and through plan → approve alike, the importer is
// deleted first, then the exporter is updated, and the run succeeds; a new stack
// importing the renamed export deploys after the exporter; an importer nested in a
// removed stack counts as that stack's; an importer of another region's shop-X (exports
// are regional, and of one account) orders only the stacks of its account and region.
func TestRemovedImporterIsDeletedFirst(t *testing.T) {
	imports := func(name string) string { return fmt.Sprintf(importerOf, name) }
	for _, tc := range []struct {
		name    string
		v1, v2  map[string]string
		regions bool
		// first's deletion finished before then was executed; after started only once
		// before finished.
		first, then   string
		before, after string
		// waits: the removed stacks each stack waits for (run.Stack.After), where said.
		waits map[string][]string
		// olderGraph: the graph is as an older cairn wrote it, without the imports.
		olderGraph bool
		// refused: the run is refused, saying this, and changes nothing.
		refused string
	}{
		{name: "exporter drops the export",
			v1: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: importer, template_path: importer.yaml, requires: [exporter]}\n",
				"exporter.yaml": exporterX, "importer.yaml": imports("shop-X")},
			v2:    map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n", "exporter.yaml": exporterDropped},
			first: "importer", then: "exporter"},
		{name: "exporter drops the export; the graph of an older cairn, without imports", olderGraph: true,
			v1: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: importer, template_path: importer.yaml, requires: [exporter]}\n",
				"exporter.yaml": exporterX, "importer.yaml": imports("shop-X")},
			v2:    map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n", "exporter.yaml": exporterDropped},
			first: "importer", then: "exporter"},
		{name: "exporter replaces what it exports",
			v1: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: importer, template_path: importer.yaml, requires: [exporter]}\n",
				"exporter.yaml": exporterX, "importer.yaml": imports("shop-X")},
			v2:    map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n", "exporter.yaml": exporterReplaced},
			first: "importer", then: "exporter"},
		{name: "export renamed, a new stack imports the new name",
			v1: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: importer, template_path: importer.yaml, requires: [exporter]}\n",
				"exporter.yaml": exporterX, "importer.yaml": imports("shop-X")},
			v2: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: newcomer, template_path: newcomer.yaml}\n",
				"exporter.yaml": exporterRenamed, "newcomer.yaml": imports("shop-Y")},
			first: "importer", then: "exporter", before: "exporter", after: "newcomer"},
		{name: "both removed; created in the order of the import alone (no requires)",
			v1: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: importer, template_path: importer.yaml}\n  - {name: keep, template_path: keep.yaml}\n",
				"exporter.yaml": exporterX, "importer.yaml": imports("shop-X"), "keep.yaml": exporterDropped},
			v2:     map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: keep, template_path: keep.yaml}\n", "keep.yaml": exporterDropped},
			before: "importer", after: "exporter"},
		{name: "an importer that stays stops importing: it updates before the exporter drops the export",
			v1: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: importer, template_path: importer.yaml, requires: [exporter]}\n",
				"exporter.yaml": exporterX, "importer.yaml": imports("shop-X")},
			v2: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: importer, template_path: importer.yaml}\n",
				"exporter.yaml": exporterDropped, "importer.yaml": exporterDropped},
			before: "importer", after: "exporter"},
		{name: "an importer that stays moves to the renamed export in the same push",
			v1: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: importer, template_path: importer.yaml, requires: [exporter]}\n",
				"exporter.yaml": exporterX, "importer.yaml": imports("shop-X")},
			v2: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: importer, template_path: importer.yaml}\n",
				"exporter.yaml": exporterRenamed, "importer.yaml": imports("shop-Y")},
			refused: "the run cannot order its stacks: dependency cycle: exporter -> importer -> exporter"},
		{name: "importer nested in a removed stack",
			v1: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: root, template_path: root.yaml, requires: [exporter]}\n",
				"exporter.yaml": exporterX, "root.yaml": nestingRoot, "child.yaml": imports("shop-X")},
			v2:    map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n", "exporter.yaml": exporterDropped},
			first: "root", then: "exporter"},
		{name: "the importer imports another region's export of that name", regions: true,
			v1: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n" +
				"  - {name: west, region: us-west-2, template_path: exporter.yaml}\n  - {name: importer, region: us-west-2, template_path: importer.yaml, requires: [west]}\n",
				"exporter.yaml": exporterX, "importer.yaml": imports("shop-X")},
			v2: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: dropped.yaml}\n  - {name: west, region: us-west-2, template_path: exporter.yaml}\n",
				"exporter.yaml": exporterX, "dropped.yaml": exporterDropped},
			waits: map[string][]string{"exporter": nil, "west": {"importer"}}},
		{name: "the importer imports another account's export of that name", regions: true,
			v1: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n" +
				"  - {name: other, role_arn: " + otherRole + ", template_path: exporter.yaml}\n  - {name: importer, role_arn: " + otherRole + ", template_path: importer.yaml, requires: [other]}\n",
				"exporter.yaml": exporterX, "importer.yaml": imports("shop-X")},
			v2: map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: dropped.yaml}\n  - {name: other, role_arn: " + otherRole + ", template_path: exporter.yaml}\n",
				"exporter.yaml": exporterX, "dropped.yaml": exporterDropped},
			waits: map[string][]string{"exporter": nil, "other": {"importer"}}},
	} {
		for _, way := range []string{"push", "plan → approve"} {
			t.Run(tc.name+"/"+way, func(t *testing.T) {
				w := newReviewWorld(t)
				if tc.regions {
					w.withTargets(target.Target{Account: w.em.AccountID(), Region: "us-west-2"}, target.Target{Account: "111111111111", Region: w.em.Region()})
				}
				first := w.wait("shop", w.push("shop", bundleOf(t, tc.v1)))
				if first.Run.Status != run.Succeeded {
					t.Fatalf("first run: %s (%s); stacks %v", first.Run.Status, first.Run.Reason, reasons(first))
				}
				if tc.olderGraph {
					w.forgetImports("shop", "shop")
				}
				dir := bundleOf(t, tc.v2)
				var doc *rundoc.Document
				switch {
				case tc.refused != "":
					if way == "push" {
						doc = w.wait("shop", w.push("shop", dir))
					} else {
						doc = w.wait("shop", w.uploadPlan("shop", dir))
					}
					if doc.Run.Status != run.RunFailed || !slices.ContainsFunc(doc.Refusals, func(r string) bool { return strings.Contains(r, tc.refused) }) {
						t.Fatalf("%s: %s, refusals %q; want refused saying %q", way, doc.Run.Status, doc.Refusals, tc.refused)
					}
					if calls := w.cfnCalls(); calls["CreateChangeSet"] != len(first.Run.Stacks) {
						t.Errorf("%d change sets made in all, want only those of the first run", calls["CreateChangeSet"])
					}
					return
				case way == "push":
					doc = w.wait("shop", w.push("shop", dir))
				default:
					p := w.planOf("shop", w.uploadPlan("shop", dir))
					doc = w.approve("shop", p.ID)
				}
				if doc.Run.Status != run.Succeeded {
					t.Fatalf("%s: %s (%s); stacks %v", way, doc.Run.Status, doc.Run.Reason, reasons(doc))
				}
				s := doc.Run.Stacks
				if tc.first != "" {
					f, th := s[tc.first], s[tc.then]
					if f.Intent != run.IntentDelete || f.Phase != run.Done || th.ExecutedAt.IsZero() || th.ExecutedAt.Before(f.FinishedAt) {
						t.Errorf("%s (%s %s) deleted at %s, %s executed at %s: want it deleted first", tc.first, f.Intent, f.Phase, hms(f.FinishedAt), tc.then, hms(th.ExecutedAt))
					}
				}
				if tc.before != "" {
					// A change set may be made early: what counts is when it is executed.
					b, a := s[tc.before], s[tc.after]
					at := a.ExecutedAt
					if at.IsZero() {
						at = a.StartedAt
					}
					if at.Before(b.FinishedAt) {
						t.Errorf("%s started at %s, before %s finished at %s", tc.after, hms(at), tc.before, hms(b.FinishedAt))
					}
				}
				for name, want := range tc.waits {
					if got := s[name].After; !slices.Equal(got, want) {
						t.Errorf("%s waits for %v, want %v", name, got, want)
					}
				}
				for name, st := range s {
					if st.Phase != run.Done && st.Phase != run.Unchanged {
						t.Errorf("%s: %s (%s)", name, st.Phase, st.Reason)
					}
				}
			})
		}
	}
}

func hms(t time.Time) string { return t.Format("15:04:05.000") }

// reasons are the phases and reasons of a run's stacks, for failures.
func reasons(d *rundoc.Document) map[string]string {
	out := map[string]string{}
	for n, s := range d.Run.Stacks {
		out[n] = string(s.Phase) + ": " + s.Reason
	}
	return out
}

// TestExportInUseSaysWhichStackImportsIt: an exporter that drops an export a stack still
// in the config imports fails as CloudFormation refuses it, and the next step names the
// importer and what to do, not a fix of the bundle that does not exist.
func TestExportInUseSaysWhichStackImportsIt(t *testing.T) {
	w := newWorld(t, worldOptions{})
	v1 := map[string]string{"cairn.yaml": "namespace: shop\nstacks:\n  - {name: exporter, template_path: exporter.yaml}\n  - {name: importer, template_path: importer.yaml}\n",
		"exporter.yaml": exporterX, "importer.yaml": fmt.Sprintf(importerOf, "shop-X")}
	if doc := w.wait("shop", w.push("shop", bundleOf(t, v1))); doc.Run.Status != run.Succeeded {
		t.Fatalf("first run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, reasons(doc))
	}
	v1["exporter.yaml"] = exporterDropped
	doc := w.wait("shop", w.push("shop", bundleOf(t, v1)))
	next, ok := run.NextStep(run.Ending{Run: doc.Run, Statuses: doc.Statuses, Path: "app"})
	want := "stack shop-exporter failed: stack shop-importer still imports its export shop-X, which CloudFormation does not drop or change while it is in use: deploy shop-importer without that import first (or delete it), keeping the export until then, then deploy again"
	if doc.Run.Status != run.RunFailed || !ok || next.Why != want || next.Command != "cairn push app --deployment shop" {
		t.Fatalf("run %s, next %+v (%v)\nwant why %q", doc.Run.Status, next, ok, want)
	}
}

// forgetImports rewrites the graph of namespace/key as a cairn before imports were kept
// wrote it.
func (w *world) forgetImports(namespace, key string) {
	w.t.Helper()
	g := w.graph(namespace, key)
	for _, st := range g.Stacks {
		st.Imports, st.ImportsKnown = nil, false
	}
	body, err := json.Marshal(g)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(layout.StateKey(namespace, key)),
		Body: bytes.NewReader(body), Metadata: map[string]string{"cairn-generation": fmt.Sprint(g.Generation), "cairn-run": g.RunID}}); err != nil {
		w.t.Fatal(err)
	}
	if st := w.graph(namespace, key).Stacks["importer"]; st == nil || st.ImportsKnown {
		w.t.Fatalf("the graph still knows the importer's imports: %+v", st)
	}
}
