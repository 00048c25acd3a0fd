package statestore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cairn-dev/cairn/internal/state"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/bucket"
)

// requiresFromTags reads back what StackTags wrote under TagRequires.
func requiresFromTags(tags map[string]string) []string {
	var reqs []string
	for n := 1; ; n++ {
		k := state.TagRequires
		if n > 1 {
			k = fmt.Sprintf("%s-%d", state.TagRequires, n)
		}
		v, ok := tags[k]
		if !ok {
			break
		}
		for _, r := range strings.Split(v, ",") {
			if r = strings.TrimSpace(r); r != "" {
				reqs = append(reqs, r)
			}
		}
	}
	sort.Strings(reqs)
	return reqs
}

// CloudFormationAPI is the part of the CloudFormation client Rebuild uses.
type CloudFormationAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// Budget is the run's API budget every CloudFormation call waits for (awsclient.Budget).
type Budget interface {
	Wait(ctx context.Context) error
}

// Rebuild reconstructs the graph of namespace/key from the tags of the live stacks
// (DescribeStacks, all pages, each waiting for budget): every stack tagged with this
// namespace and graph key, whether cairn created it or it was tagged to be adopted. The
// result has Rebuilt set when it found any stack and Generation 0; it is not written (Write
// it under the lock).
func (s *Store) Rebuild(ctx context.Context, cfn CloudFormationAPI, budget Budget, namespace, key string) (*state.Graph, error) {
	if err := checkNames(namespace, key); err != nil {
		return nil, err
	}
	g := &state.Graph{SchemaVersion: state.SchemaVersion, Namespace: namespace, Key: key, Stacks: map[string]*state.Stack{}}
	bundles := map[state.BundleRef]int{}
	in := &cloudformation.DescribeStacksInput{}
	for page := 0; page == 0 || aws.ToString(in.NextToken) != ""; page++ {
		if err := budget.Wait(ctx); err != nil {
			return nil, fmt.Errorf("rebuild state %s/%s from stack tags: %w", namespace, key, err)
		}
		out, err := cfn.DescribeStacks(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("rebuild state %s/%s from stack tags: describe stacks: %w", namespace, key, err)
		}
		in.NextToken = out.NextToken
		for _, cs := range out.Stacks {
			if aws.ToString(cs.ParentId) != "" {
				continue // a nested stack carries its parent's tags
			}
			st, bundle, ok := stackFromTags(cs, namespace, key)
			if !ok {
				continue
			}
			if prev, dup := g.Stacks[st.Name]; dup {
				return nil, fmt.Errorf("rebuild state %s/%s: stacks %s and %s are both tagged %s=%s: remove the tag from the one cairn should not manage",
					namespace, key, prev.StackName, st.StackName, state.TagName, st.Name)
			}
			g.Stacks[st.Name] = st
			bundles[bundle]++
		}
	}
	g.Bundle = mostCommon(bundles)
	if len(bundles) > 1 {
		s.logger().Warn("state: stacks carry tags of different bundles; the graph records the most common",
			"namespace", namespace, "key", key, "bundle_sha256", g.Bundle.SHA256, "git_ref", g.Bundle.GitRef, "bundles", len(bundles))
	}
	// A dependency on a stack that no longer exists cannot be honoured; the next write
	// refreshes dependencies from the config anyway.
	for _, st := range g.Stacks {
		kept := st.Requires[:0]
		for _, r := range st.Requires {
			if _, ok := g.Stacks[r]; ok {
				kept = append(kept, r)
			} else {
				s.logger().Warn("state: rebuilt stack requires a stack that was not found; dropping the dependency",
					"namespace", namespace, "key", key, "stack", st.Name, "requires", r)
			}
		}
		if len(kept) == 0 {
			kept = nil
		}
		st.Requires = kept
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("rebuild state %s/%s from stack tags: %w: correct the %s tags", namespace, key, err, state.TagRequires)
	}
	if len(g.Stacks) > 0 {
		g.Rebuilt = true
		s.logger().Warn("state: rebuilt the persistent graph from stack tags", "namespace", namespace, "key", key,
			"stacks", strings.Join(g.Names(), ","), "bucket", s.Bucket, "object", bucket.StateKey(namespace, key))
	}
	return g, nil
}

// ReadOrRebuild reads the graph under l and, when its object is missing, rebuilds it from
// stack tags (logged; Rebuilt says so, for the run report). A namespace without state and
// without tagged stacks gives an empty graph. Write the result under the same lock.
func (s *Store) ReadOrRebuild(ctx context.Context, l *Lock, cfn CloudFormationAPI, budget Budget) (*state.Graph, error) {
	g, err := s.Read(ctx, l)
	if !errors.Is(err, ErrNotFound) {
		return g, err
	}
	return s.Rebuild(ctx, cfn, budget, l.Namespace, l.Key)
}

func stackFromTags(cs cfntypes.Stack, namespace, key string) (*state.Stack, state.BundleRef, bool) {
	if cs.StackStatus == cfntypes.StackStatusDeleteComplete || cs.StackStatus == cfntypes.StackStatusReviewInProgress {
		// Gone, or never deployed: a stack in REVIEW_IN_PROGRESS only holds the change set
		// a plan made to create it (it has no resources); the graph records what was deployed.
		return nil, state.BundleRef{}, false
	}
	tags := map[string]string{}
	for _, t := range cs.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	if tags[state.TagNamespace] != namespace || tags[state.TagGraphKey] != key || tags[state.TagName] == "" {
		return nil, state.BundleRef{}, false
	}
	st := &state.Stack{
		Name:           tags[state.TagName],
		StackName:      aws.ToString(cs.StackName),
		StackID:        aws.ToString(cs.StackId),
		Region:         regionOf(aws.ToString(cs.StackId)),
		Requires:       requiresFromTags(tags),
		TemplateHash:   tags[state.TagTemplateHash],
		ParametersHash: tags[state.TagParametersHash],
		Status:         string(cs.StackStatus),
		Tags:           tags,
		UpdatedAt:      aws.ToTime(cs.CreationTime).UTC(),
	}
	if cs.LastUpdatedTime != nil {
		st.UpdatedAt = cs.LastUpdatedTime.UTC()
	}
	if len(cs.Outputs) > 0 {
		st.Outputs = map[string]string{}
		for _, o := range cs.Outputs {
			st.Outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
		}
	}
	bundle := state.BundleRef{VersionID: tags[state.TagBundleVersion], SHA256: tags[state.TagBundleSHA256], GitRef: tags[state.TagGitRef], GitRemote: tags[state.TagGitRemote]}
	return st, bundle, true
}

// regionOf returns the region of a stack ARN (arn:aws:cloudformation:REGION:ACCOUNT:stack/...).
func regionOf(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 || parts[0] != "arn" {
		return ""
	}
	return parts[3]
}

func mostCommon(counts map[state.BundleRef]int) state.BundleRef {
	var best state.BundleRef
	bestN := -1
	for b, n := range counts {
		if n > bestN || (n == bestN && b.SHA256+b.VersionID > best.SHA256+best.VersionID) {
			best, bestN = b, n
		}
	}
	return best
}
