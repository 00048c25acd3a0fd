package deployer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/run"
)

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNoEchoValuesAreNeverStored deploys NoEcho parameters given written out, from a
// variable and from another stack's output, then plans and applies a new value:
// CloudFormation gets every value, and no object cairn writes to its bucket (run and plan
// documents, reports, the graph, any version of them) nor its logs holds one; the run
// stores each NoEcho value as a sealed reference, and a changed value still changes the
// stack.
func TestNoEchoValuesAreNeverStored(t *testing.T) {
	w := newReviewWorld(t)
	dir := copyBundle(t, noechoBundle)
	first := w.wait("shop", w.push("shop", dir))
	if first.Run.Status != run.Succeeded {
		t.Fatalf("first run: %s (%s); stacks %v", first.Run.Status, first.Run.Reason, phases(first))
	}
	output := first.Run.Stacks["source"].Outputs["Name"]
	for stack, want := range map[string]string{"literal": "admin:Literal-Secret-0001", "variable": "api:Var-Secret-Value-0042", "output": "chained:" + output} {
		if got := w.parameterValue(first, stack); got != want {
			t.Errorf("stack %s made %q, want %q: CloudFormation did not get the NoEcho value", stack, got, want)
		}
		s := first.Run.Stacks[stack]
		if p := s.Parameters["Password"]; !strings.HasPrefix(p, "{{cairn:") || s.Parameters["User"] == "" {
			t.Errorf("stack %s: the run stores Password = %q, want a sealed reference", stack, p)
		}
	}

	edit(t, dir, "cairn.yaml", "      Password: Literal-Secret-0001\n      User: admin", "      Password: Literal-Secret-0002\n      User: admin")
	p := w.planOf("shop", w.uploadPlan("shop", dir))
	if s := p.Run.Stacks["literal"]; s == nil || s.ChangeSetID == "" {
		t.Fatalf("plan: stack literal %+v, want a change set for its new NoEcho value", s)
	}
	applied := w.approve("shop", p.ID)
	if applied.Run.Status != run.Succeeded {
		t.Fatalf("apply: %s (%s); stacks %v", applied.Run.Status, applied.Run.Reason, phases(applied))
	}
	if got := w.parameterValue(applied, "literal"); got != "admin:Literal-Secret-0002" {
		t.Errorf("after the apply stack literal holds %q, want the new value", got)
	}
	for _, n := range applied.Run.Names() {
		if s := applied.Run.Stacks[n]; n != "literal" && s.Phase != run.Unchanged {
			t.Errorf("apply: stack %s is %s, want unchanged", n, s.Phase)
		}
	}

	secrets := []string{"Literal-Secret-0001", "Literal-Secret-0002", "Var-Secret-Value-0042"}
	// The uploads are the user's own; everything else is written by cairn.
	if n := w.scanObjects(func(key string) bool { _, upload := layout.ParseUpload(key); return !upload }, secrets...); n < 10 {
		t.Errorf("scanned only %d object versions", n)
	}
	for _, s := range append(secrets, "chained:"+output) {
		if strings.Contains(w.logs.String(), s) {
			t.Errorf("the logs hold the NoEcho value %q", s)
		}
	}
	for _, d := range w.runs("shop") {
		if s := d.Run.Stacks["output"]; s != nil && strings.Contains(s.Parameters["Password"], output) {
			t.Errorf("run %s stores the output a NoEcho parameter reads: %q", d.Run.ID, s.Parameters["Password"])
		}
	}
}
