package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/awsclient"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/deploy"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/state"
)

func init() { commands = append(commands, newRollbackCmd, newDestroyCmd, newRecoverCmd) }

// graphOf returns the namespace and graph key of a deployment, from its newest run that
// loaded a config.
// deploymentGraph resolves cairn's bucket (flag, CAIRN_BUCKET or the export) and the
// namespace and graph key deployment NAME's runs recorded.
func deploymentGraph(ctx context.Context, bucketFlag, deployment string) (s3c *s3.Client, bucket, ns, key string, err error) {
	s3c, bucket, err = bucketClient(ctx, bucketFlag)
	if err != nil {
		return nil, "", "", "", err
	}
	ns, key, err = graphOf(ctx, s3c, bucket, deployment)
	return s3c, bucket, ns, key, err
}

func graphOf(ctx context.Context, s3c *s3.Client, bucket, deployment string) (string, string, error) {
	keys, err := runDocs(ctx, s3c, bucket, deployment)
	if err != nil {
		return "", "", err
	}
	for _, k := range keys {
		doc, err := readRun(ctx, s3c, bucket, k)
		if err == nil && doc.Namespace != "" {
			return doc.Namespace, doc.GraphKey, nil
		}
	}
	return "", "", fmt.Errorf("deployment %s has no run that loaded its config in s3://%s: nothing was deployed yet", deployment, bucket)
}

// appliedBundles lists the bundles the graph's history records as applied, newest first,
// each once.
func appliedBundles(ctx context.Context, store *state.Store, namespace, key string) ([]state.BundleRef, error) {
	versions, err := store.History(ctx, namespace, key)
	if err != nil {
		return nil, err
	}
	var out []state.BundleRef
	seen := map[string]bool{}
	for _, v := range versions {
		if v.DeleteMarker {
			continue
		}
		g, err := store.Show(ctx, namespace, key, v.VersionID)
		if err != nil || g.Bundle.VersionID == "" || seen[g.Bundle.VersionID] {
			continue
		}
		seen[g.Bundle.VersionID] = true
		out = append(out, g.Bundle)
	}
	return out, nil
}

// bundleVersion downloads a version of the deployment's bundle, whichever of
// deployments/NAME.zip and plans/NAME.zip holds it, with its metadata.
func bundleVersion(ctx context.Context, s3c *s3.Client, bucket, deployment, version string) ([]byte, map[string]string, error) {
	for _, key := range []string{layout.DeploymentKey(deployment), layout.PlanUploadKey(deployment)} {
		out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(version)})
		if err != nil {
			continue
		}
		data, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("read s3://%s/%s version %s: %w", bucket, key, version, err)
		}
		return data, out.Metadata, nil
	}
	return nil, nil, fmt.Errorf("bundle version %s of deployment %s is in neither %s nor %s of s3://%s (expired by a lifecycle rule?)", version, deployment, layout.DeploymentKey(deployment), layout.PlanUploadKey(deployment), bucket)
}

func uploadPlanBundle(ctx context.Context, s3c *s3.Client, bucket, deployment string, data []byte, meta map[string]string) (string, error) {
	key := layout.PlanUploadKey(deployment)
	out, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
		ContentType: aws.String("application/zip"), Metadata: meta})
	if err != nil {
		return "", fmt.Errorf("upload s3://%s/%s: %w", bucket, key, err)
	}
	return aws.ToString(out.VersionId), nil
}

