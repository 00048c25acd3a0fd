package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/policy"
	"github.com/cairn-dev/cairn/internal/printer"
)

func init() { commands = append(commands, newPolicyCmd) }

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Test Rego policies and evaluate them against a stored plan, offline",
		Long: `Policy runs policies written in Rego (Open Policy Agent) on plans: each package's
deny and warn rules judge a documented input made from the plan (docs/policy.md).
Policies are not enforced by the deployer yet: these commands judge plans offline.

The team's policies live under policies/ in cairn's bucket and the overrides of a plan's
denials under policy-overrides/; only the policy role may write either (publish, override).`,
	}
	cmd.AddCommand(newPolicyTestCmd(), newPolicyEvalCmd(), newPolicyPublishCmd(), newPolicyOverrideCmd())
	return cmd
}

func newPolicyTestCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "test DIR",
		Short: "Run the Rego tests of the policies in DIR",
		Long: `Test runs the tests (rules named test_* in files ending _test.rego) of the policies in DIR,
with the data of its .json files, and prints each test's result: PASS or FAIL, where it is
and how long it took. It exits 1 when a test fails or DIR has none.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			set, err := policy.Load(os.DirFS(args[0]), args[0], policy.Team)
			if err != nil {
				return refuse("%v", err)
			}
			res, err := policy.Test(cmd.Context(), set, timeout)
			if err != nil {
				return refuse("%v", err)
			}
			out := cmd.OutOrStdout()
			failed := 0
			for _, r := range res {
				status := "PASS"
				if !r.Pass {
					status, failed = "FAIL", failed+1
				}
				printer.Fprintf(out, "%s %s (%s:%d) %s\n", status, r.Name, r.File, r.Line, r.Duration.Round(time.Microsecond))
				if r.Err != nil {
					printer.Fprintf(out, "     error: %v\n", r.Err)
				}
			}
			if len(res) == 0 {
				return refuse("%s has no Rego tests: add rules named test_* in files ending _test.rego", args[0])
			}
			printer.Fprintf(out, "%d passed, %d failed\n", len(res)-failed, failed)
			if failed > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "the longest one test may take")
	return cmd
}

type evalFlags struct {
	cf                                   cairnFlags
	policies, bundlePolicies, bundlePath string
	deployment, at, format               string
	printInput                           bool
}

func newPolicyEvalCmd() *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval PLAN --policies DIR",
		Short: "Evaluate policies against a stored plan and print each denial and warning",
		Long: `Eval judges a plan with policies, offline: PLAN is a plan document (a JSON file, as
` + "`cairn plans NAME PLAN_ID --format json`" + ` prints it or the bucket keeps it at
plans/NAME/PLAN_ID.json), or with --deployment NAME the id of one of its plans, read from
cairn's bucket as ` + "`cairn plans`" + ` reads it.

--policies DIR are the team's policies (without it: cairn's starter library), and
--bundle-policies DIR the bundle's own: compiled and evaluated apart, they can only add
denials and warnings to the team's. --bundle PATH adds what the planned bundle says of each
stack (its templates' resources with their properties and policies, capabilities, stack
options); without it policies see the resources the plan lists, by type and logical id.

