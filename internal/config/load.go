package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/assembly"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/graph"
	"github.com/cairn-dev/cairn/internal/template"
	"github.com/cairn-dev/cairn/internal/yamlnode"
)

// LoadOptions are facts about a deployment that are not in its config.
type LoadOptions struct {
	// Deployment is the deployment's name (NAME in deployments/NAME.zip); it is the default
	// persistent_graph_key.
	Deployment string
	// Namespaces is the allow-list of namespaces (empty: every namespace); a namespace or
	// a stack name outside it is an error.
	Namespaces Namespaces
	// Vars is the content of a var file (push --var-file) whose values override the
	// config's variables; when nil, the bundle's cairn.vars.yaml is read if it has one.
	// VarsFile names it in messages.
	Vars     []byte
	VarsFile string
	// SSMPaths are the Parameter Store paths each namespace's ${ssm} lookups may read
	// (nil: every name); a lookup outside them is an error.
	SSMPaths SSMPaths
	// Bucket is cairn's own bucket ("" when not known, e.g. offline): a template URL
	// naming one of its objects outside templates/ is an error (bucket.CheckTemplateURL).
	Bucket string
	// Today is the day (YYYY-MM-DD, UTC) Lambda runtimes are judged on: a function whose
	// runtime AWS blocks creating functions with by then is an error, one deprecated by
	// then a warning (template.RuntimeProblem). Empty: the current date (template.Today).
	// The deployer passes its clock's date.
	Today string
}

// Load loads and validates the bundle's config with no deployment name.
func Load(b *bundle.Bundle) (*Config, error) { return LoadOptions{}.Load(b) }

// Load loads and validates the bundle's config. On any problem it returns nil and the
// Errors, all of them, in file order.
func (o LoadOptions) Load(b *bundle.Bundle) (*Config, error) {
	l := o.loader(b, false)
	c := l.load(o)
	if l.needComments {
		// An inline template_body mapping keeps its comments in the body: load again,
		// with the config's comments read.
		l = o.loader(b, true)
		c = l.load(o)
	}
	if c != nil {
		sortErrors(l.warnings, l.file)
		c.Warnings = l.warnings
	}
	if len(l.errs) > 0 {
		sortErrors(l.errs, l.file)
		return nil, l.errs
	}
	return c, nil
}

func (o LoadOptions) loader(b *bundle.Bundle, withComments bool) *loader {
	l := &loader{b: b, file: b.ConfigFile, templates: map[source]*templateResult{}, files: map[string][]byte{}, bucket: o.Bucket, ssm: o.SSMPaths, day: o.Today, withComments: withComments}
	if l.day == "" {
		l.day = template.Today()
	}
	return l
}

