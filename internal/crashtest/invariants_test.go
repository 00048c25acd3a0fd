package crashtest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
)

// The invariants checked after every scenario step.
const (
	converges  = "converges to the stacks of an uncrashed run"
	keeps      = "deletes no stack the config keeps"
	once       = "executes no change set twice"
	graphTags  = "the graph agrees with the live stacks' tags"
	lockFree   = "the lock is free at the end"
	runsClosed = "no run left running"
)

var invariants = []string{converges, keeps, once, graphTags, lockFree, runsClosed}

// violation is one invariant that does not hold, and how.
type violation struct {
	Invariant, Detail string
}

func (v violation) String() string { return v.Invariant + ": " + v.Detail }

// stackShape is what a live stack must look like, in terms that do not depend on the
// world's ids: output values other stacks take as parameters are written as
// ${STACK.OUTPUT}, the bundle version as the scenario step that pushed it, and the
// parameters digest is left to the graph check.
type stackShape struct {
	Status                string
	TerminationProtection bool
	Parameters, Tags      map[string]string
	Outputs               []string
}

func (s stackShape) String() string {
	tags := make([]string, 0, len(s.Tags))
	for _, k := range slices.Sorted(maps.Keys(s.Tags)) {
		tags = append(tags, k+"="+s.Tags[k])
	}
	params := make([]string, 0, len(s.Parameters))
	for _, k := range slices.Sorted(maps.Keys(s.Parameters)) {
		params = append(params, k+"="+s.Parameters[k])
	}
	return fmt.Sprintf("%s protection=%v parameters[%s] outputs%v tags[%s]", s.Status, s.TerminationProtection,
		strings.Join(params, " "), s.Outputs, strings.Join(tags, " "))
}

// snapshot is the outcome of a scenario step, as the invariants see it.
type snapshot struct {
	Stacks   map[string]stackShape // live stacks of the namespace, by stack name
	Deleted  []string              // stack names deleted so far, one entry per deleted stack
	Executed map[string]int        // change sets executed so far, by stack name
	// Run is the status of the run of the step's upload.
	Run       run.Status
	Graph     string // the graph's applied bundle, by scenario step
	GraphSize int
}

func isOurs(name string, tags map[string]string) bool {
	return tags[state.TagNamespace] == namespace || strings.HasPrefix(name, namespace+"-")
}

func tagMap(tags []cfntypes.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

// liveStacks returns every stack that exists (not deleted), by name.
func (w *world) liveStacks(ctx context.Context) (map[string]cfntypes.Stack, error) {
	out := map[string]cfntypes.Stack{}
	p := cloudformation.NewDescribeStacksPaginator(w.cfn, &cloudformation.DescribeStacksInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe stacks: %w", err)
		}
		for _, s := range page.Stacks {
			out[aws.ToString(s.StackName)] = s
		}
	}
	return out, nil
}

// object returns the body of key, or "" when it does not exist.
func (w *world) object(ctx context.Context, key string) (string, error) {
	out, err := w.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(w.cairn.Bucket), Key: aws.String(key)})
	if awserr.NotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get %s: %w", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return string(b), err
}