It prints each result with its level, its rule (the policy's package) and whose policy it
is, and exits 1 when a policy denies the plan (2 when a policy fails to evaluate).`,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	f.cf.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.policies, "policies", "", "the directory of the team's policies (default: cairn's starter library)")
	fl.StringVar(&f.bundlePolicies, "bundle-policies", "", "the directory of the bundle's own policies")
	fl.StringVar(&f.bundlePath, "bundle", "", "the planned bundle (its directory or zip): policies see its templates, capabilities and options")
	fl.StringVar(&f.deployment, "deployment", "", "read plan PLAN of this deployment from cairn's bucket")
	fl.StringVar(&f.at, "time", "", "evaluate as at this time (RFC 3339; default: now)")
	fl.StringVar(&f.format, "format", "text", "text or json")
	fl.BoolVar(&f.printInput, "print-input", false, "print the input the policies read, and evaluate nothing")
	return cmd
}

func (f *evalFlags) run(cmd *cobra.Command, planArg string) error {
	if f.format != "text" && f.format != "json" {
		return usageError{cmd: cmd, msg: fmt.Sprintf("--format %q: use text or json", f.format)}
	}
	now := time.Now()
	if f.at != "" {
		t, err := time.Parse(time.RFC3339, f.at)
		if err != nil {
			return usageError{cmd: cmd, msg: fmt.Sprintf("--time %q: not an RFC 3339 time (2026-12-07T10:00:00Z)", f.at)}
		}
		now = t
	}
	doc, err := f.plan(cmd, planArg)
	if err != nil {
		return err
	}
	var src policy.Source
	if f.bundlePath != "" {
		l, err := loadBundle(cmd.ErrOrStderr(), f.bundlePath, doc.Deployment)
		if err != nil {
			return err
		}
		src = policy.Source{}
		for _, s := range l.config.Stacks {
			src[s.Name] = s
		}
	}
	in := policy.FromPlan(doc, src, now)
	out := cmd.OutOrStdout()
	if f.printInput {
		return printer.WriteJSON(out, in, "  ")
	}
	sets, err := f.sets()
	if err != nil {
		return err
	}
	e, err := policy.Compile(cmd.Context(), sets...)
	if err != nil {
		return err
	}
	rs, err := e.Evaluate(cmd.Context(), in)
	if err != nil {
		return err
	}
	printResults(out, f.format, doc, rs)
	if policy.Denied(rs) {
		return exitError{1}
	}
	return nil
}

// plan reads the plan document: a file, or a plan of --deployment from the bucket.
func (f *evalFlags) plan(cmd *cobra.Command, arg string) (*plan.Document, error) {
	if f.deployment != "" {
		c, err := f.cf.open(cmd)
		if err != nil {
			return nil, err
		}
		e, err := c.review().Get(cmd.Context(), f.deployment, arg)
		if err != nil {
			return nil, asRefusal(err)
		}
		return e.Plan, nil
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return nil, refuse("read plan %s: %v: name a plan document file, or a plan id with --deployment NAME", arg, err)
	}
	var doc plan.Document
	if err := json.Unmarshal(b, &doc); err != nil || doc.ID == "" {
		return nil, refuse("%s is not a plan document (%v): use the JSON of `cairn plans NAME PLAN_ID --format json`, or plans/NAME/PLAN_ID.json of cairn's bucket", arg, orNoID(err))
	}
	return &doc, nil
}

func orNoID(err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("it has no id")
}

// sets are the team's policies (or the starter library) and the bundle's, if any.
func (f *evalFlags) sets() ([]policy.Set, error) {
	var team policy.Set
	var err error
	if f.policies == "" {
		team, err = policy.LibrarySet(policy.Team)
	} else {
		team, err = policy.Load(os.DirFS(f.policies), f.policies, policy.Team)
	}
	if err != nil {
		return nil, refuse("%v", err)
	}
	sets := []policy.Set{team}
	if f.bundlePolicies != "" {
		b, err := policy.Load(os.DirFS(f.bundlePolicies), f.bundlePolicies, policy.Bundle)
		if err != nil {
			return nil, refuse("%v", err)
		}
		sets = append(sets, b)
	}
	return sets, nil
}

func printResults(out io.Writer, format string, doc *plan.Document, rs []policy.Result) {
	if format == "json" {
		if rs == nil {
			rs = []policy.Result{}
		}
		_ = printer.WriteJSON(out, map[string]any{"plan": doc.ID, "deployment": doc.Deployment, "denied": policy.Denied(rs), "results": rs}, "  ")
		return
	}
	denials := 0
	for _, r := range rs {
		printer.Fprintln(out, r.String())
		if r.Level == policy.Deny {
			denials++
		}
	}
	printer.Fprintf(out, "plan %s of %s: %d %s, %d %s\n", doc.ID, doc.Deployment, denials, plural(denials, "denial"), len(rs)-denials, plural(len(rs)-denials, "warning"))
}