// sortErrors orders errors by file (the config first), line and column.
func sortErrors(es Errors, first string) {
	slices.SortStableFunc(es, func(a, b *Error) int {
		if a.File != b.File {
			if a.File == first || b.File == first {
				return map[bool]int{true: -1, false: 1}[a.File == first]
			}
			return strings.Compare(a.File, b.File)
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
}

// validStackName reports whether s is what CloudFormation accepts as a stack name (with
// at most 128 characters): ^[a-zA-Z][-a-zA-Z0-9]*$, checked without a regexp because a
// large config checks thousands.
func validStackName(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !('0' <= c && c <= '9') && c != '-' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// graphKeyRE keeps a persistent graph key usable as one S3 key segment.
var graphKeyRE = regexp.MustCompile(`^[a-zA-Z0-9][-_.a-zA-Z0-9]*$`)

var capabilities = []string{"CAPABILITY_AUTO_EXPAND", "CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"}

var (
	topKeys = []string{"namespace", "namespace_delimiter", "persistent_graph_key", "take_over_graph_from", "hand_over_graph_to", "tags",
		"deletion_policy", "max_concurrency", "drift", "capabilities", "variables", "stacks",
		"region", "role_arn", "external_id", "service_role"}
	stackKeys = slices.Concat([]string{"name", "stack_name", "template_path", "template_url", "template_body",
		"parameters", "variables", "requires", "required_by", "tags", "termination_protection",
		"protected", "enabled", "locked", "capabilities"}, optionKeys(),
		[]string{"region", "role_arn", "external_id", "service_role"})
	deletionKeys = []string{"max_deletions"}
	driftKeys    = []string{"enabled", "ignore"}
)

type loader struct {
	b *bundle.Bundle
	// bucket is cairn's own bucket (LoadOptions.Bucket).
	bucket string
	// reportedLocations are the S3 location and dynamic reference errors reported
	// (stacks share templates).
	reportedLocations map[string]bool
	// ssm are the Parameter Store paths of each namespace (LoadOptions.SSMPaths), and
	// namespace the config's, for the templates' dynamic references.
	ssm       SSMPaths
	namespace string
	// reads are what each template may read (templateReads), found once per template.
	reads map[*template.Template]templateReads
	// day is the day Lambda runtimes are judged on (LoadOptions.Today).
	day       string
	file      string
	errs      Errors
	warnings  Errors
	templates map[source]*templateResult // by template path, or by body
	// trees: the nested stacks and artifacts of a template were walked (by its
	// path, or by the sha256 of an inline body), each template once.
	trees map[source]*treeResult
	// assets builds the bundle's artifacts, shared by every template naming one.
	assets  *artifact.Set
	checked map[string]*checkResult  // template checks by sha256: identical templates are checked once
	files   map[string][]byte        // template files read, by path as written
	paths   map[string]*templatePath // by template_path as written
	vars    map[string]string        // variables, the var file's over the config's
	data    map[string]dataResult    // files read by ${file}, by CODEC:PATH
	// topTags are the lookups of the config's tags, which every stack not overriding
	// the tag shares.
	topTags []lookupRef
	// topTarget holds the nodes of the top-level targetKeys, for errors of stacks
	// inheriting them.
	topTarget map[string]*yaml.Node

	// knownNames are the stack names, sorted, for suggestions; suggestions counts them,
	// so a config with thousands of typos stays linear.
	knownNames  []string
	suggestions int
	// withComments: the config's tree holds its comments. Without them (the faster
	// parse), commentsDropped says the config may have had some, and needComments that a
	// stack's inline template_body mapping would have kept them in its body: Load then
	// loads again, with them.
	withComments, commentsDropped, needComments bool
	// eval evaluates the lookups of values at load, made once (lookups).
	eval *evaluator
	// fieldBuf holds the results of fields, which callers only range over: a stack's are
	// given back when it is decoded (stack), so a large config reuses one buffer.
	fieldBuf fieldArena
	// merging holds the mappings whose merge keys (<<:) are being expanded, so a merge that
	// refers to a mapping containing it (an alias cycle) is an error, not endless recursion.
	merging map[*yaml.Node]bool
}

// maxSuggestions bounds the "did you mean" searches of unknown stack names in one load.
const maxSuggestions = 20

// source names a template: by its path in the bundle, or else by its body (an inline
// template_body, or its sha256). A struct, not a joined string, since every stack of a
// large config looks its template up.
type source struct{ path, body string }

type templateResult struct {
	t   *template.Template
	err error
	// reported: the template's own problems were reported (once per file or body).
	reported bool
	// checked is l.check(t), kept here for the next stack of this file or body.
	checked *checkResult
}

type checkResult struct {
	problems []template.Problem
	needs    []template.Need
	uses     map[string][]template.ParameterUse // by parameter
}

// stackDef is a stack with the nodes its errors point at.
type stackDef struct {
	s                          *Stack
	key                        string // stacks[i]
	node, nameNode, stackNameN *yaml.Node
	templateNode, paramsNode   *yaml.Node
	templateKey                string // the key holding the template: template_path, ...
	templateOK                 bool   // the template key's value decoded
	capsNode                   *yaml.Node
	inline                     *yaml.Node // an inline template_body given as a mapping
	// params are the parameters given, in the config's order (a slice: a stack has few,
	// and a large config many stacks).
	params               []givenParam
	requires, requiredBy []*yaml.Node
	// lookupAt locates each of the stack's Lookups (s.Lookups[i] at lookupAt[i]).
	lookupAt []lookupAt
	ownTags  map[string]string
	// targetNodes holds the nodes of the stack's own targetKeys.
	targetNodes map[string]*yaml.Node
}

// givenParam is a parameter given to a stack, with its key node (kept even if its value is
// wrong), and its value when known at load (no deploy-time lookup), checked against the
// template's constraints, whose errors point at at: the value's node, or the key's when
// the parameter is merged into the parameters (<<:).
type givenParam struct {
	name   string
	k, at  *yaml.Node
	static string
	known  bool
}

// given reports whether the stack is given parameter name.
func (d *stackDef) given(name string) bool {
	for i := range d.params {
		if d.params[i].name == name {
			return true
		}
	}
	return false
}

// templateKeyPath is the key of the stack's template (stacks[i].template_path, ...), built
// for an error only: a large config has many stacks.
func (d *stackDef) templateKeyPath() string { return d.key + "." + d.templateKey }

// templatePath is what the stacks naming one template_path share: its label in messages,
// its file in the bundle, and its clean path, which starts its chain of nested templates.
type templatePath struct {
	label, file, clean string
	chain              []string
}

// templatePath returns what stacks naming template_path p share, made once per path.
func (l *loader) templatePath(p string) *templatePath {
	if tp, ok := l.paths[p]; ok {
		return tp
	}
	clean := path.Clean(p)
	tp := &templatePath{label: "template " + p, file: filepath.Join(filepath.Dir(l.file), p), clean: clean, chain: []string{clean}}
	if l.paths == nil {
		l.paths = map[string]*templatePath{}
	}
	l.paths[p] = tp
	return tp
}

// lookupAt is where a lookup is written: the node and key of its value.
type lookupAt struct {
	node *yaml.Node
	key  string
}

// addLookup adds a lookup of the stack.
func (d *stackDef) addLookup(lr lookupRef) {
	d.s.Lookups = append(d.s.Lookups, lr.l)
	d.lookupAt = append(d.lookupAt, lookupAt{lr.node, lr.key})
}

// sortLookups orders the stack's lookups by parameter, then tag (a stable insertion sort
// of both slices: a stack has few).
func (d *stackDef) sortLookups() {
	ls, at := d.s.Lookups, d.lookupAt
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && cmp.Or(strings.Compare(ls[j].Param, ls[j-1].Param), strings.Compare(ls[j].Tag, ls[j-1].Tag)) < 0; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
			at[j], at[j-1] = at[j-1], at[j]
		}
	}
}

type lookupRef struct {
	l    Lookup
	node *yaml.Node
	key  string
}

// dep is one dependency: entry idx of the requires, required_by or lookups of stack d.
// Its ends, node and key (for locating a cycle) are read from d when needed: a large
// config has many deps.
type dep struct {
	d    *stackDef
	list depList
	idx  int
}

type depList uint8

const (
	depRequires depList = iota
	depRequiredBy
	depLookup
)

func (p dep) from() string {
	if p.list == depRequiredBy {
		return p.d.s.RequiredBy[p.idx]
	}
	return p.d.s.Name
}

func (p dep) to() string {
	switch p.list {
	case depRequires:
		return p.d.s.Requires[p.idx]
	case depRequiredBy:
		return p.d.s.Name
	}
	return p.d.s.Lookups[p.idx].Stack
}

// node is the node that declares the dependency.
func (p dep) node() *yaml.Node {
	switch p.list {
	case depRequires:
		return p.d.requires[p.idx]
	case depRequiredBy:
		return p.d.requiredBy[p.idx]
	}
	return p.d.lookupAt[p.idx].node
}

func (p dep) fullKey() string {
	switch p.list {
	case depRequires:
		return fmt.Sprintf("%s.requires[%d]", p.d.key, p.idx)
	case depRequiredBy:
		return fmt.Sprintf("%s.required_by[%d]", p.d.key, p.idx)
	}
	return p.d.lookupAt[p.idx].key
}

func (l *loader) errorf(n *yaml.Node, key, format string, args ...any) {
	e := &Error{File: l.file, Line: 1, Col: 1, Key: key, Msg: fmt.Sprintf(format, args...)}
	if n != nil && n.Line > 0 {
		e.Line, e.Col = n.Line, n.Column
	}
	l.errs = append(l.errs, e)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (l *loader) load(o LoadOptions) *Config {
	if l.b.Config == nil {
		return l.assembly(o, nil) // a CDK cloud assembly alone
	}
	// The config is read without its comments, which nothing reads but the body of an
	// inline template_body mapping (needComments).
	parse := yamlnode.ParseWithoutComments
	if l.withComments {
		parse = yamlnode.Parse
	} else {
		l.commentsDropped = bytes.IndexByte(l.b.Config, '#') >= 0
	}
	doc, err := parse(l.b.Config)
	if err != nil {
		line, msg := 1, strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		l.errs = append(l.errs, &Error{File: l.file, Line: line, Col: 1, Msg: "invalid YAML: " + msg})
		return nil
	}
	root := resolve(doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = resolve(root.Content[0])
	}
	if root.Kind != yaml.MappingNode {
		l.errorf(root, "", "config must be a mapping with namespace and stacks, got %s", describe(root))
		return nil
	}
	if _, at := assembly.Named(root); at != nil {
		return l.assembly(o, root) // cairn.yaml beside a CDK cloud assembly
	}
	if isTemplate(root) {
		l.errorf(root, "", "this is a CloudFormation template, not a cairn config: write a config for it with `cairn init %s --from %s`", filepath.Dir(l.file), l.file)
		return nil
	}
	return l.loadRoot(o, root)
}

// isTemplate reports whether a config's root is a CloudFormation template's: it has
// Resources or AWSTemplateFormatVersion, and none of a config's namespace and stacks.
func isTemplate(root *yaml.Node) bool {
	keys := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		keys[root.Content[i].Value] = true
	}
	return (keys["Resources"] || keys["AWSTemplateFormatVersion"]) && !keys["stacks"] && !keys["namespace"]
}

// loadRoot loads the config document's root mapping.
func (l *loader) loadRoot(o LoadOptions, root *yaml.Node) *Config {
	c := &Config{
		File:               l.file,
		NamespaceDelimiter: DefaultNamespaceDelimiter,
		MaxConcurrency:     DefaultMaxConcurrency,
		Drift:              Drift{Enabled: true},
		Tags:               map[string]string{},
		byName:             map[string]*Stack{},
	}
	var stacksNode, namespaceNode, tagsNode, varsNode *yaml.Node
	for _, f := range l.fields(root, "", topKeys) {
		switch f.name {
		case "namespace":
			c.Namespace, _ = l.str(f.v, f.key)
			namespaceNode = f.v
		case "namespace_delimiter":
			c.NamespaceDelimiter, _ = l.str(f.v, f.key)
		case "persistent_graph_key":
			if k, ok := l.str(f.v, f.key); ok {
				if !graphKeyRE.MatchString(k) || strings.Contains(k, "..") {
					l.errorf(f.v, f.key, "%q is not a valid key: use letters, digits, '-', '_' and '.'", k)
				}
				c.PersistentGraphKey = k
			}
		case "take_over_graph_from":
			c.TakeOverGraphFrom = l.deploymentName(f)
		case "hand_over_graph_to":
			c.HandOverGraphTo = l.deploymentName(f)
		case "tags":
			tagsNode = f.v
		case "variables":
			varsNode = f.v
		case "deletion_policy":
			for _, g := range l.fields(f.v, f.key, deletionKeys) {
				if n, ok := l.integer(g.v, g.key); ok {
					if n < 0 {
						l.errorf(g.v, g.key, "must be 0 or more, got %d", n)
					}
					c.DeletionPolicy.MaxDeletions = n
				}
			}
		case "max_concurrency":
			if n, ok := l.integer(f.v, f.key); ok {
				if n < 1 {
					l.errorf(f.v, f.key, "must be at least 1, got %d", n)
				}
				c.MaxConcurrency = n
			}
		case "drift":
			for _, g := range l.fields(f.v, f.key, driftKeys) {
				switch g.name {
				case "enabled":
					c.Drift.Enabled, _ = l.boolean(g.v, g.key)
				case "ignore":
					pats, nodes := l.strs(g.v, g.key)
					for i, p := range pats {
						if _, err := path.Match(p, ""); err != nil {
							l.errorf(nodes[i], fmt.Sprintf("%s[%d]", g.key, i), "bad pattern %q: %v", p, err)
						}
					}
					c.Drift.Ignore = pats
				}
			}
		case "capabilities":
			if v, ok := l.str(f.v, f.key); ok {
				switch v {
				case "explicit":
					c.ExplicitCapabilities = true
				case "template":
				default:
					l.errorf(f.v, f.key, "must be explicit (every stack names its capabilities) or template (the default: a stack naming none is granted what its template needs), got %q", v)
				}
			}
		case "stacks":
			stacksNode = f.v
		case "region", "role_arn", "external_id", "service_role":
			l.targetField(&c.Target, f)
			if l.topTarget == nil {
				l.topTarget = map[string]*yaml.Node{}
			}
			l.topTarget[f.name] = f.v
		}
	}
	l.variables(varsNode, o)
	if tagsNode != nil {
		var lookups []lookupRef
		c.Tags, lookups = l.tags(tagsNode, "tags")
		for _, lr := range lookups {
			if lr.l.Kind == KindOutput {
				l.errorf(lr.node, lr.key, "the config's tags cannot read ${output %s::%s}: every stack would depend on stack %s; put the tag on the stacks that need it", lr.l.Stack, lr.l.Output, lr.l.Stack)
				continue
			}
			l.topTags = append(l.topTags, lr)
		}
	}
	namespaceOK := c.Namespace == "" || validStackName(c.Namespace)
	if !namespaceOK {
		l.errorf(namespaceNode, "namespace", "%q cannot start CloudFormation stack names: use letters, digits and hyphens, starting with a letter", c.Namespace)
	}
	if c.PersistentGraphKey == "" {
		c.PersistentGraphKey = o.Deployment
	}
	if c.PersistentGraphKey == "" {
		c.PersistentGraphKey = c.Namespace
	}
	if stacksNode == nil || stacksNode.Kind != yaml.SequenceNode {
		if stacksNode == nil {
			l.errorf(root, "stacks", "missing: a config needs a list of stacks")
		} else {
			l.errorf(stacksNode, "stacks", "must be a list of stacks, got %s", describe(stacksNode))
		}
		l.allowed(o, c, namespaceNode, nil) // the config's other errors still count
		return c
	}
	defs := make([]*stackDef, 0, len(stacksNode.Content))
	// The stacks and their definitions are made in two blocks, not one by one.
	stacks, slab := make([]Stack, len(stacksNode.Content)), make([]stackDef, len(stacksNode.Content))
	for i, n := range stacksNode.Content {
		if d := l.stack(c, resolve(n), "stacks["+strconv.Itoa(i)+"]", &slab[i], &stacks[i]); d != nil {
			defs = append(defs, d)
		}
	}
	l.names(c, defs, namespaceOK)
	l.allowed(o, c, namespaceNode, defs)
	l.ssmPaths(o, c, defs)
	deps := l.references(c, defs)
	l.cycles(c, deps)
	l.exports(defs)
	l.secretTags(c, defs)
	return c
}

// secretTags refuses a tag reading a secret output of a stack of the config (Secrecy):
// tags are shown to anyone who can describe the stack, and the deployer refuses such a
// tag when it resolves it (ResolveTags), so validate says so first, where it is written.
// The analysis runs only when some tag reads an output.
func (l *loader) secretTags(c *Config, defs []*stackDef) {
	var secrecy Secrecy
	byStackName := map[string]string{}
	for _, d := range defs {
		for i, lk := range d.s.Lookups {
			if lk.Tag == "" || lk.Output == "" || i >= len(d.lookupAt) {
				continue
			}
			if secrecy == nil {
				secrecy = c.Secrecy(nil)
				for _, s := range c.Stacks {
					byStackName[s.StackName] = s.Name
				}
			}
			stack := lk.Stack
			if lk.Kind != KindOutput {
				stack = byStackName[lk.StackName]
			}
			if _, secret := slices.BinarySearch(secrecy[stack].Outputs, lk.Output); stack != "" && secret {
				at := d.lookupAt[i]
				l.errorf(at.node, at.key, "tag %s reads output %s of stack %s, which is secret (a NoEcho parameter or a secret reaches it): tags are shown to anyone who can describe the stack, so cairn never puts a secret there; use a String parameter", lk.Tag, lk.Output, stack)
			}
		}
	}
}

// stack decodes one stack into d and s; template and parameter checks that need other
// stacks come later.
func (l *loader) stack(c *Config, n *yaml.Node, key string, d *stackDef, s *Stack) *stackDef {
	if n.Kind != yaml.MappingNode {
		l.errorf(n, key, "a stack must be a mapping with name and template_path, got %s", describe(n))
		return nil
	}
	*s = Stack{Enabled: true, Target: c.Target}
	// The stack's maps are made when their keys are met, at their size (targetNodes
	// stays nil when empty): a large config has many stacks.
	*d = stackDef{s: s, key: key, node: n}
	var ownTagLookups []lookupRef
	defer l.fieldBuf.release(l.fieldBuf.mark()) // the stack's fields are ranged over here only
	for _, f := range l.fields(n, key, stackKeys) {
		switch f.name {
		case "name":
			s.Name, _ = l.str(f.v, f.key)
			d.nameNode = f.v
		case "stack_name":
			s.StackName, _ = l.str(f.v, f.key)
			d.stackNameN = f.v
		case "template_path", "template_url", "template_body":
			if d.templateNode != nil {
				l.errorf(f.k, f.key, "a stack takes one of template_path, template_url and template_body")
				continue
			}
			d.templateNode, d.templateKey = f.v, f.name
			switch f.name {
			case "template_path":
				s.TemplatePath, d.templateOK = l.str(f.v, f.key)
			case "template_url":
				if u, ok := l.str(f.v, f.key); ok {
					d.templateOK = true
					if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "s3://") {
						l.errorf(f.v, f.key, "%q is not an https:// or s3:// URL", u)
					} else if err := layout.CheckTemplateURL(u, l.bucket); err != nil {
						l.errorf(f.v, f.key, "%v", err)
					}
					s.TemplateURL = u
				}
			case "template_body":
				if f.v.Kind == yaml.MappingNode {
					l.needComments = l.needComments || l.commentsDropped
					body, err := yaml.Marshal(f.v)
					if err != nil {
						l.errorf(f.v, f.key, "cannot re-encode the inline template: %v", err)
					}
					s.TemplateBody, d.templateOK, d.inline = body, err == nil, f.v
				} else if b, ok := l.str(f.v, f.key); ok {
					s.TemplateBody, d.templateOK = []byte(b), true
				}
			}
		case "parameters", "variables":
			if d.paramsNode != nil {
				l.errorf(f.k, f.key, "parameters and variables are the same key: use one")
				continue
			}
			d.paramsNode = f.k
			params := l.fields(f.v, f.key, nil)
			s.Parameters = make(map[string]string, len(params))
			d.params = make([]givenParam, 0, len(params))
			for _, p := range params {
				at := p.v
				if p.merged {
					at = p.k
				}
				d.params = append(d.params, givenParam{name: p.name, k: p.k, at: at}) // given, even if its value is wrong
				v, ok := l.str(p.v, p.key)
				if !ok {
					continue
				}
				s.Parameters[p.name] = v
				found, static, known, ok := l.lookups(v, p.v, p.key)
				if !ok {
					continue
				}
				if s.Lookups == nil && len(found) > 0 {
					size := len(found) + len(params) - len(d.params) + len(l.topTags)
					s.Lookups, d.lookupAt = make([]Lookup, 0, size), make([]lookupAt, 0, size)
				}
				for _, lk := range found {
					lk.Param = p.name
					d.addLookup(lookupRef{l: lk, node: p.v, key: p.key})
				}
				if known {
					gp := &d.params[len(d.params)-1]
					gp.static, gp.known = static, true
				}
			}
		case "requires":
			s.Requires, d.requires = l.strs(f.v, f.key)
		case "required_by":
			s.RequiredBy, d.requiredBy = l.strs(f.v, f.key)
		case "tags":
			d.ownTags, ownTagLookups = l.tags(f.v, f.key)
		case "termination_protection":
			s.TerminationProtection, _ = l.boolean(f.v, f.key)
		case "protected":
			s.Protected, _ = l.boolean(f.v, f.key)
		case "enabled":
			s.Enabled, _ = l.boolean(f.v, f.key)
		case "locked":
			s.Locked, _ = l.boolean(f.v, f.key)
		case "region", "role_arn", "external_id", "service_role":
			l.targetField(&s.Target, f)
			if d.targetNodes == nil {
				d.targetNodes = map[string]*yaml.Node{}
			}
			d.targetNodes[f.name] = f.v
		case "capabilities":
			d.capsNode = f.k
			caps, nodes := l.strs(f.v, f.key)
			for i, cp := range caps {
				if !slices.Contains(capabilities, cp) {
					l.errorf(nodes[i], fmt.Sprintf("%s[%d]", f.key, i), "unknown capability %q: use %s", cp, strings.Join(capabilities, ", "))
				}
			}
			s.Capabilities = caps
			if s.Capabilities == nil {
				s.Capabilities = []string{}
			}
		default:
			l.option(d, f) // a stack option (stackOptions)
		}
	}
	if s.Parameters == nil {
		s.Parameters = map[string]string{}
	}
	if d.nameNode == nil {
		l.errorf(n, key+".name", "missing: every stack needs a name")
	}
	if d.templateNode == nil {
		l.errorf(n, key, "no template: set template_path, template_url or template_body")
	}
	l.checkTarget(d)
	s.Tags = c.Tags // shared, read-only, unless the stack has tags of its own
	if len(d.ownTags) > 0 {
		s.Tags = maps.Clone(c.Tags)
		maps.Copy(s.Tags, d.ownTags)
	}
	for _, lr := range l.topTags {
		if _, own := d.ownTags[lr.l.Tag]; !own {
			d.addLookup(lr)
		}
	}
	for _, lr := range ownTagLookups {
		d.addLookup(lr)
	}
	d.sortLookups()
	return d
}

// names checks stack names, config names and CloudFormation names alike, and indexes them.
func (l *loader) names(c *Config, defs []*stackDef, namespaceOK bool) {
	// By identity: stacks in cairn's own account and region (most) by stack name alone.
	byStackName := make(map[string]*stackDef, len(defs))
	var byIdentity map[stackIdentity]*stackDef
	// claim records d's identity, or returns the stack that has it already.
	claim := func(d *stackDef) *stackDef {
		id := identity(d.s)
		if id.account == "" && id.region == "" {
			if first, dup := byStackName[id.stackName]; dup {
				return first
			}
			byStackName[id.stackName] = d
			return nil
		}
		if first, dup := byIdentity[id]; dup {
			return first
		}
		if byIdentity == nil {
			byIdentity = map[stackIdentity]*stackDef{}
		}
		byIdentity[id] = d
		return nil
	}
	byName := make(map[string]*stackDef, len(defs))
	if len(c.byName) == 0 {
		c.byName = make(map[string]*Stack, len(defs))
	}
	for _, d := range defs {
		s := d.s
		if d.nameNode != nil {
			if s.Name == "" {
				if n := resolve(d.nameNode); n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
					l.errorf(d.nameNode, d.key+".name", "must not be empty")
				} // else str reported the wrong type
			} else if first, dup := byName[s.Name]; dup {
				l.errorf(d.nameNode, d.key+".name", "duplicate stack name %q: %s (line %d) has it already", s.Name, first.key, first.nameNode.Line)
			} else {
				byName[s.Name] = d
				c.byName[s.Name] = s
			}
		}
		if d.nameNode != nil && c.byName[s.Name] != s {
			continue // empty or duplicate name, reported above
		}
		derived := s.StackName == ""
		at, atKey := d.stackNameN, ".stack_name" // after d.key: joined only for an error
		if derived {
			at, atKey = d.nameNode, ".name"
			if s.Name == "" {
				continue
			}
			s.StackName = s.Name
			if c.Namespace != "" {
				s.StackName = c.Namespace + c.NamespaceDelimiter + s.Name
			}
		}
		if !validStackName(s.StackName) || len(s.StackName) > 128 {
			if derived && !namespaceOK {
				continue // the namespace error says it once
			}
			how := ""
			if derived {
				how = " (namespace, delimiter and name joined)"
			}
			l.errorf(at, d.key+atKey, "CloudFormation stack name %q%s is invalid: it must start with a letter, hold only letters, digits and hyphens, and have at most 128 characters", s.StackName, how)
		} else if first := claim(d); first != nil {
			l.errorf(at, d.key+atKey, "stack %s has the CloudFormation stack name %q of stack %s (line %d) in the same account and region (%s): set a distinct stack_name, or another region or role_arn", s.Name, s.StackName, first.s.Name, first.node.Line, where(s.Target))
		}
	}
	c.Stacks = slices.Grow(c.Stacks, len(defs))
	for _, d := range defs {
		c.Stacks = append(c.Stacks, d.s)
	}
}