func (w *world) keys(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(w.s3, &s3.ListObjectsV2Input{Bucket: aws.String(w.cairn.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// observe takes the snapshot of the world after the step that pushed version, and checks
// the invariants that need no reference run: keeps (against the config's stacks), once,
// graphTags, lockFree and runsClosed. steps names the versions pushed so far.
func (w *world) observe(ctx context.Context, version string, keep []string, steps map[string]string) (snapshot, []violation, error) {
	var vs []violation
	flag := func(inv, format string, args ...any) { vs = append(vs, violation{inv, fmt.Sprintf(format, args...)}) }
	snap := snapshot{Stacks: map[string]stackShape{}, Executed: map[string]int{}}

	live, err := w.liveStacks(ctx)
	if err != nil {
		return snap, nil, err
	}
	outputs := map[string]string{} // value -> ${STACK.OUTPUT}
	for name, st := range live {
		if !isOurs(name, tagMap(st.Tags)) {
			continue
		}
		for _, o := range st.Outputs {
			outputs[aws.ToString(o.OutputValue)] = "${" + name + "." + aws.ToString(o.OutputKey) + "}"
		}
	}
	for name, st := range live {
		tags := tagMap(st.Tags)
		if !isOurs(name, tags) {
			continue
		}
		shape := stackShape{Status: string(st.StackStatus), TerminationProtection: aws.ToBool(st.EnableTerminationProtection),
			Parameters: map[string]string{}, Tags: tags}
		for _, p := range st.Parameters {
			v := aws.ToString(p.ParameterValue)
			if ref, ok := outputs[v]; ok {
				v = ref
			}
			shape.Parameters[aws.ToString(p.ParameterKey)] = v
		}
		for _, o := range st.Outputs {
			shape.Outputs = append(shape.Outputs, aws.ToString(o.OutputKey))
		}
		sort.Strings(shape.Outputs)
		delete(tags, state.TagParametersHash)
		if v, ok := tags[state.TagBundleVersion]; ok {
			tags[state.TagBundleVersion] = orUnknown(steps[v], v)
		}
		snap.Stacks[name] = shape
	}

	// keeps: no stack of the config was deleted, by name or by an id it once had.
	deleted, err := w.cfn.ListStacks(ctx, &cloudformation.ListStacksInput{StackStatusFilter: []cfntypes.StackStatus{cfntypes.StackStatusDeleteComplete}})
	if err != nil {
		return snap, nil, fmt.Errorf("list deleted stacks: %w", err)
	}
	for _, s := range deleted.StackSummaries {
		name := aws.ToString(s.StackName)
		if !strings.HasPrefix(name, namespace+"-") {
			continue
		}
		snap.Deleted = append(snap.Deleted, name)
		if slices.Contains(keep, name) {
			flag(keeps, "stack %s (%s) was deleted although the config keeps it", name, aws.ToString(s.StackId))
		}
	}
	sort.Strings(snap.Deleted)

	// once: every executed change set is another change.
	seen := map[string]bool{}
	for _, e := range w.emulator().CloudFormation().ExecutedChangeSets() {
		if !strings.HasPrefix(e.StackName, namespace+"-") {
			continue
		}
		snap.Executed[e.StackName]++
		if seen[e.ChangeSetID] {
			flag(once, "change set %s of stack %s was executed twice", e.ChangeSetName, e.StackName)
		}
		seen[e.ChangeSetID] = true
	}

	// graphTags: every stack of the graph exists with the tags the graph records, and every
	// live stack tagged with the graph's namespace and key is in the graph.
	body, err := w.object(ctx, graphKey(namespace, graphKeyName))
	if err != nil {
		return snap, nil, err
	}
	if body == "" {
		flag(graphTags, "there is no persistent graph %s", graphKey(namespace, graphKeyName))
	} else if g, err := state.Decode([]byte(body)); err != nil {
		flag(graphTags, "the persistent graph does not decode: %v", err)
	} else {
		snap.Graph, snap.GraphSize = orUnknown(steps[g.Bundle.VersionID], g.Bundle.VersionID), len(g.Stacks)
		for _, name := range g.Names() {
			gs := g.Stacks[name]
			st, ok := live[gs.StackName]
			if !ok {
				flag(graphTags, "graph stack %s names %s, which does not exist", name, gs.StackName)
				continue
			}
			tags := tagMap(st.Tags)
			for _, c := range []struct{ tag, want string }{
				{state.TagName, name}, {state.TagNamespace, namespace}, {state.TagGraphKey, graphKeyName},
				{state.TagTemplateHash, gs.TemplateHash}, {state.TagParametersHash, gs.ParametersHash},
			} {
				if tags[c.tag] != c.want {
					flag(graphTags, "stack %s: tag %s is %q, the graph says %q", gs.StackName, c.tag, tags[c.tag], c.want)
				}
			}
			if gs.StackID != "" && gs.StackID != aws.ToString(st.StackId) {
				flag(graphTags, "stack %s: id %s, the graph says %s", gs.StackName, aws.ToString(st.StackId), gs.StackID)
			}
		}
		for name, st := range live {
			tags := tagMap(st.Tags)
			if tags[state.TagNamespace] == namespace && tags[state.TagGraphKey] == graphKeyName {
				if gs, ok := g.Stacks[tags[state.TagName]]; !ok || gs.StackName != name {
					flag(graphTags, "stack %s is tagged as %s of the graph, which does not hold it", name, tags[state.TagName])
				}
			}
		}
	}

	// lockFree.
	if lock, err := w.object(ctx, lockKey(namespace, graphKeyName)); err != nil {
		return snap, nil, err
	} else if lock != "" {
		flag(lockFree, "%s is still there: %s", lockKey(namespace, graphKeyName), strings.Join(strings.Fields(lock), " "))
	}

	// runsClosed: every run document has ended, and the open-run index is empty.
	keys, err := w.keys(ctx, runPrefix(deployment))
	if err != nil {
		return snap, nil, err
	}
	for _, k := range keys {
		if !strings.HasSuffix(k, ".json") {
			continue
		}
		body, err := w.object(ctx, k)
		if err != nil {
			return snap, nil, err
		}
		doc, err := rundoc.DecodeDocument([]byte(body))
		if err != nil {
			flag(runsClosed, "%s: %v", k, err)
			continue
		}
		if doc.Run.Status == run.Running {
			flag(runsClosed, "run %s (%s) is still running after %d step(s)", doc.Run.ID, orUnknown(steps[doc.Bundle.VersionID], doc.Bundle.VersionID), doc.Steps)
		}
		if doc.Bundle.VersionID == version {
			snap.Run = doc.Run.Status
		}
	}
	if snap.Run == "" {
		flag(runsClosed, "the upload of %s has no run document", steps[version])
	}
	index, err := w.keys(ctx, openRunPrefix())
	if err != nil {
		return snap, nil, err
	}
	for _, k := range index {
		flag(runsClosed, "the open-run index still lists %s", k)
	}
	return snap, vs, nil
}

// compare checks converges and once against the uncrashed run's snapshot of the same step.
func compare(got, want snapshot) []violation {
	var vs []violation
	flag := func(inv, format string, args ...any) { vs = append(vs, violation{inv, fmt.Sprintf(format, args...)}) }
	for _, name := range slices.Sorted(maps.Keys(want.Stacks)) {
		g, ok := got.Stacks[name]
		if !ok {
			flag(converges, "stack %s is missing; uncrashed: %s", name, want.Stacks[name])
			continue
		}
		if g.String() != want.Stacks[name].String() {
			flag(converges, "stack %s is %s; uncrashed: %s", name, g, want.Stacks[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got.Stacks)) {
		if _, ok := want.Stacks[name]; !ok {
			flag(converges, "stack %s exists (%s); the uncrashed run has no such stack", name, got.Stacks[name])
		}
	}
	if strings.Join(got.Deleted, ",") != strings.Join(want.Deleted, ",") {
		flag(converges, "deleted stacks %v; uncrashed: %v", got.Deleted, want.Deleted)
	}
	if got.Run != want.Run {
		flag(converges, "the upload's run ended %q; uncrashed: %q", got.Run, want.Run)
	}
	if got.Graph != want.Graph || got.GraphSize != want.GraphSize {
		flag(converges, "the graph holds %d stack(s) of bundle %s; uncrashed: %d of %s", got.GraphSize, got.Graph, want.GraphSize, want.Graph)
	}
	for _, name := range slices.Sorted(maps.Keys(got.Executed)) {
		if got.Executed[name] > want.Executed[name] {
			flag(once, "stack %s had %d change set(s) executed; uncrashed: %d", name, got.Executed[name], want.Executed[name])
		}
	}
	return vs
}

func orUnknown(s, raw string) string {
	if s == "" {
		return "unknown version " + raw
	}
	return s
}
