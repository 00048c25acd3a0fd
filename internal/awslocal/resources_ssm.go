package awslocal

import (
	"context"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/ssmlocal"
)

func (p *Place) parameterProvider() cfnlocal.Provider {
	put := func(r cfnlocal.Resource, overwrite bool) error {
		typ := text(r.Props["Type"])
		if typ == "SecureString" {
			return fmt.Errorf("SecureString parameters cannot be created by CloudFormation: use String or StringList")
		}
		_, err := p.ssm.Put(ssmPut(r.PhysicalID, typ, r.Props, overwrite))
		return err
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			return r.PhysicalID, nil, put(r, false)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, old map[string]any) (map[string]any, error) {
			return nil, put(r, true)
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			if err := p.ssm.Delete(r.PhysicalID); err != nil && !strings.Contains(err.Error(), "ParameterNotFound") {
				return err
			}
			return nil
		},
		Read: func(_ context.Context, r cfnlocal.Resource) (map[string]any, bool, error) {
			v, err := p.ssm.Get(r.PhysicalID, false)
			if err != nil {
				return nil, false, nil
			}
			out := map[string]any{"Name": v.Name, "Type": v.Type, "Value": v.Value}
			if d, ok := p.ssm.Description(r.PhysicalID); ok {
				out["Description"] = d
			}
			return out, true, nil
		},
	}
}

// ssmPut builds PutParameter's request from an AWS::SSM::Parameter's properties.
func ssmPut(name, typ string, props map[string]any, overwrite bool) ssmlocal.PutInput {
	in := ssmlocal.PutInput{Name: name, Type: typ, Value: text(props["Value"]), Description: text(props["Description"]),
		AllowedPattern: text(props["AllowedPattern"]), DataType: text(props["DataType"]), Tier: text(props["Tier"]), Overwrite: overwrite}
	if !overwrite {
		tags := map[string]string{}
		for k, v := range object(props["Tags"]) {
			tags[k] = text(v)
		}
		if len(tags) > 0 {
			in.Tags = tags
		}
	}
	return in
}