func newRollbackCmd() *cobra.Command {
	var bucket, to, format string
	var approveToo bool
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "rollback NAME [--to VERSION|GIT_REF]",
		Short: "Plan the earlier applied bundle against today's stacks (roll back by rolling forward)",
		Long: `Rollback finds in the persistent graph's history the bundle applied before the current one
(or the one --to names, by bundle version id or git ref) and plans it again, against the
stacks as they are today: the plan shows exactly what returns. Apply it with --approve,
or review it and run ` + "`cairn approve NAME PLAN_ID`" + `.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			deployment := args[0]
			stdout := cmd.OutOrStdout()
			render, err := planRenderer(format)
			if err != nil {
				return err
			}
			s3c, bucket, ns, key, err := deploymentGraph(ctx, bucket, deployment)
			if err != nil {
				return err
			}
			store := &state.Store{S3: s3c, Bucket: bucket}
			bundles, err := appliedBundles(ctx, store, ns, key)
			if err != nil {
				return err
			}
			target, err := pickBundle(bundles, to)
			if err != nil {
				return fmt.Errorf("rollback %s: %w", deployment, err)
			}
			data, meta, err := bundleVersion(ctx, s3c, bucket, deployment, target.VersionID)
			if err != nil {
				return err
			}
			version, err := uploadPlanBundle(ctx, s3c, bucket, deployment, data, meta)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "planning bundle version %s (git %s) of deployment %s as %s version %s\n",
				target.VersionID, dash(target.GitRef), deployment, layout.URI(bucket, layout.PlanUploadKey(deployment)), version)
			if !wf.wait && !approveToo {
				return nil
			}
			var planID string
			err = waitPlan(ctx, s3c, bucket, deployment, version, wf, func(w io.Writer, p *plan.Document) error {
				planID = p.ID
				return render(w, p)
			}, stdout, stdout)
			if err != nil || !approveToo {
				return err
			}
			wf.wait = true
			return approve(ctx, s3c, bucket, deployment, planID, wf, stdout)
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", "", "cairn's bucket (default: $CAIRN_BUCKET, or the export "+bucketExport+")")
	cmd.Flags().StringVar(&to, "to", "", "bundle version id or git ref to return to (default: the one applied before the current)")
	cmd.Flags().StringVar(&format, "format", "text", "how to print the plan: text, md or json")
	cmd.Flags().BoolVar(&approveToo, "approve", false, "approve the plan as soon as it is made, and follow the apply run")
	wf.add(cmd, "plan run")
	return cmd
}

// pickBundle chooses the rollback target among the applied bundles, newest first.
func pickBundle(bundles []state.BundleRef, to string) (state.BundleRef, error) {
	if len(bundles) == 0 {
		return state.BundleRef{}, errors.New("the graph's history records no applied bundle")
	}
	if to == "" {
		if len(bundles) < 2 {
			return state.BundleRef{}, fmt.Errorf("only one bundle (version %s) was ever applied: nothing earlier to return to", bundles[0].VersionID)
		}
		return bundles[1], nil
	}
	for _, b := range bundles {
		if b.VersionID == to || (len(to) >= 7 && strings.HasPrefix(b.GitRef, to)) {
			return b, nil
		}
	}
	var known []string
	for _, b := range bundles {
		known = append(known, b.VersionID+" (git "+dash(b.GitRef)+")")
	}
	return state.BundleRef{}, fmt.Errorf("no applied bundle has version or git ref %q; applied: %s", to, strings.Join(known, ", "))
}

func newDestroyCmd() *cobra.Command {
	var bucket, format string
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "destroy NAME",
		Short: "Plan the deletion of every stack of the deployment's graph; it applies only through approval",
		Long: `Destroy plans the deletion of every stack in the deployment's persistent graph, dependents
first. Stacks that block it (termination protection, exports still imported) are named and
the plan fails. Nothing is deleted until the plan is approved with ` + "`cairn approve NAME PLAN_ID`" + `;
when the graph is empty its state object is removed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			deployment := args[0]
			stdout := cmd.OutOrStdout()
			render, err := planRenderer(format)
			if err != nil {
				return err
			}
			s3c, bucket, ns, key, err := deploymentGraph(ctx, bucket, deployment)
			if err != nil {
				return err
			}
			g, err := (&state.Store{S3: s3c, Bucket: bucket}).Show(ctx, ns, key, "")
			if err != nil {
				return fmt.Errorf("destroy %s: %w", deployment, err)
			}
			if g.Bundle.VersionID == "" {
				return fmt.Errorf("destroy %s: the graph %s/%s names no applied bundle version to read the config from", deployment, ns, key)
			}
			data, meta, err := bundleVersion(ctx, s3c, bucket, deployment, g.Bundle.VersionID)
			if err != nil {
				return err
			}
			if meta == nil {
				meta = map[string]string{}
			}
			meta[deploy.DestroyMetadata] = "true"
			version, err := uploadPlanBundle(ctx, s3c, bucket, deployment, data, meta)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "planning the deletion of the %d stack(s) of graph %s/%s (%s version %s)\n", len(g.Stacks), ns, key, layout.URI(bucket, layout.PlanUploadKey(deployment)), version)
			if !wf.wait {
				return nil
			}
			return waitPlan(ctx, s3c, bucket, deployment, version, wf, render, stdout, stdout)
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", "", "cairn's bucket (default: $CAIRN_BUCKET, or the export "+bucketExport+")")
	cmd.Flags().StringVar(&format, "format", "text", "with --wait, how to print the plan: text, md or json")
	wf.add(cmd, "plan run")
	return cmd
}

