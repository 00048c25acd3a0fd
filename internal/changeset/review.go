package changeset

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

// Describe reads the change set id of a stack at t (all pages) with its resource changes,
// for the plan document and for an approval's freshness check; the changes of its nested
// change sets (IncludeNestedStacks) follow the nested stack's, named Stack/Resource. A
// change set that does not exist is Found false, not an error.
func (c *Client) Describe(ctx context.Context, t target.Spec, id string) (plan.ChangeSet, error) {
	return c.describe(ctx, t, id, "", 0)
}

// maxNestedDepth bounds how deep Describe follows nested change sets (CloudFormation
// nests stacks at most five levels below the root).
const maxNestedDepth = 5

func (c *Client) describe(ctx context.Context, t target.Spec, id, prefix string, depth int) (plan.ChangeSet, error) {
	var st plan.ChangeSet
	api, budget, err := c.At(ctx, t)
	if err != nil {
		return st, err
	}
	in := &cloudformation.DescribeChangeSetInput{ChangeSetName: aws.String(id)}
	for page := 0; ; page++ {
		if err := budget.Wait(ctx); err != nil {
			return st, err
		}
		out, err := api.DescribeChangeSet(ctx, in)
		if err != nil {
			if awserr.ChangeSetMissing(err) {
				return plan.ChangeSet{}, nil
			}
			return st, fmt.Errorf("describe change set %s: %w", id, err)
		}
		if page == 0 {
			st.Found, st.Status, st.ExecutionStatus = true, string(out.Status), string(out.ExecutionStatus)
			st.ID, st.Name, st.StackID, st.StackName = aws.ToString(out.ChangeSetId), aws.ToString(out.ChangeSetName), aws.ToString(out.StackId), aws.ToString(out.StackName)
			for _, t := range out.Tags {
				if st.Tags == nil {
					st.Tags = map[string]string{}
				}
				st.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
		}
		for _, ch := range out.Changes {
			rc := ch.ResourceChange
			if rc == nil {
				continue
			}
			pc := plan.Change{LogicalID: prefix + aws.ToString(rc.LogicalResourceId), PhysicalID: aws.ToString(rc.PhysicalResourceId),
				Type: aws.ToString(rc.ResourceType), Action: string(rc.Action), Replacement: string(rc.Replacement)}
			for _, d := range rc.Details {
				if d.Target == nil {
					continue
				}
				what := string(d.Target.Attribute)
				if n := aws.ToString(d.Target.Name); n != "" {
					what += " " + n
					if d.Target.Attribute == cfntypes.ResourceAttributeProperties && !slices.Contains(pc.Properties, n) {
						pc.Properties = append(pc.Properties, n)
					}
				}
				line := fmt.Sprintf("%s (recreation: %s, %s", what, cmp.Or(string(d.Target.RequiresRecreation), "Never"), cmp.Or(string(d.Evaluation), "Static"))
				if src := string(d.ChangeSource); src != "" {
					line += ", from " + src
					if ce := aws.ToString(d.CausingEntity); ce != "" {
						line += " " + ce
					}
				}
				pc.Details = append(pc.Details, line+")")
			}
			pc.DriftStatus, pc.Drift = driftStatus(rc), propertyDrift(rc)
			st.Changes = append(st.Changes, pc)
			if nested := aws.ToString(rc.ChangeSetId); nested != "" && depth < maxNestedDepth {
				ns, err := c.describe(ctx, t, nested, pc.LogicalID+"/", depth+1)
				if err != nil {
					return st, err
				}
				st.Changes = append(st.Changes, ns.Changes...)
			}
		}
		if aws.ToString(out.NextToken) == "" {
			return st, nil
		}
		in.NextToken = out.NextToken
	}
}

// ResourceChange is a resource change of a change set as a run checks a ripple's
// (run.ResourceChange): each detail's source and causing entity.
func ResourceChange(rc *cfntypes.ResourceChange) run.ResourceChange {
	c := run.ResourceChange{LogicalID: aws.ToString(rc.LogicalResourceId), Type: aws.ToString(rc.ResourceType), Action: string(rc.Action), Replacement: string(rc.Replacement)}
	for _, d := range rc.Details {
		cause := string(d.ChangeSource)
		if ce := aws.ToString(d.CausingEntity); ce != "" {
			cause += " " + ce
		}
		if cause != "" && !slices.Contains(c.Causes, cause) {
			c.Causes = append(c.Causes, cause)
		}
	}
	return c
}

// touched are the properties resource change rc changes, as a run names them (run.Touch).
func touched(rc *cfntypes.ResourceChange) []string {
	var out []string
	for _, d := range rc.Details {
		if d.Target != nil && d.Target.Attribute == cfntypes.ResourceAttributeProperties && aws.ToString(d.Target.Name) != "" {
			out = append(out, run.Touch(aws.ToString(rc.LogicalResourceId), aws.ToString(d.Target.Name)))
		}
	}
	return out
}

// driftStatus is a resource change's drift, when it is drift: MODIFIED or DELETED.
func driftStatus(rc *cfntypes.ResourceChange) string {
	switch rc.ResourceDriftStatus {
	case cfntypes.StackResourceDriftStatusModified, cfntypes.StackResourceDriftStatusDeleted:
		return string(rc.ResourceDriftStatus)
	}
	return ""
}

// propertyDrift is a drift-aware change set's drift of a resource, three ways per
// property (plan.PropertyDrift), masked.
func propertyDrift(rc *cfntypes.ResourceChange) []plan.PropertyDrift {
	var out []plan.PropertyDrift
	for _, dp := range Drift(rc) {
		if dp.Property == "" {
			continue
		}
		pd := plan.PropertyDrift{Property: dp.Property, Revert: dp.Revert}
		for _, d := range rc.Details {
			t := d.Target
			if t == nil || cmp.Or(aws.ToString(t.Name), strings.TrimPrefix(aws.ToString(t.Path), "/Properties/"), string(t.Attribute)) != dp.Property {
				continue
			}
			pd.Template = aws.ToString(t.AfterValue)
			if t.Drift != nil {
				pd.Previous, pd.Actual = aws.ToString(t.Drift.PreviousValue), aws.ToString(t.Drift.ActualValue)
			}
			break
		}
		out = append(out, pd.Masked())
	}
	return out
}

// Drift is what a drift-aware change set's resource change shows of the resource's drift
// (run.DriftedProperty): each drifted property (its target carries Drift, or is
// SyncWithActual) and whether executing the change set brings it back; a resource deleted
// out of band as one entry without a property. Values stay out: they may be secrets.
func Drift(rc *cfntypes.ResourceChange) []run.DriftedProperty {
	id := aws.ToString(rc.LogicalResourceId)
	switch rc.ResourceDriftStatus {
	case cfntypes.StackResourceDriftStatusDeleted:
		return []run.DriftedProperty{{LogicalID: id, Revert: rc.Action != cfntypes.ChangeActionSyncWithActual}}
	case cfntypes.StackResourceDriftStatusModified:
	default:
		return nil
	}
	var out []run.DriftedProperty
	seen := map[string]bool{}
	for _, d := range rc.Details {
		t := d.Target
		if t == nil || t.Drift == nil && t.AttributeChangeType != cfntypes.AttributeChangeTypeSyncWithActual {
			continue
		}
		name := cmp.Or(aws.ToString(t.Name), strings.TrimPrefix(aws.ToString(t.Path), "/Properties/"), string(t.Attribute))
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, run.DriftedProperty{LogicalID: id, Property: name, Revert: t.AttributeChangeType != cfntypes.AttributeChangeTypeSyncWithActual})
	}
	return out
}

