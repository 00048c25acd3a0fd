package deployer_test

import (
	"html"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/run"
)

// TestRunKeepsResourceEvents deploys the chain and then fails an update of the cache's
// parameter with a reason made to break a page, through the path AWS takes (the stack
// status events reach the deployer Lambda on its queue, as EventBridge sends them): each
// stack of each run keeps the events of its resources, read once it settled (one
// DescribeStackEvents page a stack), in time order, the failure with CloudFormation's
// reason; the report lists the failed resource; the page shows it, escaped.
func TestRunKeepsResourceEvents(t *testing.T) {
	w := newWorld(t, worldOptions{})
	before := w.cfnCalls()
	dir, first := deployChain(t, w)
	reads := w.cfnCalls()["DescribeStackEvents"] - before["DescribeStackEvents"]
	t.Logf("the first run read DescribeStackEvents %d times for its %d stacks", reads, len(first.Run.Stacks))
	if reads < len(chainStacks) || reads > 2*len(chainStacks) {
		t.Errorf("the first run read DescribeStackEvents %d times, want once (a page or two) for each of its %d stacks", reads, len(chainStacks))
	}
	for _, n := range chainStacks {
		s := first.Run.Stacks[n]
		var got []string
		for _, r := range run.Resources(s.Events) {
			got = append(got, r.LogicalID+" "+r.Status)
		}
		if len(got) == 0 || !strings.HasSuffix(got[len(got)-1], " CREATE_COMPLETE") {
			t.Errorf("stack %s keeps the resources %v, want each created", n, got)
		}
		for _, e := range s.Events {
			if e.LogicalID == s.StackName || e.Time.Before(s.StartedAt) || e.Time.After(s.FinishedAt) {
				t.Errorf("stack %s keeps %+v: not an event of its resources in this run", n, e)
			}
		}
	}

	const reason = `Parameter <script>alert(1)</script></details> "quota" exceeded`
	w.fault(cfnlocal.Fault{Stack: "shop-cache", LogicalID: "Parameter", Operation: "UPDATE", Reason: reason, Count: 1})
	edit(t, dir, "cairn.yaml", "      Value: ${output network::VpcId}\n      Size: small\n  - name: app", "      Value: ${output network::VpcId}\n      Size: large\n  - name: app")
	doc := w.wait("shop", w.push("shop", dir))
	cache := doc.Run.Stacks["cache"]
	if doc.Run.Status != run.RunFailed || cache.Phase != run.Failed {
		t.Fatalf("run %s, cache %s (%s): want the update failed", doc.Run.Status, cache.Phase, cache.Reason)
	}
	var seen []string
	for _, e := range cache.Events {
		seen = append(seen, e.LogicalID+" "+e.Status)
	}
	if want := []string{"Parameter UPDATE_IN_PROGRESS", "Parameter UPDATE_FAILED", "Parameter UPDATE_IN_PROGRESS", "Parameter UPDATE_COMPLETE"}; strings.Join(seen, ", ") != strings.Join(want, ", ") {
		t.Errorf("the failed update keeps the events %v, want %v", seen, want)
	}
	res := run.Resources(cache.Events)
	if len(res) != 1 || res[0].Failure != "UPDATE_FAILED" || res[0].Reason != reason || res[0].Type != "AWS::SSM::Parameter" || res[0].PhysicalID == "" {
		t.Errorf("the cache's resources %+v, want Parameter failed with %q", res, reason)
	}
	if len(doc.Run.Stacks["network"].Events) != 0 {
		t.Errorf("network, unchanged, keeps the events %v", doc.Run.Stacks["network"].Events)
	}

	report := w.object("runs/shop/" + doc.Run.ID + ".md")
	if !strings.Contains(report, "## Failed resources") || !strings.Contains(report, "| cache | Parameter | AWS::SSM::Parameter | UPDATE_FAILED |") {
		t.Errorf("the report does not list the failed resource:\n%s", report)
	}
	page := w.object("runs/shop/" + doc.Run.ID + ".html")
	if !strings.Contains(page, `<mark class="reason">`+html.EscapeString(reason)+`</mark>`) || strings.Contains(page, "<script>alert") {
		t.Errorf("the page does not show the failed resource's reason as text")
	}
}
