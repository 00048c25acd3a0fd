package deployer_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/loadavg"
	"github.com/cairn-dev/cairn/internal/run"
)

// The side-by-side benchmark: cairn (the deployer of the test world) and a simple peer
// deploy the same graph of stacks against the emulator, each on a fresh one with the same
// delays (`cairn local up --change-set-delay 1s..4s --resource-delay 1s..3s
// --delay-seed 7`), through four phases. Both see the world's one virtual clock, which
// runs sideSpeed per millisecond of wall time and never skips (so the peer's 0.25 s polls
// and cairn's waits are the same virtual time). Each phase is measured from the
// emulator's own records: its makespan (the first change set made to the last stack event
// or change set ready) over its critical path (along the longest chain of the graph, the
// time of each stack's executed change set plus its operation), and CloudFormation calls
// per stack.

// sideTemplate is each stack: In is what it reads of its dependencies (their Out), Tag
// its output, Note a property only.
const sideTemplate = `AWSTemplateFormatVersion: "2010-09-09"
Parameters:
  In: {Type: String}
  Tag: {Type: String}
  Note: {Type: String}
Resources:
  Parameter:
    Type: AWS::SSM::Parameter
    Properties:
      Type: String
      Value: !Sub "${Tag}:${In}"
      Description: !Ref Note
Outputs:
  Out:
    Value: !Ref Tag
`

// sidePhase is one deploy of the graph: the Tag and Note of every stack, and of the root
// (the first stack) when only it changes.
type sidePhase struct {
	name       string
	tag, note  string
	rootNote   string // when set, only the root's Note changes (to this)
	prevNote   string // the others' Note then
	isCreation bool
}

var sidePhases = []sidePhase{
	{name: "create", tag: "a", note: "n1", isCreation: true},
	{name: "update all, outputs unchanged", tag: "a", note: "n2"},
	{name: "update all, outputs change", tag: "b", note: "n2"},
	{name: "update the root only", tag: "b", rootNote: "n3", prevNote: "n2"},
}

// sideGraph is a graph of stacks: deps[i] are the stacks stack i reads (all before i).
type sideGraph struct {
	name string
	deps [][]int
	// slots is max_concurrency of both sides (0: sideSlots).
	slots int
}

func (g sideGraph) maxConcurrency() int { return cmp.Or(g.slots, sideSlots) }

func chainGraph(n int) sideGraph {
	g := sideGraph{name: fmt.Sprintf("%d-stack chain", n), deps: make([][]int, n)}
	for i := 1; i < n; i++ {
		g.deps[i] = []int{i - 1}
	}
	return g
}

// dagGraph is n stacks, the first three roots, every other reading one or two of the
// stacks before it (a fixed choice, so every run deploys the same graph).
func dagGraph(n int) sideGraph {
	g := sideGraph{name: fmt.Sprintf("%d-stack DAG", n), deps: make([][]int, n)}
	for i := 3; i < n; i++ {
		a, b := (i*7+3)%i, (i*5+1)%i
		g.deps[i] = []int{a}
		if b != a {
			g.deps[i] = append(g.deps[i], b)
		}
		sort.Ints(g.deps[i])
	}
	return g
}

func (p sidePhase) params(i int) (tag, note string) {
	if p.rootNote == "" {
		return p.tag, p.note
	}
	if i == 0 {
		return p.tag, p.rootNote
	}
	return p.tag, p.prevNote
}

// sideResult is one phase as measured: makespan over critical path (ratio) and over the
// best schedule under max_concurrency (best), calls per stack, and those by action.
type sideResult struct {
	ratio, best, blind, calls float64
	makespan                  float64 // seconds
	actions                   map[string]float64
	// startLag and execLag are means over the stacks with dependencies, in seconds: from
	// the end of a stack's last dependency to the creation of the change set it executed
	// (0 when made before), and from when it could execute (that change set ready, its
	// dependencies finished) to its execution.
	startLag, execLag float64
}

