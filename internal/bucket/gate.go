package bucket

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Op is what a request does to the objects of a key.
type Op uint8

// The operations the gate tells apart.
const (
	OpRead Op = 1 << iota
	OpWrite
	OpDelete
	OpList
)

func (o Op) String() string {
	var parts []string
	for _, p := range []struct {
		op   Op
		name string
	}{{OpRead, "read"}, {OpWrite, "write"}, {OpDelete, "delete"}, {OpList, "list"}} {
		if o&p.op != 0 {
			parts = append(parts, p.name)
		}
	}
	return strings.Join(parts, ", ")
}

// Rule is one line of the gate: the keys of a pattern, what a run may do to them, and
// why it needs to. The patterns' placeholders are bound to the run's scope:
//
//	{D}      the run's deployment
//	{RUN}    the run's own id
//	{ID}     any run or plan id (letters, digits, '.', '_', '-')
//	{GRAPH}  NAMESPACE/KEY of a persistent graph the run holds (its config's)
//	{GRAPHNAME} NAMESPACE.KEY of a graph the run holds: its drift reports' folder name
//	         when its deployment's name was taken (DriftReportName)
//	{SHA}    a sha256, hex: the object's content, checked when it is written
//	{EXT}    nothing, or a '.' and an extension
//	{STACK}  a CloudFormation stack name
//	{PATH}   a policy file's path under policies/ (folders allowed), ending .rego or .json
//	{RULE}   a policy rule's id (its package: cairn.s3_public)
//
// A pattern ending in '/' is a folder: List is a listing of exactly that prefix.
type Rule struct {
	Pattern string
	Ops     Op
	Why     string
	re      *regexp.Regexp
}

// Rules are everything a run of deployment D may touch in cairn's bucket, and nothing
// else is: not another deployment's bundles, plans, approvals or runs, not a graph or
// lock its config does not name, not ports/ (the ports function's) nor drift/ (the drift
// function's) but D's drift reports, read only. docs/threat-model.md prints this table (TestThreatModelTable).
var Rules = compile([]Rule{
	{Pattern: "deployments/{D}.zip", Ops: OpRead | OpList, Why: "the bundle pushed for D (and its versions, to tell a newer push)"},
	{Pattern: "plans/{D}.zip", Ops: OpRead, Why: "the bundle uploaded to plan D"},
	{Pattern: "approvals/{D}.zip", Ops: OpRead | OpList, Why: "the content `cairn apply` asks to apply from D's reviewed plans (and its versions, to tell a newer one)"},
	{Pattern: "approvals/{D}/{ID}", Ops: OpRead, Why: "an approval of one of D's plans"},
	{Pattern: "approvals/{D}/", Ops: OpList, Why: "which of D's plans are approved"},
	{Pattern: "plans/{D}/{ID}.json", Ops: OpRead | OpWrite, Why: "D's plans"},
	{Pattern: "plans/{D}/{ID}.md", Ops: OpWrite, Why: "D's plan comments"},
	{Pattern: "plans/{D}/{ID}.html", Ops: OpWrite, Why: "D's plan pages"},
	{Pattern: "plans/{D}/", Ops: OpList, Why: "D's plans, for hygiene and apply"},
	{Pattern: "runs/{D}/{ID}.json", Ops: OpRead | OpWrite, Why: "D's runs (a newer push supersedes an older run)"},
	{Pattern: "runs/{D}/{ID}.md", Ops: OpWrite, Why: "D's run reports"},
	{Pattern: "runs/{D}/{ID}.html", Ops: OpWrite, Why: "D's run pages"},
	{Pattern: "runs/{D}/", Ops: OpList, Why: "D's runs"},
	{Pattern: "runs/active/{RUN}.json", Ops: OpRead | OpWrite | OpDelete, Why: "the run's own entry in the index of open runs"},
	{Pattern: "runs/active/stacks/{STACK}.json", Ops: OpRead | OpWrite | OpDelete, Why: "which run started a stack, so its events find the run"},
	{Pattern: "state/{GRAPH}.json", Ops: OpRead | OpWrite | OpDelete | OpList, Why: "the persistent graph the run's config names (its owner is checked in the document; a destroy deletes it)"},
	{Pattern: "locks/{GRAPH}.lock", Ops: OpRead | OpWrite | OpDelete, Why: "that graph's lock"},
	{Pattern: "templates/{SHA}.json", Ops: OpRead | OpWrite, Why: "templates passed by TemplateURL, written only with the content their key names"},
	{Pattern: "drift/{D}/", Ops: OpList, Why: "D's drift reports, to find the newest a plan shows what changed outside cairn from"},
	{Pattern: "drift/{D}/{ID}.json", Ops: OpRead, Why: "a drift report of D (read only: the drift function writes them)"},
	{Pattern: "drift/{GRAPHNAME}/", Ops: OpList, Why: "the drift reports of the graph the run holds, filed under NAMESPACE.KEY when D's name was taken by another graph"},
	{Pattern: "drift/{GRAPHNAME}/{ID}.json", Ops: OpRead, Why: "a drift report of the graph the run holds (read only)"},
	{Pattern: "assets/{SHA}{EXT}", Ops: OpRead | OpWrite, Why: "packaged artifacts, written only with the content their key names"},
	{Pattern: "policies/", Ops: OpList, Why: "the team's policies: whether there are any, and which (the policy function)"},
	{Pattern: "policies/{PATH}", Ops: OpRead, Why: "the team's policies (.rego, .json), read by the policy function; only the policy role writes them"},
	{Pattern: "policy-overrides/{D}/{ID}/", Ops: OpList, Why: "the overrides of one of D's plans"},
	{Pattern: "policy-overrides/{D}/{ID}/{RULE}.json", Ops: OpRead, Why: "an override of a rule's denials in one of D's plans; only the policy role writes them"},
})

