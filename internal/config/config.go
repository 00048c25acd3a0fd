// Package config loads a bundle's cairn.yaml: the namespace, the stacks, their templates
// and parameters, and the dependencies between them. It keeps the vocabulary of
// Stacker/Runway so their users feel at home, and checks everything a deployment would
// otherwise trip over late: every problem is reported at once, each with file, line,
// column and key.
package config

import (
	"fmt"

	"github.com/cairn-dev/cairn/internal/assembly"
	"github.com/cairn-dev/cairn/internal/graph"
	"github.com/cairn-dev/cairn/internal/template"
)

// Defaults for keys a config may leave out.
const (
	DefaultNamespaceDelimiter = "-"
	DefaultMaxConcurrency     = 10
)

// Config is a loaded and validated cairn.yaml.
type Config struct {
	// File is the config's name in messages (see bundle.Bundle.ConfigFile).
	File               string
	Namespace          string
	NamespaceDelimiter string
	// PersistentGraphKey names the persistent graph and lock; it defaults to the
	// deployment name (LoadOptions.Deployment), or to the namespace when that is unknown.
	PersistentGraphKey string
	// TakeOverGraphFrom (take_over_graph_from) names the deployment that owns the
	// persistent graph now, when this deployment is its new name: the first run of this
	// deployment takes the graph over. Without it, a graph another deployment owns is
	// never written.
	TakeOverGraphFrom string
	// HandOverGraphTo (hand_over_graph_to) names the deployment this one, the graph's
	// owner, consents may take its persistent graph over (with take_over_graph_from). It
	// counts once a run of this deployment applied it (the graph records it); giving it is
	// a relaxed guard, so it is applied only through an approved plan.
	HandOverGraphTo string
	// Tags apply to every stack; Stack.Tags already includes them.
	Tags           map[string]string
	DeletionPolicy struct {
		// MaxDeletions is the most stacks a run may delete without an approved plan
		// (0 when the config does not set it).
		MaxDeletions int
	}
	MaxConcurrency int
	Drift          Drift
	// Policies (policies) is the bundle's own policy directory: Rego modules and JSON data
	// judged with the team's, apart from them, adding denials and warnings only
	// (docs/policy.md). "" when the config names none.
	Policies string
	// Target is the default account, region and roles of every stack (region, role_arn,
	// external_id and service_role at the top of cairn.yaml).
	Target Target
	// ExplicitCapabilities (capabilities: explicit) requires every stack to name its
	// capabilities instead of being granted what its template needs.
	ExplicitCapabilities bool
	// Warnings are problems that do not stop a deployment, such as a deprecated Lambda
	// runtime, in the form of errors.
	Warnings Errors
	// Stacks are in config order.
	Stacks []*Stack

	byName map[string]*Stack
	graph  *graph.Graph // built and checked by Load
}

// Drift configures scheduled drift detection.
type Drift struct {
	// Enabled is true unless the config sets drift.enabled: false.
	Enabled bool
	// Ignore holds path.Match patterns of stack names (config names) to leave out.
	Ignore []string
}

// Stack is one stack of the config.
type Stack struct {
	// Name is the config name, used by requires, required_by and output lookups.
	Name string
	// StackName is the CloudFormation stack name: stack_name, or namespace, delimiter and
	// name joined.
	StackName string
	// Exactly one of TemplatePath (bundle-relative), TemplateURL and TemplateBody is the
	// template's source; TemplateBody holds the template's bytes for a path or inline body.
	TemplatePath, TemplateURL string
	TemplateBody              []byte
	// Template is the parsed template; nil for a TemplateURL, which is not fetched.
	Template *template.Template
	// Tree is the template with the bundle templates its nested stacks name as their
	// TemplateURL (nil when it names none): what CreateChangeSet sends is Tree.Package.
	Tree *template.Tree
	// Parameters are the raw values, lookups unresolved (see ResolveParameters).
	Parameters map[string]string
	// Lookups are the lookups in Parameters and Tags, in parameter-name order (tags
	// first), var and file ones with the values they read.
	Lookups []Lookup
	// Requires and RequiredBy are the explicit dependencies as written.
	Requires, RequiredBy []string
	// Tags are the config's tags overlaid with the stack's own, lookups unresolved (see
	// ResolveTags); read-only (stacks without tags of their own share the config's map).
	Tags map[string]string
	// Options are the stack's CloudFormation stack options.
	Options Options
	// Target is where the stack lives and how the deployer reaches it: the config's
	// Target overlaid with the stack's own keys. Its identity is account, region and
	// StackName.
	Target                Target
	TerminationProtection bool
	// Protected stacks change only through an approved plan.
	Protected bool
	// Enabled is false for a stack the config keeps but does not deploy.
	Enabled bool
	// Locked stacks are created but never updated.
	Locked bool
	// Capabilities are what CreateChangeSet acknowledges: the config's capabilities, or,
	// when it names none, exactly those the template needs (CapabilitiesFromTemplate).
	Capabilities             []string
	CapabilitiesFromTemplate bool
	// Assembly is the stack of the CDK cloud assembly this stack comes from (its assets
	// and the bootstrap version it needs); nil for a stack of cairn.yaml.
	Assembly *assembly.Stack
}

// Stack returns the stack with the config name, or nil.
func (c *Config) Stack(name string) *Stack { return c.byName[name] }

// Graph returns the dependency graph of the stacks: an edge from a stack to each stack it
// requires, from each stack named in required_by to the stack naming it, and from a stack
// to each stack of its output lookups. Load builds it once while checking for cycles and
// every call returns that graph, which callers must treat as read-only. For a Config not
// made by Load it builds the graph, returning the *graph.CycleError if there is a cycle.
func (c *Config) Graph() (*graph.Graph, error) {
	if c.graph != nil {
		return c.graph, nil
	}
	g := graph.NewSized(len(c.Stacks))
	for _, s := range c.Stacks {
		g.AddNode(s.Name)
	}
	for _, s := range c.Stacks {
		for _, r := range s.Requires {
			if err := g.AddEdge(s.Name, r); err != nil {
				return nil, fmt.Errorf("stack %s: %w", s.Name, err)
			}
		}
		for _, rb := range s.RequiredBy {
			if err := g.AddEdge(rb, s.Name); err != nil {
				return nil, fmt.Errorf("stack %s: %w", s.Name, err)
			}
		}
		for _, l := range s.Lookups {
			if l.Kind != KindOutput {
				continue
			}
			if err := g.AddEdge(s.Name, l.Stack); err != nil {
				return nil, fmt.Errorf("stack %s: %w", s.Name, err)
			}
		}
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}
