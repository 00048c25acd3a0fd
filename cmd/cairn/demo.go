package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/printer"
	runstate "github.com/cairn-dev/cairn/internal/run"
)

func init() { commands = append(commands, newDemoCmd) }

// demoBundle is the web-shop bundle the demo runs, relative to the repository root
// (make demo runs from there).
const demoBundle = "testdata/bundles/webshop"

// The demo's second version changes demoChanged and removes demoRemoved (edge depends on
// service, so edge must go first).
var (
	demoChanged = "cache"
	demoRemoved = []string{"service", "edge"}
)

// demoTimings make the emulated CloudFormation quick enough for a demo well under two
// minutes, while stacks still go through every status.
var demoTimings = awslocal.CloudFormationTimings{
	ResourceDelay:         40 * time.Millisecond,
	ChangeSetDelay:        40 * time.Millisecond,
	CustomResourceTimeout: 30 * time.Second,
}

const demoDeployment = "webshop"

func newDemoCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Deploy the web-shop sample into an in-process AWS emulator, change it, and show what cairn did",
		Long: `Demo validates ` + demoBundle + ` and prints its dependency graph, then starts the AWS
emulator in this process (state in memory) and deploys cairn into it as "cairn local up"
does. The shop's database is protected, so its first version goes through review: the
demo plans it (change sets, nothing executed), approves exactly that plan and follows the
apply run, then shows the stacks, their outputs and the ports they were given. It plans
a second version that changes the ` + demoChanged + ` stack and removes ` + strings.Join(demoRemoved, " and ") + `, raising
deletion_policy.max_deletions to allow it (loosening a guard is reviewed like a protected
stack's change, so a push of it would be refused), approves that plan, shows the update
and the dependents-first deletion, changes a VPC out of band and finds the drift, and
lists the run reports.

Run it from the repository root (make demo does).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return runDemo(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up after this long")
	return cmd
}

func runDemo(ctx context.Context, out, errOut io.Writer) error {
	start := time.Now()
	step := func(format string, a ...any) {
		printer.Fprintf(out, "\n==> [%4.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}

	step("validating %s", demoBundle)
	if _, err := os.Stat(demoBundle); err != nil {
		return fmt.Errorf("demo: %w: run the demo from the repository root (make demo does)", err)
	}
	l, err := loadBundle(errOut, demoBundle, demoDeployment)
	if err != nil {
		return err
	}
	printer.Fprintf(out, "validated %s: %d stacks in namespace %q, bundle sha256 %s\n\n",
		demoBundle, len(l.config.Stacks), l.config.Namespace, l.bundle.SHA256)
	if err := writeGraph(out, l, "text", cliHome(ctx)); err != nil {
		return err
	}

	step("starting the AWS emulator in process and deploying cairn into it")
	// Only warnings and errors of the emulator and the in-process functions; the demo
	// prints its own progress.
	logger := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(logger)
	// Heartbeats every 2 seconds: a run goes on even if an event is lost.
	os.Setenv("CAIRN_HEARTBEAT_SECONDS", "2")
	loc, err := startLocal(ctx, awslocal.Options{Logger: logger, CloudFormation: demoTimings}, "127.0.0.1:0", localcairn.Options{}, nil)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer loc.Close()
	printer.Fprintf(out, "emulator at %s; bucket %s; functions %s\n", loc.Emulator.URL(), loc.Cairn.Bucket, strings.Join(loc.functions, ", "))
	printer.Fprintf(out, "exports: cairn-bucket-name, cairn-ports-service-token (%s), cairn-notifications-topic-arn\n", loc.Cairn.PortsTopic)
	awsCfg, err := awsclient.Load(ctx)
	if err != nil {
		return err
	}
	cf := cloudformation.NewFromConfig(awsCfg)
	reports := &history.Store{S3: awsclient.S3(awsCfg), Bucket: loc.Cairn.Bucket}

	step("planning %s as deployment %s (version 1): its database is protected, so it changes only through an approved plan", demoBundle, demoDeployment)
	planID, err := demoPlan(ctx, demoBundle, out, errOut)
	if err != nil {
		return err
	}
	step("approving plan %s: exactly the reviewed change sets are executed", planID)
	if code := run([]string{"approve", demoDeployment, planID, "--wait", "--poll", "200ms"}, out, errOut); code != 0 {
		return fmt.Errorf("demo: cairn approve exited %d: the plan was not applied (see above)", code)
	}
	step("stacks and their outputs")
	if err := showStacks(ctx, cf, l.config.Namespace+"-", out); err != nil {
		return err
	}
	step("ports allocated by Custom::PortAllocation")
	if code := run([]string{"ports", "list"}, out, errOut); code != 0 {
		return fmt.Errorf("demo: cairn ports list exited %d", code)
	}

	v2, err := demoVersion2(demoBundle)
	if err != nil {
		return err
	}
	defer os.RemoveAll(v2)
	step("planning version 2: stack %s changed, stacks %s removed, deletion_policy.max_deletions raised to %d: a loosened guard changes only through an approved plan", demoChanged, strings.Join(demoRemoved, " and "), len(demoRemoved))
	planID, err = demoPlan(ctx, v2, out, errOut)
	if err != nil {
		return err
	}
	step("approving plan %s of version 2", planID)
	if code := run([]string{"approve", demoDeployment, planID, "--wait", "--poll", "200ms"}, out, errOut); code != 0 {
		return fmt.Errorf("demo: cairn approve exited %d: the plan was not applied (see above)", code)
	}
	step("stacks after version 2")
	if err := showStacks(ctx, cf, l.config.Namespace+"-", out); err != nil {
		return err
	}
	step("deleted stacks, in the order the run deleted them (dependents first)")
	if err := showDeletions(ctx, reports, demoDeployment, out); err != nil {
		return err
	}
	step("ports after version 2 (the removed service's port is free again)")
	if code := run([]string{"ports", "list"}, out, errOut); code != 0 {
		return fmt.Errorf("demo: cairn ports list exited %d", code)
	}

	step("changing shop-network's VPC out of band, then checking for drift")
	if code := run([]string{"local", "tamper", l.config.Namespace + "-network", "Vpc", "CidrBlock=10.9.0.0/16"}, out, errOut); code != 0 {
		return fmt.Errorf("demo: cairn local tamper exited %d", code)
	}
	// Exit code 1 means "something drifted", which is what the demo expects to see.
	if code := run([]string{"drift", demoDeployment, "--wait", "--poll", "200ms"}, out, errOut); code != 1 {
		return fmt.Errorf("demo: cairn drift exited %d, want 1 (drift found)", code)
	}

	step("run reports")
	if err := showReports(ctx, reports, demoDeployment, out); err != nil {
		return err
	}
	printer.Fprintf(out, "\ndemo finished in %.1fs. To explore by hand, follow the README's quick tour: bin/cairn local up &, bin/cairn local wait, eval \"$(bin/cairn local env)\", then bin/cairn plan %s --deployment shop --wait and bin/cairn approve\n",
		time.Since(start).Seconds(), demoBundle)
	return nil
}

// demoPlan runs `cairn plan PATH --deployment webshop --wait` as a user would and returns
// the plan id it prints.
func demoPlan(ctx context.Context, path string, out, errOut io.Writer) (string, error) {
	var info bytes.Buffer
	code := run([]string{"plan", path, "--deployment", demoDeployment, "--wait", "--poll", "200ms"}, io.MultiWriter(out, &info), io.MultiWriter(errOut, &info))
	if code != 0 {
		return "", fmt.Errorf("demo: cairn plan %s exited %d: the plan failed (see above)", path, code)
	}
	m := regexp.MustCompile(`(?m)^plan id: (\S+)$`).FindStringSubmatch(info.String())
	if m == nil {
		return "", fmt.Errorf("demo: cairn plan printed no plan id")
	}
	return m[1], nil
}

// demoVersion2 copies the bundle at dir into a temporary folder and edits its cairn.yaml:
// a new parameter value for demoChanged, demoRemoved dropped, and a deletion allowance for
// them. It returns the folder.
func demoVersion2(dir string) (string, error) {
	tmp, err := os.MkdirTemp("", "cairn-demo-v2-")
	if err != nil {
		return "", err
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(tmp, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, rel), b, 0o644)
	})
	if err == nil {
		err = editDemoConfig(filepath.Join(tmp, "cairn.yaml"))
	}
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("demo: build version 2 of %s: %w", dir, err)
	}
	return tmp, nil
}

// editDemoConfig rewrites the config through its YAML tree, so comments and order stay.
func editDemoConfig(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return errors.New("cairn.yaml is not a mapping")
	}
	root := doc.Content[0]
	stacks := mapValue(root, "stacks")
	if stacks == nil || stacks.Kind != yaml.SequenceNode {
		return errors.New("cairn.yaml has no stacks list")
	}
	var kept []*yaml.Node
	changed := false
	for _, s := range stacks.Content {
		name := mapValue(s, "name")
		switch {
		case name == nil:
			kept = append(kept, s)
		case contains(demoRemoved, name.Value):
		case name.Value == demoChanged:
			params := mapValue(s, "parameters")
			if params == nil {
				params = &yaml.Node{Kind: yaml.MappingNode}
				s.Content = append(s.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "parameters"}, params)
			}
			setScalar(params, "NodeType", "cache.t4g.small")
			changed = true
			kept = append(kept, s)
		default:
			kept = append(kept, s)
		}
	}
	if !changed || len(kept) != len(stacks.Content)-len(demoRemoved) {
		return fmt.Errorf("cairn.yaml lacks stack %s or one of %v", demoChanged, demoRemoved)
	}
	stacks.Content = kept
	policy := mapValue(root, "deletion_policy")
	if policy == nil {
		policy = &yaml.Node{Kind: yaml.MappingNode}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "deletion_policy"}, policy)
	}
	setScalar(policy, "max_deletions", fmt.Sprint(len(demoRemoved)))
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func setScalar(m *yaml.Node, key, value string) {
	if v := mapValue(m, key); v != nil {
		v.Kind, v.Tag, v.Value, v.Style = yaml.ScalarNode, "", value, 0
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// showStacks prints the live stacks whose names start with prefix, and their outputs, as
// the deployer reads them (changeset.ListStacks).
func showStacks(ctx context.Context, cf *cloudformation.Client, prefix string, out io.Writer) error {
	live, err := changeset.ListStacks(ctx, cf, nil)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	printer.Fprintf(tw, "STACK\tSTATUS\tOUTPUTS\n")
	for _, name := range slices.Sorted(maps.Keys(live)) {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		var outputs []string
		for k, v := range live[name].Outputs {
			outputs = append(outputs, k+"="+v)
		}
		sort.Strings(outputs)
		printer.Fprintf(tw, "%s\t%s\t%s\n", name, live[name].Status, strings.Join(outputs, " "))
	}
	return tw.Flush()
}

// showDeletions prints the stacks the deployment's newest run deleted, in the order they
// went, as its run document records them.
func showDeletions(ctx context.Context, h *history.Store, deployment string, out io.Writer) error {
	runs, err := h.Runs(ctx, deployment, 1)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	var deleted []*runstate.Stack
	if len(runs) > 0 {
		for _, s := range runs[0].Run.Stacks {
			if s.Intent == runstate.IntentDelete && s.Phase == runstate.Done {
				deleted = append(deleted, s)
			}
		}
	}
	sort.Slice(deleted, func(i, j int) bool { return deleted[i].FinishedAt.Before(deleted[j].FinishedAt) })
	if len(deleted) == 0 {
		printer.Fprintf(out, "no stack was deleted\n")
	}
	for i, s := range deleted {
		printer.Fprintf(out, "  %d. %-14s deleted at %s\n", i+1, s.StackName, s.FinishedAt.UTC().Format("15:04:05.000"))
	}
	return nil
}

// showReports prints the S3 keys of the deployment's run reports, oldest first.
func showReports(ctx context.Context, h *history.Store, deployment string, out io.Writer) error {
	ids, err := h.RunIDs(ctx, deployment)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if len(ids) == 0 {
		printer.Fprintf(out, "  none under s3://%s/%s\n", h.Bucket, layout.RunsOf(deployment))
	}
	for _, id := range slices.Backward(ids) {
		printer.Fprintf(out, "  s3://%s/%s\n", h.Bucket, layout.RunReportKey(deployment, id))
	}
	return nil
}
