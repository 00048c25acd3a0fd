package sam

import (
	_ "embed"
	"encoding/json"
	"sync"
)

// translator.json is data of AWS's SAM translator (aws-sam-translator, Apache License 2.0):
// its policy templates, the AWS managed policies it knows by name and its connector
// profiles, reshaped by
// gendata.py (`make sam-data`).
//
//go:embed translator.json
var translatorJSON []byte

// policyTemplateData is one SAM policy template: the names of its parameters and the
// policy document, where {"Ref": parameter} stands for a parameter's value.
type policyTemplateData struct {
	Parameters []string       `json:"parameters"`
	Definition map[string]any `json:"definition"`
}

var data = sync.OnceValue(func() (d struct {
	PolicyTemplates map[string]policyTemplateData `json:"policyTemplates"`
	ManagedPolicies map[string]string             `json:"managedPolicies"`
	Connectors      connectorData                 `json:"connectorProfiles"`
}) {
	if err := json.Unmarshal(translatorJSON, &d); err != nil {
		panic("sam: translator.json does not decode: " + err.Error())
	}
	return d
})
