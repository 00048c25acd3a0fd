package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/policy"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/teampolicy"
)

// policyWriter is what publish and override share: cairn's bucket, and who writes to it
// (the environment's credentials, or the policy role's with --role).
type policyWriter struct {
	cf   cairnFlags
	role string
}

func (w *policyWriter) add(cmd *cobra.Command) {
	w.cf.add(cmd)
	cmd.Flags().StringVar(&w.role, "role", "", "assume this role (the policy role, output PolicyRoleArn of cairn's stack) to write; default: the environment's credentials")
}

// open resolves the bucket and the writer's credentials: with --role, the role's session
// (named after the caller); its store names the caller and the policy role in refusals.
func (w *policyWriter) open(cmd *cobra.Command) (*teampolicy.Store, *history.Store, error) {
	c, err := w.cf.open(cmd)
	if err != nil {
		return nil, nil, err
	}
	ctx := cmd.Context()
	cfg := c.AWS
	if w.role != "" {
		// The session is named after whoever assumes the role, so the ARN an override
		// records as "by" (and CloudTrail) names the person, not only the role.
		me, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil {
			return nil, nil, fmt.Errorf("who am I (sts GetCallerIdentity): %s", awserr.Reason(err))
		}
		out, err := sts.NewFromConfig(cfg).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(w.role),
			RoleSessionName: aws.String(teampolicy.SessionName(aws.ToString(me.Arn)))})
		if err != nil {
			if awserr.AccessDenied(err) {
				return nil, nil, refuse("--role %s: you may not assume it (%s): the role's trust (cairn:policyAdmins) names who may; ask the platform team", w.role, awserr.Reason(err))
			}
			return nil, nil, fmt.Errorf("assume %s: %w", w.role, err)
		}
		cr := out.Credentials
		cfg = cfg.Copy()
		cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(aws.ToString(cr.AccessKeyId), aws.ToString(cr.SecretAccessKey), aws.ToString(cr.SessionToken)))
	}
	caller := ""
	if id, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}); err == nil {
		caller = aws.ToString(id.Arn)
	} else {
		return nil, nil, fmt.Errorf("who am I (sts GetCallerIdentity): %s", awserr.Reason(err))
	}
	// The role to name in a refusal is the policy role, not the one --role named.
	role, _ := c.PolicyRole(ctx)
	s3c := awsclient.S3(cfg)
	return &teampolicy.Store{S3: s3c, Bucket: c.bucket, Caller: caller, Role: role}, &history.Store{S3: s3c, Bucket: c.bucket}, nil
}

// refusedWrite turns S3's refusal into the refusal it is.
func refusedWrite(err error) error {
	var de *teampolicy.DeniedError
	if errors.As(err, &de) {
		return refuse("%v", err)
	}
	return err
}

