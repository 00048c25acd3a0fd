package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// A plan document lives in the bucket, where whoever may write plans/ (CI, in the usual
// set-up) can edit it. Its approval executes the change sets and deletions it names, so
// before anything runs the deployer checks in code that the document names only what its
// own plan run made, for the graph it locks: Integrity. Each check is per stack entry.

// planDomain is the seal domain of plan documents.
const planDomain = "cairn plan"

// body is what a plan's seal covers: the document as JSON, without what changes after
// the plan run wrote it (its status, why, and the run that applied it) and the seal.
func (p *Document) body() string {
	c := *p
	c.Status, c.Reason, c.AppliedBy, c.AppliedAt, c.Seal = "", "", "", time.Time{}, ""
	b, err := json.Marshal(&c)
	if err != nil {
		return "" // a Document always encodes; an empty body verifies nothing
	}
	return string(b)
}

// Sign seals p with k: its Seal is a MAC of all of it but its status. The deployer signs
// every plan document it writes.
func (p *Document) Sign(k seal.Key) { p.Seal = k.Sum(planDomain, p.body()) }

// Signed reports whether p's seal is k's of p as it is now: the document is the one the
// deployer wrote, whatever its status since. A deployer with a key accepts only keyed
// seals: anyone can compute an unkeyed one.
func (p *Document) Signed(k seal.Key) bool {
	if p.Seal == "" || (k.Keyed() && !seal.IsKeyed(p.Seal)) {
		return false
	}
	return k.Verify(p.Seal, planDomain, p.body())
}

// Executes lists the config names of the stacks of p's run whose change sets its apply
// run would execute as they are (an apply keeps them), sorted.
func (p *Document) Executes() []string {
	if p.Run == nil {
		return nil
	}
	var names []string
	for _, name := range p.Run.Names() {
		s := p.Run.Stacks[name]
		if s.Intent == run.IntentDeploy && !s.AtApply && s.Phase != run.Unchanged && (s.ChangeSetID != "" || s.ChangeSetName != "") {
			names = append(names, name)
		}
	}
	return names
}

// ChangeSetsToDescribe lists the change set ids an approval describes to check p's
// integrity, with where each lives (the run's target of its stack).
func (p *Document) ChangeSetsToDescribe() map[string]target.Spec {
	out := map[string]target.Spec{}
	for _, name := range p.Executes() {
		if s := p.Run.Stacks[name]; s.ChangeSetID != "" {
			out[s.ChangeSetID] = s.Target
		}
	}
	return out
}

// Integrity lists why p, read from plans/DEPLOYMENT/PLAN_ID.json of bucket name, is not a
// plan its deployment's plan run wrote for the graph it names, as o saw the world: the
// document names another deployment or plan, the graph belongs to another deployment, the
// bundle is not the deployment's plan upload, or an entry would execute a change set its
// plan run did not make for that stack (checked by id, name, stack, account and region,
// and the tags cairn created it with) or delete a stack the graph does not hold. Each
// reason says which check failed; any one of them means nothing runs.
func (p *Document) Integrity(deployment, planID, bucketName string, o Observed) []string {
	var reasons []string
	bad := func(format string, args ...any) {
		reasons = append(reasons, fmt.Sprintf("plan %s of deployment %s: ", planID, deployment)+fmt.Sprintf(format, args...)+
			": the plan document does not describe what its plan run made; nothing was executed: re-plan")
	}
	if p.ID != planID || p.Deployment != deployment || p.Run == nil || p.Run.ID != planID || p.Run.Deployment != deployment || p.Run.Mode != run.ModePlan {
		bad("the document names plan %q of deployment %q (its run: %s)", p.ID, p.Deployment, describeRun(p.Run))
		return reasons
	}
	if g := o.Graph; g != nil && g.Deployment != "" && g.Deployment != deployment {
		bad("the persistent graph %s/%s it names belongs to deployment %s", p.Namespace, p.GraphKey, g.Deployment)
	}
	// Its bundle is the deployment's plan upload, or (a plan made again of the stacks an
	// apply stopped) the content it applied.
	if want := bucket.PlanUploadKey(deployment); p.Bundle.Key != want && p.Bundle.Key != bucket.ApplyKey(deployment) || (bucketName != "" && p.Bundle.Bucket != bucketName) {
		bad("its bundle is s3://%s/%s, not the deployment's plan upload s3://%s/%s", p.Bundle.Bucket, p.Bundle.Key, bucketName, want)
	}
	entries := map[string]Stack{}
	for _, s := range p.Stacks {
		entries[s.Name] = s
	}
	for _, name := range p.Run.Names() {
		rs := p.Run.Stacks[name]
		if rs.Name != name {
			bad("stack entry %s is filed under %s", rs.Name, name)
			continue
		}
		switch {
		case rs.Intent == run.IntentDelete || rs.Intent == run.IntentRecreate:
			if why := p.deletionProblem(rs, o); why != "" {
				bad("stack %s (%s): %s", name, rs.Describe(), why)
			}
		case slices.Contains(p.Executes(), name):
			if why := p.changeSetProblem(rs, entries[name], o); why != "" {
				bad("stack %s (%s): %s", name, rs.Describe(), why)
			}
		}
	}
	return reasons
}

