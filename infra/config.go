package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/target"
)

// Context keys that configure cairn's stack. They are read from cdk.json or
// from `cdk synth -c KEY=VALUE`, so every value accepts both the JSON form
// (a list or an object) and the flat string form the CLI passes.
const (
	ctxNamespaces     = "cairn:namespaces"
	ctxPortPools      = "cairn:portPools"
	ctxDriftSchedule  = "cairn:driftSchedule"
	ctxCfnServiceRole = "cairn:cfnServiceRole"
	ctxSSMPaths       = "cairn:ssmPaths"
	ctxLambdaDir      = "cairn:lambdaDir"
	ctxTargets        = "cairn:targets"
	ctxHome           = "cairn:home"
)

// Defaults used when a context key is absent.
const (
	defaultPortPools     = "default=20000-29999"
	defaultDriftSchedule = "rate(1 day)"
	defaultLambdaDir     = "../bin/lambda"
)

// PortPool is a named, inclusive range of ports the ports Lambda allocates from.
type PortPool struct {
	Name  string
	First int
	Last  int
}

func (p PortPool) String() string { return fmt.Sprintf("%s=%d-%d", p.Name, p.First, p.Last) }

// Config is cairn's deployment configuration, taken from CDK context.
type Config struct {
	// Namespaces are the stack name prefixes cairn may manage: a config with
	// namespace "shop" creates stacks named "shop-*", and IAM allows exactly those.
	Namespaces []string
	// PortPools are sorted by name so the template does not change when the
	// order in cdk.json does.
	PortPools []PortPool
	// DriftSchedule is an EventBridge schedule expression.
	DriftSchedule string
	// CfnServiceRole is the optional ARN of the role CloudFormation assumes for
	// the stacks cairn deploys; empty means stacks run with the deployer's rights.
	CfnServiceRole string
	// LambdaDir holds deployer/bootstrap, ports/bootstrap and drift/bootstrap.
	LambdaDir string
	// Home is the account and region cairn's own stack is deployed to; required with
	// Targets, which need to name cairn's roles, bus and queue.
	Home target.Target
	// Targets are the other accounts and regions cairn deploys stacks into, each with a
	// target stack; sorted by account and region.
	Targets []Target
	// SSMPaths are the Parameter Store names the deployer may read for ${ssm}
	// lookups (and decrypt, for SecureStrings under customer managed keys): a
	// name, or a path ending in /* for everything below it; the union of
	// SSMPathsOf, which IAM allows (one role serves every namespace). Empty means
	// no Parameter Store access.
	SSMPaths []string
	// SSMPathsOf are the paths each namespace may read ("*": every namespace), which
	// the deployer checks in code (CAIRN_SSM_PATHS). By default each namespace's
	// own path, /NAMESPACE/*.
	SSMPathsOf config.SSMPaths
	// CDKEnvironments are the environments whose CDK bootstrap roles (of CDKQualifier)
	// cairn may assume, to deploy CDK apps' assemblies there; sorted.
	CDKEnvironments []target.Target
	CDKQualifier    string
	// GitHub is the GitHub Actions setup (cairn:github): empty, none.
	GitHub GitHub
	// PolicyAdmins may assume the policy role (cairn:policyAdmins), sorted; empty: the
	// account's principals allowed to by their own policies.
	PolicyAdmins []string
}

// Target is one account and region cairn deploys into, with its target stack's options.
type Target struct {
	target.Target
	// ServiceRole is the ARN of the CloudFormation service role (in the target's account)
	// the deploy role may pass; empty: none.
	ServiceRole string
	// ExternalID, when set, must be given by whoever assumes the deploy role.
	ExternalID string
}

// Functions are the Lambda functions cairn consists of, named as their folders
// under functions/ and bin/lambda/.
var Functions = []string{"deployer", "ports", "drift", "policy"}