// references checks requires, required_by, lookups, templates and parameters, and
// returns the dependencies between known stacks.
func (l *loader) references(c *Config, defs []*stackDef) []dep {
	// Parse every template first: an output lookup may name a stack defined later.
	for _, d := range defs {
		l.template(c, d)
	}
	n := 0
	for _, d := range defs {
		n += len(d.requires) + len(d.requiredBy) + len(d.lookupAt)
	}
	deps := make([]dep, 0, n)
	known := func(name string, n *yaml.Node, key, what string) bool {
		if c.byName[name] != nil {
			return true
		}
		hint := ""
		if l.suggestions < maxSuggestions {
			l.suggestions++
			if l.knownNames == nil {
				l.knownNames = slices.Sorted(maps.Keys(c.byName))
			}
			hint = suggestList(name, l.knownNames)
		}
		l.errorf(n, key, "%s unknown stack %q%s", what, name, hint)
		return false
	}
	for _, d := range defs {
		s := d.s
		// Dependencies of an unnamed or duplicate stack would be attributed to another.
		own := s.Name != "" && c.byName[s.Name] == s
		for i, r := range s.Requires {
			dp := dep{d: d, list: depRequires, idx: i}
			if c.byName[r] != nil {
				if own {
					deps = append(deps, dp)
				}
			} else {
				known(r, dp.node(), dp.fullKey(), "requires")
			}
		}
		for i, r := range s.RequiredBy {
			dp := dep{d: d, list: depRequiredBy, idx: i}
			if c.byName[r] != nil {
				if own {
					deps = append(deps, dp)
				}
			} else {
				known(r, dp.node(), dp.fullKey(), "required_by names")
			}
		}
		for i, at := range d.lookupAt {
			lk := &s.Lookups[i]
			if lk.Kind == KindRxref {
				if c.byName[lk.Stack] != nil {
					l.errorf(at.node, at.key, "${rxref %s::%s} names stack %s of this config: write ${output %s::%s}, which also deploys %s first", lk.Stack, lk.Output, lk.Stack, lk.Stack, lk.Output, lk.Stack)
					continue
				}
				lk.StackName = lk.Stack
				if c.Namespace != "" {
					lk.StackName = c.Namespace + c.NamespaceDelimiter + lk.Stack
				}
				continue
			}
			if lk.Kind != KindOutput {
				continue
			}
			target := c.byName[lk.Stack]
			if target == nil {
				known(lk.Stack, at.node, at.key, "${output "+lk.Stack+"::"+lk.Output+"} names")
				continue
			}
			lk.StackName = target.StackName
			if own {
				deps = append(deps, dep{d: d, list: depLookup, idx: i})
			}
			if t := target.Template; t != nil && !t.HasOutput(lk.Output) {
				l.errorf(at.node, at.key, "stack %s has no output %q: its template declares %s", target.Name, lk.Output, list(t.Outputs, "no outputs"))
			}
		}
	}
	return deps
}