// changeSetProblem says why the change set the run's entry rs would execute is not the
// one its plan run made for it ("" when it is).
func (p *Document) changeSetProblem(rs *run.Stack, entry Stack, o Observed) string {
	prefix := "cairn-" + p.ID + "-"
	cs := o.ChangeSets[rs.ChangeSetID]
	switch {
	case entry.Name == "" || entry.ChangeSetID != rs.ChangeSetID || entry.ChangeSetName != rs.ChangeSetName || entry.StackName != rs.StackName:
		return fmt.Sprintf("its entries disagree: the run names change set %q (%s) of %s, the plan's stacks %q (%s) of %s",
			rs.ChangeSetName, rs.ChangeSetID, rs.StackName, entry.ChangeSetName, entry.ChangeSetID, entry.StackName)
	case rs.ChangeSetID == "":
		return fmt.Sprintf("change set %s is named without its id", rs.ChangeSetName)
	case !strings.HasPrefix(rs.ChangeSetName, prefix):
		return fmt.Sprintf("change set %s is not one of this plan's (they are named %sN)", rs.ChangeSetName, prefix)
	case !cs.Found:
		return "" // gone: its entry is stale (Compose says so)
	case cs.ID != rs.ChangeSetID:
		return fmt.Sprintf("the plan recorded change set %s, CloudFormation describes %s", rs.ChangeSetID, cs.ID)
	case cs.Name != rs.ChangeSetName:
		return fmt.Sprintf("change set %s is named %s, not %s", cs.ID, cs.Name, rs.ChangeSetName)
	case cs.StackName != rs.StackName || (rs.StackID != "" && cs.StackID != rs.StackID):
		return fmt.Sprintf("change set %s belongs to stack %s (%s), not %s (%s)", cs.Name, cs.StackName, cs.StackID, rs.StackName, rs.StackID)
	}
	// Described where the run reaches its stack (rs.Target), by an ARN naming its place.
	if at, ok := target.OfStackID(cs.StackID); ok {
		if csAt, ok := target.OfStackID(cs.ID); !ok || csAt != at {
			return fmt.Sprintf("change set %s does not live where its stack %s does", cs.ID, cs.StackID)
		}
	}
	for _, c := range []struct{ tag, want string }{
		{state.TagNamespace, p.Namespace}, {state.TagGraphKey, p.GraphKey}, {state.TagName, rs.Name}, {state.TagBundleSHA256, p.Bundle.SHA256},
	} {
		if c.want == "" && c.tag == state.TagBundleSHA256 {
			continue
		}
		if got := cs.Tags[c.tag]; got != c.want {
			return fmt.Sprintf("change set %s was made with tag %s=%q, where this plan says %q", cs.Name, c.tag, got, c.want)
		}
	}
	return ""
}

// deletionProblem says why the stack rs of a plan's run, which its apply deletes (or
// deletes and creates again), is not one the graph and the stack's own tags say cairn
// made for this graph ("" when it is).
func (p *Document) deletionProblem(rs *run.Stack, o Observed) string {
	if o.Graph == nil {
		return "the plan deletes it, but there is no persistent graph"
	}
	gs := o.Graph.Stacks[rs.Name]
	if rs.Intent == run.IntentDelete && gs == nil {
		return "the plan deletes it, but the persistent graph holds no such stack"
	}
	if gs != nil && (gs.StackName != rs.StackName || gs.Target.Location(target.Target{}) != rs.Target.Location(target.Target{})) {
		return fmt.Sprintf("the plan names %s, the persistent graph %s", rs.Describe(), target.Describe(gs.Target.Location(target.Target{}), gs.StackName))
	}
	if l, ok := o.Live[rs.Key()]; ok && !l.OwnedBy(p.Namespace, p.GraphKey, rs.Name) {
		return fmt.Sprintf("its tags do not say cairn made it for graph %s/%s as stack %s", p.Namespace, p.GraphKey, rs.Name)
	}
	return ""
}

func describeRun(r *run.Run) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s of deployment %q", r.Mode, r.ID, r.Deployment)
}
