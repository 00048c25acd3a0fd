package drift

import (
	"cmp"
	"fmt"
	"sort"
	"strings"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// ReportName is the name of pg's report folder (drift/NAME/): the deployment that applied
// it, else its key; NAMESPACE.KEY when another graph has that name already (say, a
// deployment that changed its namespace left its old graph behind: taken holds the names
// given so far) or when the name is one the bucket reserves.
func ReportName(pg *state.Graph, deployment string, taken map[string]bool) string {
	name := cmp.Or(deployment, pg.Key)
	if taken[name] || bucket.Reserved(name) {
		return bucket.DriftReportName(pg.Namespace, pg.Key)
	}
	return name
}

// Places is what a sweep saw of the accounts and regions of its graphs: every live stack,
// keyed by target.Key relative to Home, and the places it could not reach, with why.
type Places struct {
	Live        map[string]plan.Live
	Home        target.Target
	Unreachable map[target.Target]string
}

// NewGraph is the part of a sweep of persistent graph pg, reported as name: each stack
// pending, or settled as NOT_CHECKED with why (drift detection disabled by the applied
// config cfg, the stack missing from AWS or its account and region unreachable, ignored by
// drift.ignore, or busy), and the stacks tagged for the graph that it does not know. note
// says why cfg is nil, if it is.
func NewGraph(pg *state.Graph, name string, cfg *config.Config, note string, seen Places) *Graph {
	g := &Graph{Namespace: pg.Namespace, Key: pg.Key, Name: name, Bundle: bundleString(pg.Bundle)}
	if note != "" {
		g.Notes = append(g.Notes, note)
	}
	if cfg != nil {
		g.Ignore = cfg.Drift.Ignore
		if !cfg.Drift.Enabled {
			g.Skipped = "drift detection disabled by drift.enabled: false in the applied config"
		}
	}
	var secrecy config.Secrecy
	if cfg != nil {
		// The SSM parameters' types are not known here: a value read from a SecureString
		// is secret where the template makes it so (NoEcho).
		secrecy = cfg.Secrecy(nil)
	}
	known := map[string]bool{}
	for _, n := range pg.Names() {
		ps := pg.Stacks[n]
		at := ps.Target.Location(seen.Home)
		key := target.Key(at, ps.StackName)
		s := &Stack{Name: ps.Name, StackName: ps.StackName, Status: Pending, Target: ps.Target, At: at}
		known[key] = true
		l, ok := seen.Live[key]
		why, unreachable := seen.Unreachable[at]
		switch {
		case g.Skipped != "":
			s.Status, s.Reason = NotChecked, g.Skipped
		case unreachable:
			s.Status, s.Reason = NotChecked, why
		case !ok:
			s.Status, s.Reason = NotChecked, "stack does not exist in AWS"
			g.Missing = append(g.Missing, target.Describe(at, ps.StackName))
		default:
			s.StackID = l.StackID
			s.Secrets = secretsOf(cfg, secrecy, ps.Name)
			if cfg != nil && cfg.Stack(ps.Name) != nil {
				s.OnDrift = string(cfg.Stack(ps.Name).Options.OnDrift)
			}
			if p := matchIgnore(g.Ignore, ps.Name, ps.StackName); p != "" {
				s.Status, s.Reason = NotChecked, fmt.Sprintf("ignored by drift.ignore pattern %q", p)
			} else if strings.HasSuffix(l.Status, "_IN_PROGRESS") {
				s.Status, s.Reason = NotChecked, "stack operation in progress ("+l.Status+")"
			}
		}
		g.Stacks = append(g.Stacks, s)
	}
	for key, l := range seen.Live {
		if l.Tags[state.TagNamespace] == g.Namespace && l.Tags[state.TagGraphKey] == g.Key && !known[key] {
			at, name := target.ParseKey(key)
			g.Untracked = append(g.Untracked, target.Describe(at, name))
		}
	}
	sort.Strings(g.Untracked)
	return g
}

func bundleString(b state.BundleRef) string {
	var parts []string
	if b.VersionID != "" {
		parts = append(parts, "version "+b.VersionID)
	}
	if b.SHA256 != "" {
		parts = append(parts, "sha256 "+b.SHA256)
	}
	if b.GitRef != "" {
		parts = append(parts, "git "+b.GitRef)
	}
	if b.GitRemote != "" {
		parts = append(parts, "of "+b.GitRemote)
	}
	return strings.Join(parts, ", ")
}

// secretsOf is where stack name of the applied config cfg holds secrets (see
// Stack.Secrets): the properties a secret reaches (secrecy, config.Secrecy of cfg), or
// every property ("*") when its template is not known (no config, a template_url); the
// pass then reads the template from CloudFormation if the stack drifted, and masks every
// value if that fails too.
func secretsOf(cfg *config.Config, secrecy config.Secrecy, name string) map[string][]string {
	var s *config.Stack
	if cfg != nil {
		s = cfg.Stack(name)
	}
	if s == nil || s.Template == nil {
		return map[string][]string{"*": {"*"}}
	}
	out := secrecy[name].Properties
	if len(out) == 0 {
		return nil
	}
	return out
}
