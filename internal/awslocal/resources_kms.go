package awslocal

import (
	"context"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/kmslocal"
)

// keyProvider makes AWS::KMS::Key resources real keys of the place's KMS: Ref is the key
// id, Fn::GetAtt Arn and KeyId are its own. Deleting the resource schedules the key's
// deletion, as CloudFormation does (PendingWindowInDays aside: always 30 days).
func (p *Place) keyProvider() cfnlocal.Provider {
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			k, err := p.kms.Create(kmslocal.CreateInput{KeySpec: text(r.Props["KeySpec"]), KeyUsage: text(r.Props["KeyUsage"]),
				Description: text(r.Props["Description"]), Policy: text(r.Props["KeyPolicy"])})
			if err != nil {
				return "", nil, err
			}
			if text(r.Props["Enabled"]) == "false" {
				if _, err := p.kms.SetState(k.ID, "Disabled"); err != nil {
					return "", nil, err
				}
			}
			return k.ID, map[string]any{"Arn": k.ARN, "KeyId": k.ID}, nil
		},
		Update: func(_ context.Context, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			state := "Enabled"
			if text(r.Props["Enabled"]) == "false" {
				state = "Disabled"
			}
			k, err := p.kms.SetState(r.PhysicalID, state)
			if err != nil {
				return nil, err
			}
			return map[string]any{"Arn": k.ARN, "KeyId": k.ID}, nil
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			if _, err := p.kms.SetState(r.PhysicalID, "PendingDeletion"); err != nil && !strings.Contains(err.Error(), "NotFoundException") && !strings.Contains(err.Error(), "pending deletion") {
				return err
			}
			return nil
		},
		Read: func(_ context.Context, r cfnlocal.Resource) (map[string]any, bool, error) {
			k, err := p.kms.Describe(r.PhysicalID)
			if err != nil || k.State == "PendingDeletion" {
				return nil, false, nil
			}
			out := map[string]any{"KeySpec": k.Spec, "KeyUsage": k.Usage, "Enabled": k.State == "Enabled"}
			if k.Description != "" {
				out["Description"] = k.Description
			}
			return out, true, nil
		},
	}
}