// RoutingRules are what any invocation of the deployer may touch before it knows which
// run a trigger is for (Routing): the open-run index, to find a stack event's run and the
// runs whose heartbeat was lost.
var RoutingRules = compile([]Rule{
	{Pattern: "runs/active/", Ops: OpList, Why: "the open runs, to resume those whose heartbeat was lost"},
	{Pattern: "runs/active/{ID}.json", Ops: OpRead, Why: "an open run's entry"},
	{Pattern: "runs/active/stacks/{STACK}.json", Ops: OpRead, Why: "the run a stack event is for"},
})

var placeholders = map[string]string{
	"{D}":         `(?P<D>[^/]+)`,
	"{RUN}":       `(?P<RUN>[^/]+)`,
	"{ID}":        `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`,
	"{GRAPH}":     `(?P<GRAPH>[^/]+/[^/]+)`,
	"{GRAPHNAME}": `(?P<GRAPHNAME>[^/]+)`,
	"{SHA}":       `(?P<SHA>[0-9a-f]{64})`,
	"{EXT}":       `(?:\.[A-Za-z0-9][A-Za-z0-9.]{0,15})?`,
	"{STACK}":     `[A-Za-z][-A-Za-z0-9]{0,127}`,
	"{PATH}":      `(?:[A-Za-z0-9_][A-Za-z0-9._-]*/)*[A-Za-z0-9_][A-Za-z0-9._-]*\.(?:rego|json)`,
	"{RULE}":      `[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*`,
}

var placeholderRE = regexp.MustCompile(`\{[A-Z]+\}`)

func compile(rules []Rule) []Rule {
	for i, r := range rules {
		var b strings.Builder
		b.WriteString("^")
		last := 0
		for _, m := range placeholderRE.FindAllStringIndex(r.Pattern, -1) {
			b.WriteString(regexp.QuoteMeta(r.Pattern[last:m[0]]))
			p, ok := placeholders[r.Pattern[m[0]:m[1]]]
			if !ok {
				panic("bucket: unknown placeholder in gate pattern " + r.Pattern)
			}
			b.WriteString(p)
			last = m[1]
		}
		b.WriteString(regexp.QuoteMeta(r.Pattern[last:]))
		b.WriteString("$")
		rules[i].re = regexp.MustCompile(b.String())
	}
	return rules
}