func newRecoverCmd() *cobra.Command {
	var bucket string
	var skip []string
	var rollback bool
	var timeout, poll time.Duration
	cmd := &cobra.Command{
		Use:   "recover NAME STACK [--skip RESOURCE...] [--rollback]",
		Short: "Bring a stack stuck in a FAILED state back to a stable one",
		Long: `Recover takes the deployment's lock and starts a recovery of STACK (its config name, or its
CloudFormation name): ContinueUpdateRollback for UPDATE_ROLLBACK_FAILED, skipping the
resources named with --skip (they are left as they are), or with --rollback a
RollbackStack of a stack whose create or update failed. It waits for the result and
exits 0 when the stack is stable again, 1 otherwise, with the first failure's reason.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			deployment, stack := args[0], args[1]
			w := cmd.OutOrStdout()
			awsCfg, err := awsclient.Load(ctx)
			if err != nil {
				return err
			}
			cfn := cloudformation.NewFromConfig(awsCfg)
			s3c := awsclient.S3(awsCfg)
			bucket, err := resolveBucket(ctx, bucket, cfn)
			if err != nil {
				return err
			}
			ns, key, err := graphOf(ctx, s3c, bucket, deployment)
			if err != nil {
				return err
			}
			store := &state.Store{S3: s3c, Bucket: bucket}
			stackName := stack
			if g, err := store.Show(ctx, ns, key, ""); err == nil && g.Stacks[stack] != nil {
				stackName = g.Stacks[stack].StackName
			}
			lock, err := store.Acquire(ctx, ns, key, "recover-"+time.Now().UTC().Format("20060102-150405"), state.Owner{Function: "cairn recover"})
			if err != nil {
				return fmt.Errorf("recover %s: %w: wait for the run to end (or `cairn unlock %s %s` if it is dead)", stackName, err, ns, key)
			}
			defer store.Release(context.WithoutCancel(ctx), lock)
			before, err := describeStack(ctx, cfn, stackName)
			if err != nil {
				return err
			}
			token := aws.String(lock.Token)
			switch {
			case rollback:
				_, err = cfn.RollbackStack(ctx, &cloudformation.RollbackStackInput{StackName: aws.String(stackName), ClientRequestToken: token})
			case before.StackStatus == cfntypes.StackStatusUpdateRollbackFailed:
				_, err = cfn.ContinueUpdateRollback(ctx, &cloudformation.ContinueUpdateRollbackInput{StackName: aws.String(stackName), ResourcesToSkip: skip, ClientRequestToken: token})
			default:
				return fmt.Errorf("recover %s: stack is %s; ContinueUpdateRollback needs UPDATE_ROLLBACK_FAILED (use --rollback for a failed create or update)", stackName, before.StackStatus)
			}
			if err != nil {
				return fmt.Errorf("recover %s (%s): %w", stackName, before.StackStatus, err)
			}
			action := "ContinueUpdateRollback"
			if rollback {
				action = "RollbackStack"
			}
			fmt.Fprintf(w, "stack %s was %s: %s started", stackName, before.StackStatus, action)
			if len(skip) > 0 {
				fmt.Fprintf(w, " skipping %s", strings.Join(skip, ", "))
			}
			fmt.Fprintln(w)
			deadline := time.Now().Add(timeout)
			for {
				st, err := describeStack(ctx, cfn, stackName)
				if err != nil {
					return err
				}
				status := string(st.StackStatus)
				if !strings.HasSuffix(status, "_IN_PROGRESS") {
					fmt.Fprintf(w, "stack %s is %s", stackName, status)
					if strings.HasSuffix(status, "_FAILED") {
						fmt.Fprintf(w, ": %s\n", aws.ToString(st.StackStatusReason))
						return exitError{1}
					}
					fmt.Fprintf(w, ": recovered\n")
					if err := recordRecovery(ctx, w, store, lock, st); err != nil {
						return err
					}
					fmt.Fprintf(w, "push or plan again to apply the config\n")
					return nil
				}
				if time.Now().After(deadline) {
					fmt.Fprintf(w, "gave up waiting after %s: stack %s is %s\n", timeout, stackName, status)
					return exitError{4}
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(poll):
				}
			}
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", "", "cairn's bucket (default: $CAIRN_BUCKET, or the export "+bucketExport+")")
	cmd.Flags().StringSliceVar(&skip, "skip", nil, "logical ids of resources ContinueUpdateRollback skips")
	cmd.Flags().BoolVar(&rollback, "rollback", false, "RollbackStack instead of ContinueUpdateRollback")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Hour, "how long to wait for the result")
	cmd.Flags().DurationVar(&poll, "poll", 2*time.Second, "how often to look at the stack")
	return cmd
}

// recordRecovery writes the recovered stack's new status and outputs into the persistent
// graph under the recovery's lock, so the next plan starts from what is live rather than
// from the failure the graph last saw.
func recordRecovery(ctx context.Context, w io.Writer, store *state.Store, lock *state.Lock, st cfntypes.Stack) error {
	name := aws.ToString(st.StackName)
	g, err := store.Read(ctx, lock)
	if errors.Is(err, state.ErrNotFound) {
		fmt.Fprintf(w, "graph %s/%s does not exist: nothing recorded\n", lock.Namespace, lock.Key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("recover %s: the stack recovered, but the graph %s/%s cannot be read to record it: %w; the next run records it", name, lock.Namespace, lock.Key, err)
	}
	var entry *state.Stack
	for _, n := range g.Names() {
		if s := g.Stacks[n]; s != nil && s.StackName == name {
			entry = s
			break
		}
	}
	if entry == nil {
		fmt.Fprintf(w, "stack %s is not in the graph %s/%s: nothing recorded\n", name, lock.Namespace, lock.Key)
		return nil
	}
	was := entry.Status
	entry.Status, entry.StackID, entry.UpdatedAt = string(st.StackStatus), aws.ToString(st.StackId), time.Now().UTC()
	entry.Outputs = nil
	for _, o := range st.Outputs {
		if entry.Outputs == nil {
			entry.Outputs = map[string]string{}
		}
		entry.Outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	if err := store.Write(ctx, lock, g); err != nil {
		return fmt.Errorf("recover %s: the stack recovered, but recording it in the graph %s/%s failed: %w; the next run records it", name, lock.Namespace, lock.Key, err)
	}
	fmt.Fprintf(w, "graph %s/%s generation %d: stack %s recorded as %s (was %s), with %d output(s)\n",
		lock.Namespace, lock.Key, g.Generation, entry.Name, entry.Status, nonEmptyStatus(was), len(entry.Outputs))
	return nil
}

func nonEmptyStatus(s string) string {
	if s == "" {
		return "no status"
	}
	return s
}

func describeStack(ctx context.Context, cfn *cloudformation.Client, name string) (cfntypes.Stack, error) {
	out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		return cfntypes.Stack{}, fmt.Errorf("describe stack %s: %w", name, err)
	}
	if len(out.Stacks) == 0 {
		return cfntypes.Stack{}, fmt.Errorf("stack %s does not exist", name)
	}
	return out.Stacks[0], nil
}