// template reads, parses and checks a stack's template, checks the stack's parameters
// against it, and grants the capabilities it needs.
func (l *loader) template(c *Config, d *stackDef) {
	s := d.s
	if !d.templateOK || d.templateKey == "template_url" {
		l.capabilities(c, d, nil, "")
		return
	}
	label := "the inline template_body"
	file := l.file
	var tp *templatePath
	if d.templateKey == "template_path" {
		tp = l.templatePath(s.TemplatePath)
		label, file = tp.label, tp.file
		body, ok := l.readTemplate(d)
		if !ok {
			return
		}
		s.TemplateBody = body // shared by the stacks using this file
	}
	r := l.parse(s.TemplateBody, s.TemplatePath, d.inline)
	if r.err != nil {
		l.errorf(d.templateNode, d.templateKeyPath(), "%s: %v", label, r.err)
		return
	}
	s.Template = r.t
	if r.checked == nil {
		r.checked = l.check(r.t)
	}
	cr := r.checked
	line, col := 0, 0
	if d.templateKey == "template_body" && d.inline == nil {
		// A string body: its lines follow the template_body key's.
		line, col = d.templateNode.Line, l.indent(d.templateNode.Line+1)
		if d.templateNode.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			line, col = d.templateNode.Line-1, d.templateNode.Column
		}
	}
	l.namespace = c.Namespace
	l.s3Locations(r.t, d, file, line, col)
	if !r.reported {
		r.reported = true
		for _, p := range cr.problems {
			e := &Error{File: file, Line: p.Line + line, Col: p.Col + col, Key: p.Path, Msg: p.Msg}
			if p.Warning {
				e.Msg = "warning: " + e.Msg
				l.warnings = append(l.warnings, e)
			} else {
				l.errs = append(l.errs, e)
			}
		}
	}
	for _, gp := range d.params {
		name := gp.name
		p, ok := r.t.Parameters[name]
		if !ok {
			l.errorf(gp.k, d.key+".parameters."+name, "%s declares no parameter %q%s; it declares %s", label, name, suggestList(name, r.t.ParameterNames()), list(r.t.ParameterNames(), "none"))
			continue
		}
		if v, at := gp.static, gp.at; gp.known {
			if err := p.CheckValue(v); err != nil {
				l.errorf(at, d.key+".parameters."+name, "%v (%s)", err, label)
			} else if u, why := firstRefusal(cr.uses[name], v); why != "" {
				shown := strconv.Quote(v)
				if p.NoEcho {
					shown = "(NoEcho, not shown)"
				}
				tfile := s.TemplatePath
				if tfile == "" {
					tfile = l.file
				}
				l.errorf(at, d.key+".parameters."+name, "parameter %s: value %s goes to %s (%s:%d:%d), which refuses it: %s", name, shown, u.Path, tfile, u.Line, u.Col, redact(why, v, p.NoEcho))
			}
		}
	}
	if missing := missingParameters(r.t, d.given); len(missing) > 0 {
		at, atKey := d.paramsNode, d.key+".parameters"
		if at == nil {
			at, atKey = d.node, d.key
		}
		l.errorf(at, atKey, "stack %s: %s requires parameter %s (no Default): set a value under parameters", s.Name, label, strings.Join(missing, ", "))
	}
	// the templates its nested stacks name in the bundle, their needs counting for it
	tpath, chain := "", []string(nil)
	if s.TemplatePath != "" {
		if tp == nil {
			tp = l.templatePath(s.TemplatePath)
		}
		tpath, chain = tp.clean, tp.chain
	}
	tree, nestedNeeds := l.nested(r.t, tpath, file, chain)
	s.Tree = tree
	l.checkNestedCount(d, label, tree)
	l.capabilities(c, d, template.MergeNeeds(cr.needs, nestedNeeds), file)
}