// Scope is what one run may touch in cairn's bucket: the keys of its deployment, of its
// own run, and of the persistent graphs it holds (learnt when its config is read). It
// travels in the context of every call the run makes (WithScope); the gate (Gated) reads
// it there. A scope with no deployment is Routing's.
type Scope struct {
	mu         sync.Mutex
	deployment string
	run        string
	graphs     []string // NAMESPACE/KEY
}

// ForDeployment is the scope of a run of deployment, whose id and graphs are not known yet.
func ForDeployment(deployment string) *Scope { return &Scope{deployment: deployment} }

// Routing is the scope of an invocation that has not yet found the run a trigger is for.
func Routing() *Scope { return &Scope{} }

// SetRun names the run the scope is of.
func (s *Scope) SetRun(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run = id
}

// Hold adds the persistent graph namespace/key to what the run may read and write: the
// one its config names. Its owner is checked in the document (state).
func (s *Scope) Hold(namespace, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := namespace + "/" + key
	if !slices.Contains(s.graphs, g) {
		s.graphs = append(s.graphs, g)
	}
}

// Deployment is the deployment the scope is of ("" for Routing).
func (s *Scope) Deployment() string { return s.deployment }

func (s *Scope) String() string {
	if s == nil {
		return "a call with no scope"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deployment == "" {
		return "an invocation routing its triggers"
	}
	out := "a run of deployment " + s.deployment
	if len(s.graphs) > 0 {
		out += " (graphs it holds: " + strings.Join(s.graphs, ", ") + ")"
	}
	return out
}

// Allows reports whether the scope may do op on key (a folder for OpList), and refuses
// anything no rule gives it, saying which rule set judged it.
func (s *Scope) Allows(op Op, key string) error {
	if s == nil {
		return &RefusedError{Op: op, Key: key, Scope: s.String()}
	}
	rules := Rules
	if s.deployment == "" {
		rules = RoutingRules
	}
	s.mu.Lock()
	ok := s.matches(rules, op, key)
	s.mu.Unlock()
	if ok {
		return nil
	}
	return &RefusedError{Op: op, Key: key, Scope: s.String()}
}

func (s *Scope) matches(rules []Rule, op Op, key string) bool {
	for _, r := range rules {
		if r.Ops&op != op {
			continue
		}
		m := r.re.FindStringSubmatch(key)
		if m == nil {
			continue
		}
		ok := true
		for i, name := range r.re.SubexpNames() {
			switch name {
			case "D":
				ok = ok && m[i] == s.deployment
			case "RUN":
				ok = ok && s.run != "" && m[i] == s.run
			case "GRAPH":
				ok = ok && slices.Contains(s.graphs, m[i])
			case "GRAPHNAME":
				ok = ok && slices.ContainsFunc(s.graphs, func(g string) bool {
					ns, key, _ := strings.Cut(g, "/")
					return DriftReportName(ns, key) == m[i]
				})
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// RefusedError is a request the gate refused: nothing was sent to S3.
type RefusedError struct {
	Op    Op
	Key   string
	Scope string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("cairn's bucket: %s may not %s %s: it touches only the keys of its own deployment (docs/threat-model.md: the bucket); refused before any request", e.Scope, e.Op, e.Key)
}

type scopeKey struct{}

// WithScope returns ctx carrying scope: every call the gate sees under ctx is judged by it.
func WithScope(ctx context.Context, scope *Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}

// ScopeOf is the scope ctx carries (nil: none, and the gate refuses everything).
func ScopeOf(ctx context.Context) *Scope {
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	return s
}

// ContentAddressed returns the sha256 (hex) a key of templates/ or assets/ names, whose
// object must hold exactly that content.
func ContentAddressed(key string) (string, bool) {
	if sha, _, ok := ParseAssetKey(key); ok {
		return sha, true
	}
	if rest, ok := strings.CutPrefix(key, TemplatesPrefix); ok {
		if sha, ok := strings.CutSuffix(rest, jsonExt); ok && len(sha) == 64 && strings.Trim(sha, "0123456789abcdef") == "" {
			return sha, true
		}
	}
	return "", false
}