var (
	namespaceRe = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]{0,100}$`)
	poolNameRe  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	scheduleRe  = regexp.MustCompile(`^(rate\(\d+ (minute|minutes|hour|hours|day|days)\)|cron\(\S+ \S+ \S+ \S+ \S+ \S+\))$`)
	roleARNRe   = regexp.MustCompile(`^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$`)
	// ssmPathRe is a parameter name (letters, digits and _.- between slashes,
	// as Parameter Store allows) or a path of them ending in /*.
	ssmPathRe = regexp.MustCompile(`^(/[a-zA-Z0-9_.-]+)+(/\*)?$`)
)

// contextGetter is what Config needs of a construct node: constructs.Node
// satisfies it, and tests can pass a map.
type contextGetter interface {
	TryGetContext(key *string) interface{}
}

// LoadConfig reads and validates cairn's context values. Every error names the
// context key, the bad value and how to fix it.
func LoadConfig(node contextGetter) (Config, error) {
	get := func(key string) interface{} { k := key; return node.TryGetContext(&k) }
	var cfg Config

	ns, err := stringList(get(ctxNamespaces))
	if err != nil {
		return cfg, fmt.Errorf("context %s: %w", ctxNamespaces, err)
	}
	if len(ns) == 0 {
		return cfg, fmt.Errorf("context %s is empty: cairn needs at least one namespace it may manage; set it in infra/cdk.json or pass -c %s=shop,web", ctxNamespaces, ctxNamespaces)
	}
	seen := map[string]bool{}
	for _, n := range ns {
		if !namespaceRe.MatchString(n) {
			return cfg, fmt.Errorf("context %s: namespace %q is not a valid stack name prefix: use letters, digits and hyphens, starting with a letter", ctxNamespaces, n)
		}
		if seen[n] {
			return cfg, fmt.Errorf("context %s: namespace %q is listed twice: remove the duplicate", ctxNamespaces, n)
		}
		seen[n] = true
	}
	sort.Strings(ns)
	cfg.Namespaces = ns

	pools, err := parsePortPools(get(ctxPortPools))
	if err != nil {
		return cfg, fmt.Errorf("context %s: %w", ctxPortPools, err)
	}
	cfg.PortPools = pools

	cfg.DriftSchedule = defaultDriftSchedule
	if v := get(ctxDriftSchedule); v != nil {
		s, ok := v.(string)
		if !ok || !scheduleRe.MatchString(strings.TrimSpace(s)) {
			return cfg, fmt.Errorf("context %s: %v is not an EventBridge schedule expression: use e.g. \"rate(1 day)\", \"rate(6 hours)\" or \"cron(0 6 * * ? *)\"", ctxDriftSchedule, v)
		}
		cfg.DriftSchedule = strings.TrimSpace(s)
	}

	if v := get(ctxCfnServiceRole); v != nil {
		s, ok := v.(string)
		s = strings.TrimSpace(s)
		if !ok || (s != "" && !roleARNRe.MatchString(s)) {
			return cfg, fmt.Errorf("context %s: %v is not an IAM role ARN: use arn:aws:iam::ACCOUNT:role/NAME, or leave it unset", ctxCfnServiceRole, v)
		}
		cfg.CfnServiceRole = s
	}

	if err := loadTargets(&cfg, get(ctxHome), get(ctxTargets)); err != nil {
		return cfg, err
	}
	if err := loadCDK(&cfg, get(ctxCDKEnvironments), get(ctxCDKQualifier)); err != nil {
		return cfg, err
	}
	if err := loadGitHub(&cfg, get); err != nil {
		return cfg, err
	}
	if err := loadPolicyAdmins(&cfg, get(ctxPolicyAdmins)); err != nil {
		return cfg, err
	}
	ssm, err := ssmPaths(get(ctxSSMPaths), ns)
	if err != nil {
		return cfg, fmt.Errorf("context %s: %w", ctxSSMPaths, err)
	}
	cfg.SSMPathsOf = ssm
	for _, paths := range ssm {
		cfg.SSMPaths = append(cfg.SSMPaths, paths...)
	}
	sort.Strings(cfg.SSMPaths)
	cfg.SSMPaths = slices.Compact(cfg.SSMPaths)

	cfg.LambdaDir = defaultLambdaDir
	if v := get(ctxLambdaDir); v != nil {
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return cfg, fmt.Errorf("context %s: %v is not a directory path: point it at the folder holding deployer/bootstrap, ports/bootstrap and drift/bootstrap", ctxLambdaDir, v)
		}
		cfg.LambdaDir = s
	}
	return cfg, nil
}

// ssmPaths reads cairn:ssmPaths: the Parameter Store names and paths ending in /* each
// namespace may read. A list (or a comma-separated string) is every namespace's; an
// object maps namespaces ("*": every one) to lists. Unset, each namespace reads
// /NAMESPACE/*. Each list is sorted and deduplicated, so the template does not change
// with their order.
func ssmPaths(v interface{}, namespaces []string) (config.SSMPaths, error) {
	out := config.SSMPaths{}
	if v == nil {
		for _, n := range namespaces {
			out[n] = []string{"/" + n + "/*"}
		}
		return out, nil
	}
	byNamespace := map[string]interface{}{}
	switch t := v.(type) {
	case map[string]interface{}:
		byNamespace = t
	case string:
		if strings.HasPrefix(strings.TrimSpace(t), "{") {
			if err := json.Unmarshal([]byte(t), &byNamespace); err != nil {
				return nil, fmt.Errorf("%q is not a JSON object of namespaces to lists of paths: %v", t, err)
			}
		} else {
			byNamespace["*"] = t
		}
	default:
		byNamespace["*"] = v
	}
	for ns, list := range byNamespace {
		if ns != "*" && !slices.Contains(namespaces, ns) {
			return nil, fmt.Errorf("namespace %q is not one of cairn:namespaces (%s): give paths to those, or \"*\" for every one", ns, strings.Join(namespaces, ", "))
		}
		paths, err := stringList(list)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			if !ssmPathRe.MatchString(p) {
				return nil, fmt.Errorf("%q is not a parameter name or path: write /NAME for one parameter or /PATH/* for every parameter below PATH (e.g. /shop/*); a wildcard anywhere else, or over every parameter, is refused", p)
			}
		}
		if len(paths) > 0 {
			sort.Strings(paths)
			out[ns] = slices.Compact(paths)
		}
	}
	return out, nil
}

// NamespacesEnv is the CAIRN_NAMESPACES value: namespaces joined by commas.
func (c Config) NamespacesEnv() string { return strings.Join(c.Namespaces, ",") }

// PortPoolsEnv is the CAIRN_PORT_POOLS value: "NAME=FIRST-LAST" joined by commas,
// sorted by name, e.g. "default=20000-29999,web=30000-30999".
func (c Config) PortPoolsEnv() string {
	s := make([]string, len(c.PortPools))
	for i, p := range c.PortPools {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// stringList accepts a JSON list of strings or a comma-separated string.
func stringList(v interface{}) ([]string, error) {
	var raw []string
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		// The CLI's -c flag passes a string; a JSON list in it is accepted too.
		if strings.HasPrefix(strings.TrimSpace(t), "[") {
			if err := json.Unmarshal([]byte(t), &raw); err != nil {
				return nil, fmt.Errorf("%q is not a JSON list of strings: %v", t, err)
			}
		} else {
			raw = strings.Split(t, ",")
		}
	case []interface{}:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("element %v is a %T, not a string", e, e)
			}
			raw = append(raw, s)
		}
	default:
		return nil, fmt.Errorf("%v is a %T: use a list of strings or a comma-separated string", v, v)
	}
	var out []string
	for _, s := range raw {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// parsePortPools accepts "NAME=FIRST-LAST[,NAME=FIRST-LAST...]", a list of such
// strings, or an object {"NAME": "FIRST-LAST"}.
func parsePortPools(v interface{}) ([]PortPool, error) {
	var specs []string
	switch t := v.(type) {
	case nil:
		specs = []string{defaultPortPools}
	case map[string]interface{}:
		for name, r := range t {
			rs, ok := r.(string)
			if !ok {
				return nil, fmt.Errorf("pool %q: range %v is a %T: write it as \"FIRST-LAST\"", name, r, r)
			}
			specs = append(specs, name+"="+rs)
		}
	default:
		var err error
		if specs, err = stringList(v); err != nil {
			return nil, err
		}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("no pools: define at least one, e.g. %q", defaultPortPools)
	}
	var pools []PortPool
	byName := map[string]bool{}
	for _, spec := range specs {
		p, err := parsePortPool(spec)
		if err != nil {
			return nil, err
		}
		if byName[p.Name] {
			return nil, fmt.Errorf("pool %q is defined twice: keep one definition", p.Name)
		}
		byName[p.Name] = true
		pools = append(pools, p)
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].First < pools[j].First })
	for i := 1; i < len(pools); i++ {
		if a, b := pools[i-1], pools[i]; b.First <= a.Last {
			return nil, fmt.Errorf("pools %q (%d-%d) and %q (%d-%d) overlap: one port could be given to two resources; make the ranges disjoint", a.Name, a.First, a.Last, b.Name, b.First, b.Last)
		}
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	return pools, nil
}

func parsePortPool(spec string) (PortPool, error) {
	name, rng, ok := strings.Cut(strings.TrimSpace(spec), "=")
	name = strings.TrimSpace(name)
	if !ok || !poolNameRe.MatchString(name) {
		return PortPool{}, fmt.Errorf("%q is not NAME=FIRST-LAST with a lower-case pool name, e.g. %q", spec, defaultPortPools)
	}
	lo, hi, ok := strings.Cut(strings.TrimSpace(rng), "-")
	first, err1 := strconv.Atoi(strings.TrimSpace(lo))
	last, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || err1 != nil || err2 != nil {
		return PortPool{}, fmt.Errorf("pool %q: range %q is not FIRST-LAST, e.g. 20000-29999", name, rng)
	}
	if first < 1 || last > 65535 || first > last {
		return PortPool{}, fmt.Errorf("pool %q: range %d-%d must satisfy 1 <= FIRST <= LAST <= 65535", name, first, last)
	}
	return PortPool{Name: name, First: first, Last: last}, nil
}

var externalIDRE = regexp.MustCompile(`^[\w+=,.@:/-]+$`)

// loadTargets reads cairn:home and cairn:targets: "ACCOUNT:REGION" strings (a list or
// comma-separated), or objects {"account", "region", "serviceRole", "externalId"}.
func loadTargets(cfg *Config, home, targets interface{}) error {
	var raw []interface{}
	switch t := targets.(type) {
	case nil:
	case []interface{}:
		raw = t
	case string:
		l, err := stringList(t)
		if err != nil {
			return fmt.Errorf("context %s: %w", ctxTargets, err)
		}
		for _, s := range l {
			raw = append(raw, s)
		}
	default:
		return fmt.Errorf("context %s: %v is a %T: use a list of \"ACCOUNT:REGION\" strings or objects {\"account\", \"region\", \"serviceRole\", \"externalId\"}", ctxTargets, targets, targets)
	}
	if h, ok := home.(string); ok && strings.TrimSpace(h) != "" {
		t, err := target.Parse(h)
		if err != nil {
			return fmt.Errorf("context %s: %w", ctxHome, err)
		}
		cfg.Home = t
	} else if home != nil {
		return fmt.Errorf("context %s: %v is not \"ACCOUNT:REGION\", the account and region of cairn's own stack", ctxHome, home)
	}
	if len(raw) == 0 {
		return nil
	}
	if cfg.Home.Account == "" {
		return fmt.Errorf("context %s is needed with %s: the target stacks name cairn's roles, bus and ports queue; set it to cairn's own ACCOUNT:REGION, e.g. -c %s=123456789012:us-east-1", ctxHome, ctxTargets, ctxHome)
	}
	seen := map[target.Target]bool{}
	for _, v := range raw {
		var t Target
		switch e := v.(type) {
		case string:
			tt, err := target.Parse(e)
			if err != nil {
				return fmt.Errorf("context %s: %w", ctxTargets, err)
			}
			t.Target = tt
		case map[string]interface{}:
			for k := range e {
				if k != "account" && k != "region" && k != "serviceRole" && k != "externalId" {
					return fmt.Errorf("context %s: unknown key %q in %v: use account, region, serviceRole and externalId", ctxTargets, k, e)
				}
			}
			t.Account, _ = e["account"].(string)
			t.Region, _ = e["region"].(string)
			t.ServiceRole, _ = e["serviceRole"].(string)
			t.ExternalID, _ = e["externalId"].(string)
			if err := t.Validate(); err != nil {
				return fmt.Errorf("context %s: %v: %w", ctxTargets, e, err)
			}
		default:
			return fmt.Errorf("context %s: element %v is a %T: use \"ACCOUNT:REGION\" or an object", ctxTargets, v, v)
		}
		if t.Target == cfg.Home {
			return fmt.Errorf("context %s: %s is cairn's own account and region (%s), which needs no target stack: remove it", ctxTargets, t.Target, ctxHome)
		}
		if seen[t.Target] {
			return fmt.Errorf("context %s: %s is listed twice: remove the duplicate", ctxTargets, t.Target)
		}
		seen[t.Target] = true
		if t.ServiceRole != "" {
			if !roleARNRe.MatchString(t.ServiceRole) || !strings.Contains(t.ServiceRole, "::"+t.Account+":") {
				return fmt.Errorf("context %s: %s: serviceRole %q is not the ARN of a role in account %s", ctxTargets, t.Target, t.ServiceRole, t.Account)
			}
		}
		if t.ExternalID != "" && (len(t.ExternalID) < 2 || len(t.ExternalID) > 1224 || !externalIDRE.MatchString(t.ExternalID)) {
			return fmt.Errorf("context %s: %s: externalId must be 2 to 1224 letters, digits or +=,.@:/-", ctxTargets, t.Target)
		}
		cfg.Targets = append(cfg.Targets, t)
	}
	sort.Slice(cfg.Targets, func(i, j int) bool { return cfg.Targets[i].String() < cfg.Targets[j].String() })
	return nil
}

// TargetAccounts returns the accounts of the targets other than cairn's own, sorted, once
// each.
func (c Config) TargetAccounts() []string {
	var out []string
	for _, t := range c.Targets {
		if t.Account != c.Home.Account && !slices.Contains(out, t.Account) {
			out = append(out, t.Account)
		}
	}
	sort.Strings(out)
	return out
}