func newPolicyPublishCmd() *cobra.Command {
	var w policyWriter
	var timeout time.Duration
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "publish DIR",
		Short: "Publish the team's policies in DIR to cairn's bucket (policies/), as the policy role",
		Long: `Publish makes the policies under policies/ in cairn's bucket the ones in DIR: its .rego
files (policies and their _test.rego tests) and .json data, sub-folders kept. First it
compiles them and runs their Rego tests: a set that does not compile, or whose tests fail,
is refused and nothing is written. Then it uploads what is new or changed, deletes the
objects DIR no longer holds, and prints each change.

Only the policy role may write policies/ (cairn's bucket policy refuses everyone else,
administrators too): pass --role with its ARN (the output PolicyRoleArn of cairn's stack,
printed by cairn local up), or run with its credentials.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			set, err := policy.Load(os.DirFS(dir), dir, policy.Team)
			if err != nil {
				return refuse("%v", err)
			}
			if err := teampolicy.Check(cmd.Context(), set, timeout); err != nil {
				return refuse("%v", err)
			}
			files, err := teampolicy.Files(os.DirFS(dir))
			if err != nil {
				return refuse("read %s: %v", dir, err)
			}
			store, _, err := w.open(cmd)
			if err != nil {
				return err
			}
			return publish(cmd, store, dir, files, dryRun)
		},
	}
	w.add(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "the longest one Rego test may take")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would change, and write nothing")
	return cmd
}

func publish(cmd *cobra.Command, store *teampolicy.Store, dir string, files map[string][]byte, dryRun bool) error {
	ctx := cmd.Context()
	remote, err := store.Remote(ctx)
	if err != nil {
		return refusedWrite(err)
	}
	changes := teampolicy.Diff(files, remote)
	out := cmd.OutOrStdout()
	where := "s3://" + store.Bucket + "/" + bucket.PoliciesPrefix
	if len(changes) == 0 {
		printer.Fprintf(out, "%s is up to date with %s (%d %s)\n", where, filepath.Clean(dir), len(files), plural(len(files), "file"))
		return nil
	}
	if !dryRun {
		if err := store.Publish(ctx, files, changes); err != nil {
			return refusedWrite(err)
		}
	}
	count := map[string]int{}
	for _, c := range changes {
		count[c.Kind]++
		printer.Fprintf(out, "%-7s %s\n", c.Kind, c.Key)
	}
	verb := "published"
	if dryRun {
		verb = "would publish (--dry-run: nothing written)"
	}
	printer.Fprintf(out, "%s %s to %s as %s: %d added, %d changed, %d removed\n", verb, filepath.Clean(dir), where, store.Caller,
		count[teampolicy.Added], count[teampolicy.Changed], count[teampolicy.Removed])
	return nil
}

func newPolicyOverrideCmd() *cobra.Command {
	var w policyWriter
	var reason string
	cmd := &cobra.Command{
		Use:   "override NAME PLAN_ID RULE --reason TEXT",
		Short: "Override the denials of one rule for one plan, as the policy role",
		Long: `Override writes policy-overrides/NAME/PLAN_ID/RULE.json in cairn's bucket: the denials of
rule RULE (a result's rule, the policy's package, e.g. cairn.s3_public) in plan PLAN_ID of
deployment NAME are lifted, for that plan only; another rule's, or another plan's, are not.
The override records the reason, who wrote it (sts GetCallerIdentity) and when; the plan's
comment and its run report show it.

The plan must exist and its policy results deny RULE. Only the policy role may write overrides (cairn's bucket policy
refuses everyone else): pass --role with its ARN, or run with its credentials.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, planID, rule := args[0], args[1], args[2]
			for _, err := range []error{bucket.CheckDeployment(name), bucket.CheckPlanID(planID), bucket.ValidRule(rule)} {
				if err != nil {
					return usageError{cmd: cmd, msg: err.Error()}
				}
			}
			if len(reason) == 0 || len(reason) > teampolicy.MaxReason {
				return usageError{cmd: cmd, msg: fmt.Sprintf("--reason is needed, 1 to %d characters: say why the rule may be broken here (a ticket, an incident)", teampolicy.MaxReason)}
			}
			store, plans, err := w.open(cmd)
			if err != nil {
				return err
			}
			return override(cmd.Context(), cmd, store, plans, name, planID, rule, reason)
		},
	}
	w.add(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why the rule may be broken for this plan (required)")
	return cmd
}

func override(ctx context.Context, cmd *cobra.Command, store *teampolicy.Store, plans *history.Store, name, planID, rule, reason string) error {
	// The plan must exist and deny the rule: an override that lifts nothing is refused
	// before anything is written.
	doc, err := plans.Plan(ctx, name, planID)
	if err != nil {
		if errors.Is(err, history.ErrNotFound) {
			return refuse("plan %s of deployment %s does not exist: `cairn plans %s` lists its plans", planID, name, name)
		}
		return err
	}
	if err := doc.Policy.Overridable(rule); err != nil {
		return refuse("plan %s of %s: no override of %s written: %v", planID, name, rule, err)
	}
	at := time.Now().UTC().Truncate(time.Second)
	key, err := store.WriteOverride(ctx, name, planID, rule, teampolicy.Override{Reason: reason, By: store.Caller, At: at})
	if err != nil {
		return refusedWrite(err)
	}
	printer.Fprintf(cmd.OutOrStdout(), "override written to s3://%s/%s by %s at %s: rule %s's denials of plan %s of %s are lifted\n",
		store.Bucket, key, store.Caller, at.Format(time.RFC3339), rule, planID, name)
	return nil
}