// firstRefusal returns the first place a parameter's value goes that refuses it, and why.
func firstRefusal(uses []template.ParameterUse, v string) (template.ParameterUse, string) {
	for _, u := range uses {
		if why := u.Check(v); why != "" {
			return u, why
		}
	}
	return template.ParameterUse{}, ""
}

// redact keeps a NoEcho value out of a message.
func redact(msg, v string, noEcho bool) string {
	if !noEcho || v == "" {
		return msg
	}
	return strings.ReplaceAll(strings.ReplaceAll(msg, strconv.Quote(v), "(NoEcho, not shown)"), v, "(NoEcho, not shown)")
}

// indent is the indentation of line (1-based) of the config, as a column offset.
func (l *loader) indent(line int) int {
	rest := l.b.Config
	for i := 1; i < line && len(rest) > 0; i++ {
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			return 0
		}
		rest = rest[j+1:]
	}
	n := 0
	for n < len(rest) && rest[n] == ' ' {
		n++
	}
	return n
}

// capabilities grants a stack naming none the capabilities its template needs, and checks
// that a stack naming some covers the need.
func (l *loader) capabilities(c *Config, d *stackDef, needs []template.Need, file string) {
	s := d.s
	where := func(n template.Need) string {
		f := file
		if n.File != "" {
			f = n.File
		}
		return fmt.Sprintf("%s (%s:%d:%d)", n.Why, f, n.Line, n.Col)
	}
	if d.capsNode == nil {
		if c.ExplicitCapabilities {
			want := "capabilities: []"
			why := ""
			if len(needs) > 0 {
				want = "capabilities: [" + strings.Join(template.Capabilities(needs), ", ") + "]"
				var ws []string
				for _, n := range needs {
					ws = append(ws, n.Capability+" for "+where(n))
				}
				why = "; its template needs " + strings.Join(ws, " and ")
			}
			l.errorf(d.node, d.key+".capabilities", "stack %s names no capabilities, and capabilities: explicit requires every stack to name its own%s: add %s", s.Name, why, want)
			return
		}
		s.Capabilities, s.CapabilitiesFromTemplate = template.Capabilities(needs), true
		return
	}
	for _, n := range template.Uncovered(needs, s.Capabilities) {
		l.errorf(d.capsNode, d.key+".capabilities", "stack %s: capabilities [%s] do not cover %s, which %s needs: add %s, or leave capabilities out to grant what the template needs", s.Name, strings.Join(s.Capabilities, ", "), n.Capability, where(n), n.Capability)
	}
}