const sideSpeed = 5 * time.Millisecond

// sideSlots is max_concurrency of both sides.
const sideSlots = 10

// The emulator's delays of the side-by-side runs (`--change-set-delay 1s..4s
// --resource-delay 1s..3s`) and the deployer's heartbeat.
const (
	sideWorldHeartbeat                        = 3 * time.Second
	sideChangeSetDelay, sideChangeSetDelayMax = time.Second, 4 * time.Second
	sideResourceDelay, sideResourceDelayMax   = time.Second, 3 * time.Second
)

func sideWorld(b *testing.B) *world {
	return newWorld(b, worldOptions{Speed: sideSpeed, NoSkip: true, Heartbeat: sideWorldHeartbeat,
		ChangeSetDelay: sideChangeSetDelay, ChangeSetDelayMax: sideChangeSetDelayMax,
		ResourceDelay: sideResourceDelay, ResourceDelayMax: sideResourceDelayMax, DelaySeed: 7})
}

// BenchmarkSideBySide prints the table of makespan ÷ critical path and CloudFormation
// calls per stack, cairn / peer, the median of b.N runs, with the load average beside.
func BenchmarkSideBySide(b *testing.B) {
	// The DAG again with a slot for each stack: there its critical path is within reach.
	wide := dagGraph(20)
	wide.name, wide.slots = "20-stack DAG, max_concurrency 20", 20
	graphs := []sideGraph{chainGraph(5), dagGraph(20), wide}
	type cell struct{ cairn, peer []sideResult }
	cells := map[string]*cell{}
	key := func(g sideGraph, p sidePhase) string { return g.name + "|" + p.name }
	for _, g := range graphs {
		for _, p := range sidePhases {
			cells[key(g, p)] = &cell{}
		}
	}
	var loads []string
	for b.Loop() {
		loads = append(loads, loadavg.Read())
		for _, g := range graphs {
			c := sideCairn(b, g)
			p := sidePeer(b, g)
			for i, ph := range sidePhases {
				cells[key(g, ph)].cairn = append(cells[key(g, ph)].cairn, c[i])
				cells[key(g, ph)].peer = append(cells[key(g, ph)].peer, p[i])
			}
		}
	}
	var t, calls, lags strings.Builder
	lags.WriteString("| cell | dependencies' end → change set made, s | could execute → executed, s |\n|---|---|---|\n")
	fmt.Fprintf(&t, "median of %d runs, load average %s\n", len(loads), strings.Join(loads, "; "))
	t.WriteString("| phase |")
	for _, g := range graphs {
		fmt.Fprintf(&t, " %s |", g.name)
	}
	t.WriteString("\n|---|" + strings.Repeat("---|", len(graphs)) + "\n")
	for _, p := range sidePhases {
		fmt.Fprintf(&t, "| %s |", p.name)
		for _, g := range graphs {
			c := cells[key(g, p)]
			cr, pr := median(c.cairn, func(r sideResult) float64 { return r.ratio }), median(c.peer, func(r sideResult) float64 { return r.ratio })
			cc, pc := median(c.cairn, func(r sideResult) float64 { return r.calls }), median(c.peer, func(r sideResult) float64 { return r.calls })
			cb, pb := median(c.cairn, func(r sideResult) float64 { return r.best }), median(c.peer, func(r sideResult) float64 { return r.best })
			cm, pm := median(c.cairn, func(r sideResult) float64 { return r.makespan }), median(c.peer, func(r sideResult) float64 { return r.makespan })
			cn, pn := median(c.cairn, func(r sideResult) float64 { return r.blind }), median(c.peer, func(r sideResult) float64 { return r.blind })
			fmt.Fprintf(&t, " %.2f / %.2f, best %.2f / %.2f, blind %.2f / %.2f (calls %.1f / %.1f; %.1f s / %.1f s) |", cr, pr, cb, pb, cn, pn, cc, pc, cm, pm)
			fmt.Fprintf(&calls, "- %s, %s: cairn: %s; peer: %s\n", g.name, p.name, actionsLine(c.cairn), actionsLine(c.peer))
			fmt.Fprintf(&lags, "| %s, %s | %.2f / %.2f | %.2f / %.2f |\n", g.name, p.name,
				median(c.cairn, func(r sideResult) float64 { return r.startLag }), median(c.peer, func(r sideResult) float64 { return r.startLag }),
				median(c.cairn, func(r sideResult) float64 { return r.execLag }), median(c.peer, func(r sideResult) float64 { return r.execLag }))
			name := strings.ReplaceAll(g.name+"-"+p.name, " ", "-")
			b.ReportMetric(cr, name+"-cairn-ratio")
			b.ReportMetric(pr, name+"-peer-ratio")
		}
		t.WriteString("\n")
	}
	// Printed rather than logged: a benchmark's log is cut at a length the calls exceed.
	fmt.Printf("makespan ÷ critical path, cairn / peer, ÷ the best schedule under max_concurrency slots, and ÷ the schedule blind to durations (CloudFormation calls per stack; makespan):\n%s\ncalls per stack by action:\n%s\nlags, cairn / peer (mean over the stacks with dependencies; median of the runs):\n%s", t.String(), calls.String(), lags.String())
}

