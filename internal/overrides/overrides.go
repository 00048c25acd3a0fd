// Package overrides reads the overrides of policy denials from cairn's bucket
// (policy-overrides/NAME/PLAN_ID/RULE.json, written only by the policy role) and checks a
// plan's verdict with them: what the CLI checks before it approves a plan, and the
// deployer again before an apply executes anything.
package overrides

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// MaxOverride bounds an override document: a reason, an ARN and a time.
const MaxOverride = 16 << 10

// Store reads overrides: what of S3 Overrides needs.
type Store interface {
	objects.Getter
	objects.Lister
}

// Read reads the overrides of plan planID of deployment from cairn's bucket name
// (policy-overrides/NAME/PLAN_ID/RULE.json): one listing, then each override. A document
// that is not an override (not JSON, no reason or author, another rule than its key's)
// is an error naming it: the policy role wrote something cairn cannot trust.
func Read(ctx context.Context, api Store, name, deployment, planID string) ([]verdict.Override, error) {
	keys, err := objects.List(ctx, api, name, bucket.PolicyOverridesOf(deployment, planID))
	if err != nil {
		return nil, fmt.Errorf("policy overrides of plan %s: %w", planID, err)
	}
	var out []verdict.Override
	for _, k := range keys {
		rule, ok := bucket.PolicyRuleOf(deployment, planID, k)
		if !ok {
			continue // not an override's key: lifts nothing
		}
		o, err := objects.Get(ctx, api, name, k, "", MaxOverride)
		if errors.Is(err, objects.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("policy override %s: %w", bucket.URI(name, k), err)
		}
		ov, err := verdict.DecodeOverride(rule, o.Body)
		if err != nil {
			return nil, fmt.Errorf("policy override %s: %w", bucket.URI(name, k), err)
		}
		ov.Key, ov.VersionID = k, o.VersionID
		out = append(out, ov)
	}
	return out, nil
}

// Check reads the overrides written for plan planID of deployment and lifts v with them:
// the verdict as it stands now (a copy; nil when v is nil: nothing was judged), and the
// refusal of a plan with a standing denial ("" when it may be applied). The CLI checks
// it before it approves, and the deployer again before an apply run executes anything.
func Check(ctx context.Context, api Store, name, deployment, planID string, v *verdict.Verdict) (*verdict.Verdict, string, error) {
	if v == nil {
		return nil, "", nil
	}
	overrides, err := Read(ctx, api, name, deployment, planID)
	if err != nil {
		return nil, "", err
	}
	c := *v
	c.Lift(overrides)
	return &c, c.Refusal(deployment, planID), nil
}