// exports reports export names that two stacks of the bundle would both create:
// CloudFormation refuses the second.
func (l *loader) exports(defs []*stackDef) {
	type owner struct {
		d      *stackDef
		output string
	}
	seen := map[string]owner{}
	for _, d := range defs {
		if d.s.Template == nil || d.s.StackName == "" {
			continue
		}
		for _, e := range d.s.Template.Exports(d.s.StackName) {
			// Exports are per account and region.
			k := d.s.Target.Account() + "/" + d.s.Target.Region + "/" + e.Name
			if first, dup := seen[k]; dup && first.d != d {
				l.errorf(d.templateNode, d.templateKeyPath(), "stack %s exports %q (output %s), as stack %s (%s) does with output %s: CloudFormation refuses a second export of a name in a region; make the name unique, e.g. with ${AWS::StackName}", d.s.Name, e.Name, e.Output, first.d.s.Name, first.d.key, first.output)
				continue
			}
			seen[k] = owner{d, e.Output}
		}
	}
}

// check checks a template once per content.
func (l *loader) check(t *template.Template) *checkResult {
	if l.checked == nil {
		l.checked = map[string]*checkResult{}
	}
	if r, ok := l.checked[t.SHA256]; ok {
		return r
	}
	in := t.InspectOn(l.day)
	r := &checkResult{problems: in.Problems, needs: t.Needs(), uses: map[string][]template.ParameterUse{}}
	for _, u := range in.Uses {
		r.uses[u.Parameter] = append(r.uses[u.Parameter], u)
	}
	l.checked[t.SHA256] = r
	return r
}