func median(rs []sideResult, f func(sideResult) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// sideBundle writes the graph's bundle for phase p: stack sI reads the Out of its
// dependencies.
func sideBundle(b testing.TB, g sideGraph, p sidePhase) string {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "templates", "stack.yaml"), []byte(sideTemplate), 0o644); err != nil {
		b.Fatal(err)
	}
	var y strings.Builder
	fmt.Fprintf(&y, "namespace: side\nmax_concurrency: %d\nstacks:\n", g.maxConcurrency())
	for i, deps := range g.deps {
		tag, note := p.params(i)
		in := "root"
		if len(deps) > 0 {
			var l []string
			for _, d := range deps {
				l = append(l, fmt.Sprintf("${output s%d::Out}", d))
			}
			in = strings.Join(l, ",")
		}
		fmt.Fprintf(&y, "  - name: s%d\n    template_path: templates/stack.yaml\n    parameters: {In: %q, Tag: %s, Note: %s}\n", i, in, tag, note)
	}
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(y.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// sideCairn runs the phases with cairn on a fresh emulator.
func sideCairn(b *testing.B, g sideGraph) []sideResult {
	w := sideWorld(b)
	defer w.close()
	var out []sideResult
	for _, p := range sidePhases {
		start, calls := w.clk.Now(), w.cfnCalls()
		doc := w.waitRun("side", w.push("side", sideBundle(b, g, p)), 10*time.Minute)
		if doc.Run.Status != run.Succeeded {
			b.Fatalf("%s, %s: run %s: %s", g.name, p.name, doc.Run.Status, doc.Run.Reason)
		}
		names := make([]string, len(g.deps))
		for _, s := range doc.Run.Stacks {
			i, err := strconv.Atoi(strings.TrimPrefix(s.Name, "s"))
			if err != nil {
				b.Fatal(err)
			}
			names[i] = s.StackName
		}
		out = append(out, w.measure(g, names, start, calls))
	}
	return out
}

// measure reads the phase begun at start from the emulator's records: calls are the
// CloudFormation calls counted before it.
func (w *world) measure(g sideGraph, names []string, start time.Time, before map[string]int) sideResult {
	after := w.cfnCalls()
	calls := 0
	for k, n := range after {
		calls += n - before[k]
	}
	made := map[string]time.Duration{} // change set id: its time to ready
	createdAt, readyAt := map[string]time.Time{}, map[string]time.Time{}
	var first, last time.Time
	for _, m := range w.cfn.MadeChangeSets() {
		if m.Created.Before(start) {
			continue
		}
		made[m.ChangeSetID] = m.ReadyAt.Sub(m.Created)
		createdAt[m.ChangeSetID], readyAt[m.ChangeSetID] = m.Created, m.ReadyAt
		if first.IsZero() || m.Created.Before(first) {
			first = m.Created
		}
		if m.ReadyAt.After(last) {
			last = m.ReadyAt
		}
	}
	weight := map[string]time.Duration{} // stack name: change set plus operation
	type executed struct{ created, ready, at, end time.Time }
	ran := map[string]executed{}
	for _, e := range w.cfn.ExecutedChangeSets() {
		if e.ExecutedAt.Before(start) {
			continue
		}
		end := w.lastEvent(e.StackName, e.ExecutedAt)
		if end.After(last) {
			last = end
		}
		weight[e.StackName] = made[e.ChangeSetID] + end.Sub(e.ExecutedAt)
		ran[e.StackName] = executed{createdAt[e.ChangeSetID], readyAt[e.ChangeSetID], e.ExecutedAt, end}
	}
	var startLag, execLag time.Duration
	lagged := 0
	for i, deps := range g.deps {
		r, ok := ran[names[i]]
		if !ok || len(deps) == 0 {
			continue
		}
		var depsEnd time.Time
		for _, d := range deps {
			if e := ran[names[d]].end; e.After(depsEnd) {
				depsEnd = e
			}
		}
		if depsEnd.IsZero() {
			continue // its dependencies had nothing to do
		}
		startLag += max(0, r.created.Sub(depsEnd))
		execLag += max(0, r.at.Sub(later(r.ready, depsEnd)))
		lagged++
	}
	path := make([]time.Duration, len(g.deps)) // the longest chain ending at each stack
	weights := make([]time.Duration, len(g.deps))
	var critical time.Duration
	for i, deps := range g.deps {
		for _, d := range deps {
			path[i] = max(path[i], path[d])
		}
		weights[i] = weight[names[i]]
		path[i] += weights[i]
		critical = max(critical, path[i])
	}
	if critical <= 0 {
		w.t.Fatalf("no stack operation since %s", start)
	}
	best, blind := bestSchedule(g.deps, weights, g.maxConcurrency()), blindSchedule(g.deps, weights, g.maxConcurrency())
	span := last.Sub(first).Seconds()
	res := sideResult{ratio: span / critical.Seconds(), best: span / best.Seconds(), blind: span / blind.Seconds(), makespan: span,
		calls: float64(calls) / float64(len(g.deps)), actions: byAction(before, after, len(g.deps))}
	if lagged > 0 {
		res.startLag, res.execLag = startLag.Seconds()/float64(lagged), execLag.Seconds()/float64(lagged)
	}
	return res
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// lastEvent is the time of the stack's last event at or after since.
func (w *world) lastEvent(stack string, since time.Time) time.Time {
	var last time.Time
	p := cloudformation.NewDescribeStackEventsPaginator(w.cfnc, &cloudformation.DescribeStackEventsInput{StackName: aws.String(stack)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			w.t.Fatalf("stack events of %s: %v", stack, err)
		}
		for _, e := range page.StackEvents {
			if t := aws.ToTime(e.Timestamp); !t.Before(since) && t.After(last) {
				last = t
			}
		}
	}
	return last
}

// sidePeer runs the phases with the peer on a fresh emulator.
func sidePeer(b *testing.B, g sideGraph) []sideResult {
	w := sideWorld(b)
	defer w.close()
	names := make([]string, len(g.deps))
	for i := range names {
		names[i] = fmt.Sprintf("peer-s%d", i)
	}
	var out []sideResult
	for n, p := range sidePhases {
		start, calls := w.clk.Now(), w.cfnCalls()
		w.peer(g, names, p, fmt.Sprintf("peer-%d", n))
		out = append(out, w.measure(g, names, start, calls))
	}
	return out
}

// peer deploys the graph as a simple deployer would: a goroutine per stack that, as soon
// as its dependencies finish, makes a change set with their outputs as parameters, polls
// DescribeChangeSet every 0.25 s, executes it and polls DescribeStacks every 0.25 s; ten
// stacks at a time at most.
func (w *world) peer(g sideGraph, names []string, p sidePhase, csName string) {
	done := make([]chan struct{}, len(g.deps))
	outs := make([]string, len(g.deps))
	for i := range done {
		done[i] = make(chan struct{})
	}
	slots := make(chan struct{}, g.maxConcurrency())
	var wg sync.WaitGroup
	errs := make(chan error, len(g.deps))
	for i, deps := range g.deps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := "root"
			if len(deps) > 0 {
				var l []string
				for _, d := range deps {
					<-done[d]
					l = append(l, outs[d])
				}
				in = strings.Join(l, ",")
			}
			slots <- struct{}{}
			defer func() { <-slots }()
			tag, note := p.params(i)
			out, err := w.peerStack(names[i], csName, p.isCreation, map[string]string{"In": in, "Tag": tag, "Note": note})
			if err != nil {
				errs <- err
			}
			outs[i] = out
			close(done[i])
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		w.t.Fatalf("peer, %s: %v", p.name, err)
	}
}

// peerStack makes, waits for and executes one stack's change set, and returns its Out.
func (w *world) peerStack(stack, csName string, create bool, params map[string]string) (string, error) {
	ctx := context.Background()
	in := &cloudformation.CreateChangeSetInput{StackName: aws.String(stack), ChangeSetName: aws.String(csName),
		TemplateBody: aws.String(sideTemplate), ChangeSetType: cfntypes.ChangeSetTypeUpdate}
	if create {
		in.ChangeSetType = cfntypes.ChangeSetTypeCreate
	}
	for k, v := range params {
		in.Parameters = append(in.Parameters, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	if _, err := w.cfnc.CreateChangeSet(ctx, in); err != nil {
		return "", fmt.Errorf("create change set of %s: %w", stack, err)
	}
	for {
		<-w.clk.After(250 * time.Millisecond)
		cs, err := w.cfnc.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String(stack), ChangeSetName: aws.String(csName)})
		if err != nil {
			return "", fmt.Errorf("describe change set of %s: %w", stack, err)
		}
		if cs.Status == cfntypes.ChangeSetStatusCreateComplete {
			break
		}
		if cs.Status == cfntypes.ChangeSetStatusFailed {
			if strings.Contains(aws.ToString(cs.StatusReason), "didn't contain changes") {
				return w.peerOutput(stack, false)
			}
			return "", fmt.Errorf("change set of %s failed: %s", stack, aws.ToString(cs.StatusReason))
		}
	}
	if _, err := w.cfnc.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String(stack), ChangeSetName: aws.String(csName)}); err != nil {
		return "", fmt.Errorf("execute change set of %s: %w", stack, err)
	}
	for {
		<-w.clk.After(250 * time.Millisecond)
		out, err := w.peerOutput(stack, true)
		if err == nil || err != errInProgress {
			return out, err
		}
	}
}

var errInProgress = fmt.Errorf("in progress")

// peerOutput describes the stack: its Out once complete, errInProgress while it is not
// (when wait), an error when it failed.
func (w *world) peerOutput(stack string, wait bool) (string, error) {
	out, err := w.cfnc.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		return "", fmt.Errorf("describe stack %s: %w", stack, err)
	}
	st := out.Stacks[0]
	status := string(st.StackStatus)
	switch {
	case status == "CREATE_COMPLETE" || status == "UPDATE_COMPLETE":
	case wait && strings.HasSuffix(status, "_IN_PROGRESS"):
		return "", errInProgress
	default:
		return "", fmt.Errorf("stack %s is %s: %s", stack, status, aws.ToString(st.StackStatusReason))
	}
	for _, o := range st.Outputs {
		if aws.ToString(o.OutputKey) == "Out" {
			return aws.ToString(o.OutputValue), nil
		}
	}
	return "", fmt.Errorf("stack %s has no output Out", stack)
}