// Resources lists the resources of the stack at t with id stackID (what deleting it
// removes), in CloudFormation's order.
func (c *Client) Resources(ctx context.Context, t target.Spec, stackID string) ([]plan.Resource, error) {
	all, err := c.stackResources(ctx, t, stackID)
	if err != nil {
		return nil, err
	}
	var res []plan.Resource
	for _, r := range all {
		if r.ResourceStatus != cfntypes.ResourceStatusDeleteComplete {
			res = append(res, plan.Resource{LogicalID: aws.ToString(r.LogicalResourceId), Type: aws.ToString(r.ResourceType)})
		}
	}
	return res, nil
}

// stackResources describes the resources of the stack at t with id stackID, within the
// place's API budget.
func (c *Client) stackResources(ctx context.Context, t target.Spec, stackID string) ([]cfntypes.StackResource, error) {
	api, budget, err := c.At(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := budget.Wait(ctx); err != nil {
		return nil, err
	}
	out, err := api.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(stackID)})
	if err != nil {
		return nil, fmt.Errorf("describe the resources of stack %s: %w", awsclient.StackName(stackID), err)
	}
	return out.StackResources, nil
}

// DeleteChangeSet deletes a change set of a stack at t by id; one already gone is no error.
func (c *Client) DeleteChangeSet(ctx context.Context, t target.Spec, id string) error {
	api, budget, err := c.At(ctx, t)
	if err == nil {
		err = budget.Wait(ctx)
	}
	if err != nil {
		return err
	}
	_, err = api.DeleteChangeSet(ctx, &cloudformation.DeleteChangeSetInput{ChangeSetName: aws.String(id)})
	if err != nil && !awserr.ChangeSetMissing(err) {
		return fmt.Errorf("delete change set %s: %w", id, err)
	}
	return nil
}

