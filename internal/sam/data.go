package sam

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"io"
	"sync"
)

// translator.json.gz is data of AWS's SAM translator (aws-sam-translator, Apache License
// 2.0): its policy templates, the AWS managed policies it knows by name and its connector
// profiles, reshaped by gendata.py (`make sam-data`); compressed, it is 18 KB of the
// deployer's binary rather than 136 (`zcat` shows it).
//
//go:embed translator.json.gz
var translatorGz []byte

// translatorJSON is translator.json.gz decompressed.
func translatorJSON() []byte {
	r, err := gzip.NewReader(bytes.NewReader(translatorGz))
	if err == nil {
		var b []byte
		if b, err = io.ReadAll(r); err == nil {
			return b
		}
	}
	panic("sam: translator.json.gz does not decompress: " + err.Error())
}

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
	Properties      map[string]resourceProperties `json:"resourceProperties"`
}) {
	if err := json.Unmarshal(translatorJSON(), &d); err != nil {
		panic("sam: translator.json does not decode: " + err.Error())
	}
	return d
})

// resourceProperties are the properties the translator takes for a Serverless type: for
// each, the kinds of value it accepts (K: s string, i integer, f float, b boolean, m
// mapping, l list) and whether it takes an intrinsic function unjudged (X). Closed: the
// translator refuses any other property.
type resourceProperties struct {
	Properties map[string]struct {
		K string `json:"k"`
		X bool   `json:"x"`
	} `json:"properties"`
	Closed bool `json:"closed"`
}