// parse parses a template body once per file (by path) or inline body (by content); an
// inline mapping is parsed from its node, so positions are the config's.
func (l *loader) parse(body []byte, file string, inline *yaml.Node) *templateResult {
	cacheKey := source{path: file}
	if file == "" {
		cacheKey = source{body: string(body)}
	}
	r, ok := l.templates[cacheKey]
	if !ok {
		r = &templateResult{}
		if inline != nil {
			r.t, r.err = template.ParseNode(body, deepCopy(inline))
		} else {
			r.t, r.err = template.Parse(body)
		}
		l.templates[cacheKey] = r
	}
	return r
}

func deepCopy(n *yaml.Node) *yaml.Node {
	cp := *n
	cp.Content = make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		cp.Content[i] = deepCopy(c)
	}
	return &cp
}

// readTemplate reads the template file of stack d from the bundle, refusing paths that
// leave it. Each file is read once; stacks sharing a template share its bytes.
func (l *loader) readTemplate(d *stackDef) ([]byte, bool) {
	p := d.s.TemplatePath
	if body, ok := l.files[p]; ok {
		return body, true
	}
	body, err := l.bundleFile("template", "templates/app.yaml", "put the template inline with template_body, or bundle a directory", p)
	if err != nil {
		l.errorf(d.templateNode, d.templateKeyPath(), "%v", err)
		return nil, false
	}
	l.files[p] = body
	return body, true
}

// cycles reports a dependency cycle among known stacks at the declaration of its first edge.
func (l *loader) cycles(c *Config, deps []dep) {
	g := graph.NewSized(len(c.Stacks))
	for _, s := range c.Stacks {
		if c.byName[s.Name] == s {
			g.AddNode(s.Name)
		}
	}
	for _, d := range deps {
		if err := g.AddEdge(d.from(), d.to()); err != nil {
			l.errorf(d.node(), d.fullKey(), "%v", err)
		}
	}
	var ce *graph.CycleError
	err := g.Validate()
	if errors.As(err, &ce) && len(ce.Cycle) > 1 {
		// Report the cycle where its first edge is first declared.
		for _, d := range deps {
			if d.from() == ce.Cycle[0] && d.to() == ce.Cycle[1] {
				l.errorf(d.node(), d.fullKey(), "%v: remove one of these dependencies", ce)
				break
			}
		}
	} else if err == nil {
		c.graph = g
	}
}

// fieldArena hands out slices of fields from a buffer that is given back in the order
// taken (mark, release).
type fieldArena struct {
	buf []field
	gen int // counts the buffers made, so a release knows whether buf is the marked one
}

type arenaMark struct{ gen, len int }

// take returns an empty slice with room for n fields; appending past n copies it out.
func (a *fieldArena) take(n int) []field {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]field, 0, max(n, 256, 2*cap(a.buf)))
		a.gen++
	}
	start := len(a.buf)
	a.buf = a.buf[:start+n]
	return a.buf[start : start : start+n]
}

func (a *fieldArena) mark() arenaMark { return arenaMark{a.gen, len(a.buf)} }

// release gives back what was taken since m: nothing taken since may be in use.
func (a *fieldArena) release(m arenaMark) {
	if a.gen == m.gen {
		a.buf = a.buf[:m.len]
	} else {
		a.buf = a.buf[:0] // a buffer made since m holds only what was taken since
	}
}

// field is one key of a mapping.
type field struct {
	name string
	key  string // full key path
	k, v *yaml.Node
	// merged: the key is in a mapping merged in (<<:), not in the mapping itself.
	merged bool
}

// fields returns the keys of mapping n, reporting a non-mapping, duplicate keys and, when
// allowed is not nil, unknown keys. Merge keys (<<: *anchor) are expanded; explicit keys
// win over merged ones. The slice is the loader's (fieldBuf): range over it, do not keep it.
func (l *loader) fields(n *yaml.Node, key string, allowed []string) []field {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // an empty value: "tags:" with nothing after it
	}
	if n.Kind != yaml.MappingNode {
		l.errorf(n, key, "must be a mapping, got %s", describe(n))
		return nil
	}
	out := l.fieldBuf.take(len(n.Content) / 2)
	keys, next := fieldKeys(n, key), 0 // the fields' full keys, in one string
	// Duplicates are found by a scan of out for the small mappings a config is made of,
	// and by a map for large ones (a map per mapping is most of a 10,000-stack load's
	// garbage).
	var seenMap map[string]*yaml.Node
	if len(n.Content) > 32 {
		seenMap = make(map[string]*yaml.Node, len(n.Content)/2)
	}
	var rejected []*yaml.Node // keys not in out (unknown ones), still duplicates
	seen := func(name string) *yaml.Node {
		if seenMap != nil {
			return seenMap[name]
		}
		for i := range out {
			if out[i].name == name {
				return out[i].k
			}
		}
		for _, k := range rejected {
			if k.Value == name {
				return k
			}
		}
		return nil
	}
	mark := func(k *yaml.Node, kept bool) {
		if seenMap != nil {
			seenMap[k.Value] = k
		} else if !kept {
			rejected = append(rejected, k)
		}
	}
	var merged []field
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if k.Tag == "!!merge" {
			if l.merging == nil {
				l.merging = map[*yaml.Node]bool{}
			}
			outer := l.merging[n]
			l.merging[n] = true
			merged = append(merged, l.merge(v, key, allowed)...)
			if !outer {
				delete(l.merging, n)
			}
			continue
		}
		if k.Kind != yaml.ScalarNode {
			l.errorf(k, key, "keys must be strings, got %s", describe(k))
			continue
		}
		fk := k.Value
		if key != "" {
			end := next + len(key) + 1 + len(k.Value)
			fk, next = keys[next:end], end
		}
		if first := seen(k.Value); first != nil {
			l.errorf(k, fk, "duplicate key (first at line %d)", first.Line)
			continue
		}
		if allowed != nil && !slices.Contains(allowed, k.Value) {
			mark(k, false)
			hint := suggestList(k.Value, allowed)
			if hint == "" {
				hint = ": allowed keys are " + strings.Join(allowed, ", ")
			}
			l.errorf(k, fk, "unknown key %q%s", k.Value, hint)
			continue
		}
		mark(k, true)
		out = append(out, field{name: k.Value, key: fk, k: k, v: v})
	}
	for _, f := range merged {
		if seen(f.name) == nil {
			mark(f.k, true)
			f.merged = true
			out = append(out, f)
		}
	}
	return out
}