// OtherChangeSets lists the change sets of stack stackID at t other than own, by name (all
// pages, each under the run's budget).
func (c *Client) OtherChangeSets(ctx context.Context, t target.Spec, stackID, own string) ([]string, error) {
	api, budget, err := c.At(ctx, t)
	if err != nil {
		return nil, err
	}
	in := &cloudformation.ListChangeSetsInput{StackName: aws.String(stackID)}
	var others []string
	for {
		if err := budget.Wait(ctx); err != nil {
			return nil, err
		}
		out, err := api.ListChangeSets(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list change sets of stack %s: %w", stackID, err)
		}
		for _, cs := range out.Summaries {
			if aws.ToString(cs.ChangeSetId) != own {
				others = append(others, aws.ToString(cs.ChangeSetName))
			}
		}
		if aws.ToString(out.NextToken) == "" {
			return others, nil
		}
		in.NextToken = out.NextToken
	}
}

// DeleteStack deletes a stack at t by id or name.
func (c *Client) DeleteStack(ctx context.Context, t target.Spec, stack string) error {
	api, budget, err := c.At(ctx, t)
	if err == nil {
		err = budget.Wait(ctx)
	}
	if err != nil {
		return err
	}
	if _, err := api.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(stack)}); err != nil {
		return fmt.Errorf("delete stack %s: %w", stack, err)
	}
	return nil
}

// ResourceDrifts lists the resources of the stack at t with id stackID that its last drift
// detection found modified or deleted (all pages, each under the run's budget), values as
// CloudFormation gives them: the caller masks them (drift.Detected).
func (c *Client) ResourceDrifts(ctx context.Context, t target.Spec, stackID string) ([]drift.Resource, error) {
	api, budget, err := c.At(ctx, t)
	if err != nil {
		return nil, err
	}
	out, err := ListResourceDrifts(ctx, api, budget, stackID)
	if err != nil {
		return nil, fmt.Errorf("the drifted resources of stack %s: %s", awsclient.StackName(stackID), awserr.Reason(err))
	}
	return out, nil
}

// DriftLister reads the drifts of a stack's resources.
type DriftLister interface {
	DescribeStackResourceDrifts(ctx context.Context, in *cloudformation.DescribeStackResourceDriftsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourceDriftsOutput, error)
}

// ListResourceDrifts lists the modified and deleted resources of stack (a name or id) as
// its last drift detection found them, all pages, each after budget allows: the one
// reading of CloudFormation's resource drifts, for plans and for the drift sweeper. Its
// error is CloudFormation's, unwrapped, for the caller to classify (awserr.Throttled).
func ListResourceDrifts(ctx context.Context, api DriftLister, budget Budget, stack string) ([]drift.Resource, error) {
	in := &cloudformation.DescribeStackResourceDriftsInput{StackName: aws.String(stack),
		StackResourceDriftStatusFilters: []cfntypes.StackResourceDriftStatus{cfntypes.StackResourceDriftStatusModified, cfntypes.StackResourceDriftStatusDeleted}}
	var out []drift.Resource
	for {
		if err := budget.Wait(ctx); err != nil {
			return nil, err
		}
		page, err := api.DescribeStackResourceDrifts(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, r := range page.StackResourceDrifts {
			res := drift.Resource{LogicalID: aws.ToString(r.LogicalResourceId), PhysicalID: aws.ToString(r.PhysicalResourceId),
				Type: aws.ToString(r.ResourceType), Status: string(r.StackResourceDriftStatus)}
			for _, p := range r.PropertyDifferences {
				res.Differences = append(res.Differences, drift.Difference{Path: aws.ToString(p.PropertyPath),
					Expected: aws.ToString(p.ExpectedValue), Actual: aws.ToString(p.ActualValue), Type: string(p.DifferenceType)})
			}
			out = append(out, res)
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}
