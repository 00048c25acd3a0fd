package config

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/assembly"
	"github.com/cairn-dev/cairn/internal/bundle"
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
		"deletion_policy", "max_concurrency", "drift", "capabilities", "variables", "stacks", "policies",
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
			l.deletionPolicy(c, f)
		case "max_concurrency":
			if n, ok := l.integer(f.v, f.key); ok {
				if n < 1 {
					l.errorf(f.v, f.key, "must be at least 1, got %d", n)
				}
				c.MaxConcurrency = n
			}
		case "drift":
			l.drift(c, f)
		case "capabilities":
			l.capabilitiesMode(c, f)
		case "policies":
			if p, ok := l.str(f.v, f.key); ok {
				if err := l.policiesDir(p); err != nil {
					l.errorf(f.v, f.key, "%v", err)
				} else {
					c.Policies = path.Clean(p)
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
		l.configTags(c, tagsNode)
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

// deletionPolicy reads the config's deletion_policy (f).
func (l *loader) deletionPolicy(c *Config, f field) {
	for _, g := range l.fields(f.v, f.key, deletionKeys) {
		if n, ok := l.integer(g.v, g.key); ok {
			if n < 0 {
				l.errorf(g.v, g.key, "must be 0 or more, got %d", n)
			}
			c.DeletionPolicy.MaxDeletions = n
		}
	}
}

// drift reads the config's drift settings (f): whether drift is detected, and the
// patterns of what it ignores.
func (l *loader) drift(c *Config, f field) {
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
}

// capabilitiesMode reads the config's capabilities (f): explicit or template.
func (l *loader) capabilitiesMode(c *Config, f field) {
	if v, ok := l.str(f.v, f.key); ok {
		switch v {
		case "explicit":
			c.ExplicitCapabilities = true
		case "template":
		default:
			l.errorf(f.v, f.key, "must be explicit (every stack names its capabilities) or template (the default: a stack naming none is granted what its template needs), got %q", v)
		}
	}
}

// configTags reads the config's tags (n), which every stack carries, and keeps their
// lookups for the stacks (topTags); none may read an output.
func (l *loader) configTags(c *Config, n *yaml.Node) {
	var lookups []lookupRef
	c.Tags, lookups = l.tags(n, "tags")
	for _, lr := range lookups {
		if lr.l.Kind == KindOutput {
			l.errorf(lr.node, lr.key, "the config's tags cannot read ${output %s::%s}: every stack would depend on stack %s; put the tag on the stacks that need it", lr.l.Stack, lr.l.Output, lr.l.Stack)
			continue
		}
		l.topTags = append(l.topTags, lr)
	}
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