func (l *loader) merge(v *yaml.Node, key string, allowed []string) []field {
	if v.Kind == yaml.SequenceNode {
		var out []field
		for _, c := range v.Content {
			if c = resolve(c); c.Kind == yaml.SequenceNode {
				out = append(out, l.fields(c, key, allowed)...) // not a mapping: said so
				continue
			}
			out = append(out, l.merge(c, key, allowed)...)
		}
		return out
	}
	if l.merging[v] {
		l.errorf(v, key, "the merge key <<: refers to a mapping that contains it (an alias cycle): merge another mapping")
		return nil
	}
	if l.merging == nil {
		l.merging = map[*yaml.Node]bool{}
	}
	l.merging[v] = true
	defer delete(l.merging, v)
	return l.fields(v, key, allowed)
}

// fieldKeys joins key to each string key of mapping n, in one string: the full keys of
// its fields one after the other, made with one allocation instead of one a field.
func fieldKeys(n *yaml.Node, key string) string {
	if key == "" {
		return ""
	}
	size := 0
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Tag != "!!merge" && k.Kind == yaml.ScalarNode {
			size += len(key) + 1 + len(k.Value)
		}
	}
	var b strings.Builder
	b.Grow(size)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Tag != "!!merge" && k.Kind == yaml.ScalarNode {
			b.WriteString(key)
			b.WriteByte('.')
			b.WriteString(k.Value)
		}
	}
	return b.String()
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func (l *loader) str(n *yaml.Node, key string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		l.errorf(n, key, "must be a string, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

func (l *loader) strs(n *yaml.Node, key string) ([]string, []*yaml.Node) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, key, "must be a list of strings, got %s", describe(n))
		return nil, nil
	}
	var vals []string
	var nodes []*yaml.Node
	if len(n.Content) > 0 {
		vals, nodes = make([]string, 0, len(n.Content)), make([]*yaml.Node, 0, len(n.Content))
	}
	for i, c := range n.Content {
		if c = resolve(c); c.Kind == yaml.ScalarNode && c.Tag != "!!null" {
			vals, nodes = append(vals, c.Value), append(nodes, c) // as str, without its key
			continue
		}
		l.str(c, fmt.Sprintf("%s[%d]", key, i)) // says what is wrong
	}
	return vals, nodes
}

func (l *loader) boolean(n *yaml.Node, key string) (bool, bool) {
	n = resolve(n)
	if b, ok := plainBool(n); ok {
		return b, true
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		l.errorf(n, key, "must be true or false, got %s", describe(n))
		return false, false
	}
	return b, true
}

func (l *loader) integer(n *yaml.Node, key string) (int, bool) {
	n = resolve(n)
	if i, ok := plainInt(n); ok {
		return i, true
	}
	var i int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil {
		l.errorf(n, key, "must be an integer, got %s", describe(n))
		return 0, false
	}
	return i, true
}

// plainBool and plainInt read the spellings yaml.v3 decodes a !!bool and a !!int of
// most often (true and false; a decimal without leading zeros) without its decoder,
// which a large config would run for each stack's flags; anything else goes to Decode.
func plainBool(n *yaml.Node) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return false, false
	}
	switch n.Value {
	case "true", "True", "TRUE":
		return true, true
	case "false", "False", "FALSE":
		return false, true
	}
	return false, false
}

func plainInt(n *yaml.Node) (int, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, false
	}
	digits := strings.TrimPrefix(n.Value, "-")
	if digits == "" || len(digits) > 18 || digits[0] == '0' && len(digits) > 1 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	i, err := strconv.Atoi(n.Value)
	return i, err == nil
}

// tags decodes a tag mapping and the lookups of its values; aws: and cairn: keys are
// reserved.
func (l *loader) tags(n *yaml.Node, key string) (map[string]string, []lookupRef) {
	out := map[string]string{}
	var lookups []lookupRef
	for _, f := range l.fields(n, key, nil) {
		v, ok := l.str(f.v, f.key)
		if !ok {
			continue
		}
		if p, _, _ := strings.Cut(f.name, ":"); strings.Contains(f.name, ":") && (strings.EqualFold(p, "aws") || p == "cairn") {
			l.errorf(f.k, f.key, "tag keys starting with %s: are reserved (cairn sets its own cairn: tags)", p)
			continue
		}
		if len(f.name) > maxTagKey {
			l.errorf(f.k, f.key, "tag key is %d characters, more than CloudFormation's %d", len(f.name), maxTagKey)
		}
		out[f.name] = v
		found, static, known, ok := l.lookups(v, f.v, f.key)
		if !ok {
			continue
		}
		if known && utf8.RuneCountInString(static) > maxTagValue {
			l.errorf(f.v, f.key, "tag value is %d characters, more than CloudFormation's %d", utf8.RuneCountInString(static), maxTagValue)
		}
		for _, lk := range found {
			lk.Tag = f.name
			lookups = append(lookups, lookupRef{l: lk, node: f.v, key: f.key})
		}
	}
	return out, lookups
}

// CloudFormation's limits on stack tags.
const (
	maxTagKey   = 128
	maxTagValue = 256
)

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing"
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		}
		return n.Value
	case yaml.AliasNode:
		return "an alias"
	}
	return "an empty document"
}

func list(names []string, none string) string {
	if len(names) == 0 {
		return none
	}
	return strings.Join(names, ", ")
}

// suggestList returns ` (did you mean "x"?)` for the closest candidate, if one is close.
func suggestList(name string, candidates []string) string { return template.Suggest(name, candidates) }
