package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// resources reads the Resources section of a parsed template's root mapping (short-form
// intrinsics already in long form, as template.Parse leaves them): each resource's type,
// DeletionPolicy, UpdateReplacePolicy and properties as plain JSON values. ok is false
// when the section cannot be read so (policies then see the plan's list only).
func resources(root *yaml.Node) (out []Resource, ok bool) {
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, false
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "Resources" {
			continue
		}
		var decoded map[string]struct {
			Type                string `yaml:"Type"`
			DeletionPolicy      any    `yaml:"DeletionPolicy"`
			UpdateReplacePolicy any    `yaml:"UpdateReplacePolicy"`
			Properties          any    `yaml:"Properties"`
		}
		if err := root.Content[i+1].Decode(&decoded); err != nil {
			return nil, false
		}
		for id, r := range decoded {
			res := Resource{LogicalID: id, Type: r.Type, DeletionPolicy: policyName(r.DeletionPolicy),
				UpdateReplacePolicy: policyName(r.UpdateReplacePolicy)}
			if p, err := plainJSON(r.Properties); err == nil {
				res.Properties, _ = p.(map[string]any)
			}
			out = append(out, res)
		}
		sortResources(out)
		return out, true
	}
	return nil, true
}

// policyName is a DeletionPolicy as written: a name, or (an intrinsic choosing one) its
// JSON.
func policyName(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// plainJSON turns what yaml.v3 decodes into values encoding/json reads back the same way
// (map[string]any keys, numbers as float64).
func plainJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

func sortResources(rs []Resource) {
	slices.SortFunc(rs, func(a, b Resource) int { return strings.Compare(a.LogicalID, b.LogicalID) })
}
