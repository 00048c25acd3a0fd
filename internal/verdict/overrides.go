package verdict

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/objects"
)

// MaxOverride bounds an override document: a reason, an ARN and a time.
const MaxOverride = 16 << 10

// Store reads overrides: what of S3 Overrides needs.
type Store interface {
	objects.Getter
	objects.Lister
}

// Overrides reads the overrides of plan planID of deployment from cairn's bucket name
// (policy-overrides/NAME/PLAN_ID/RULE.json): one listing, then each override. A document
// that is not an override (not JSON, no reason or author, another rule than its key's)
// is an error naming it: the policy role wrote something cairn cannot trust.
func Overrides(ctx context.Context, api Store, name, deployment, planID string) ([]Override, error) {
	keys, err := objects.List(ctx, api, name, bucket.PolicyOverridesOf(deployment, planID))
	if err != nil {
		return nil, fmt.Errorf("policy overrides of plan %s: %w", planID, err)
	}
	var out []Override
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
		ov, err := DecodeOverride(rule, o.Body)
		if err != nil {
			return nil, fmt.Errorf("policy override %s: %w", bucket.URI(name, k), err)
		}
		ov.Key, ov.VersionID = k, o.VersionID
		out = append(out, ov)
	}
	return out, nil
}

// DecodeOverride decodes the override of rule: {"reason": ..., "by": ..., "at": RFC 3339}.
func DecodeOverride(rule string, body []byte) (Override, error) {
	var doc struct {
		Reason string    `json:"reason"`
		By     string    `json:"by"`
		At     time.Time `json:"at"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Override{}, fmt.Errorf("not an override (%v): write it with `cairn policy override`", err)
	}
	if strings.TrimSpace(doc.Reason) == "" || strings.TrimSpace(doc.By) == "" {
		return Override{}, errors.New("an override needs a reason and who wrote it (by): write it with `cairn policy override`")
	}
	return Override{Rule: rule, Reason: doc.Reason, By: doc.By, At: doc.At.UTC()}, nil
}

// Check reads the overrides written for plan planID of deployment and lifts v with them:
// the verdict as it stands now (a copy; nil when v is nil: nothing was judged), and the
// refusal of a plan with a standing denial ("" when it may be applied). The CLI checks
// it before it approves, and the deployer again before an apply run executes anything.
func Check(ctx context.Context, api Store, name, deployment, planID string, v *Verdict) (*Verdict, string, error) {
	if v == nil {
		return nil, "", nil
	}
	overrides, err := Overrides(ctx, api, name, deployment, planID)
	if err != nil {
		return nil, "", err
	}
	c := *v
	c.Lift(overrides)
	return &c, c.Refusal(deployment, planID), nil
}
