package ssmlocal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/awsjson"
)

// protocol is how the service speaks AWS JSON 1.1 (X-Amz-Target AmazonSSM.ACTION).
var protocol = awsjson.Protocol{Internal: "InternalServerError"}

// ServeHTTP serves the AWS JSON 1.1 protocol: X-Amz-Target AmazonSSM.ACTION, a JSON body.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) { protocol.Serve(w, r, s.call) }

func (s *Service) call(action string, body []byte) (any, error) {
	decode := func(v any) error {
		if err := json.Unmarshal(body, v); err != nil {
			return &Error{Code: "SerializationException", Message: "could not read the request: " + err.Error(), Status: 400}
		}
		return nil
	}
	switch action {
	case "PutParameter":
		var in struct {
			Name, Value, Type, Description, KeyId, AllowedPattern, DataType, Tier string
			Overwrite                                                             bool
			Tags                                                                  []struct{ Key, Value string }
		}
		if err := decode(&in); err != nil {
			return nil, err
		}
		tags := map[string]string{}
		for _, t := range in.Tags {
			tags[t.Key] = t.Value
		}
		if len(tags) == 0 {
			tags = nil
		}
		v, err := s.Put(PutInput{Name: in.Name, Value: in.Value, Type: in.Type, Description: in.Description, KeyID: in.KeyId,
			AllowedPattern: in.AllowedPattern, DataType: in.DataType, Tier: in.Tier, Overwrite: in.Overwrite, Tags: tags})
		if err != nil {
			return nil, err
		}
		return map[string]any{"Version": v, "Tier": "Standard"}, nil
	case "GetParameter":
		var in struct {
			Name           string
			WithDecryption bool
		}
		if err := decode(&in); err != nil {
			return nil, err
		}
		p, err := s.Get(in.Name, in.WithDecryption)
		if err != nil {
			return nil, err
		}
		return map[string]any{"Parameter": p}, nil
	case "GetParameters":
		var in struct {
			Names          []string
			WithDecryption bool
		}
		if err := decode(&in); err != nil {
			return nil, err
		}
		found, invalid, err := s.GetMany(in.Names, in.WithDecryption)
		if err != nil {
			return nil, err
		}
		return map[string]any{"Parameters": orEmpty(found), "InvalidParameters": orEmpty(invalid)}, nil
	case "GetParametersByPath":
		var in struct {
			Path                      string
			Recursive, WithDecryption bool
			MaxResults                int
			NextToken                 string
		}
		if err := decode(&in); err != nil {
			return nil, err
		}
		ps, next, err := s.ByPath(in.Path, in.Recursive, in.WithDecryption, in.MaxResults, in.NextToken)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"Parameters": orEmpty(ps)}
		if next != "" {
			out["NextToken"] = next
		}
		return out, nil
	case "GetParameterHistory":
		var in struct {
			Name           string
			WithDecryption bool
			MaxResults     int
			NextToken      string
		}
		if err := decode(&in); err != nil {
			return nil, err
		}
		hs, next, err := s.History(in.Name, in.WithDecryption, in.MaxResults, in.NextToken)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"Parameters": orEmpty(hs)}
		if next != "" {
			out["NextToken"] = next
		}
		return out, nil
	case "DeleteParameter":
		var in struct{ Name string }
		if err := decode(&in); err != nil {
			return nil, err
		}
		return struct{}{}, s.Delete(in.Name)
	}
	return s.callBatch(action, decode)
}

// callBatch serves DeleteParameters and the label actions.
func (s *Service) callBatch(action string, decode func(any) error) (any, error) {
	switch action {
	case "DeleteParameters":
		var in struct{ Names []string }
		if err := decode(&in); err != nil {
			return nil, err
		}
		deleted, invalid, err := s.DeleteMany(in.Names)
		if err != nil {
			return nil, err
		}
		return map[string]any{"DeletedParameters": orEmpty(deleted), "InvalidParameters": orEmpty(invalid)}, nil
	case "LabelParameterVersion", "UnlabelParameterVersion":
		var in struct {
			Name             string
			ParameterVersion int64
			Labels           []string
		}
		if err := decode(&in); err != nil {
			return nil, err
		}
		if action == "UnlabelParameterVersion" {
			removed, invalid, err := s.UnlabelVersion(in.Name, in.ParameterVersion, in.Labels)
			if err != nil {
				return nil, err
			}
			return map[string]any{"RemovedLabels": orEmpty(removed), "InvalidLabels": orEmpty(invalid)}, nil
		}
		invalid, version, err := s.LabelVersion(in.Name, in.ParameterVersion, in.Labels)
		if err != nil {
			return nil, err
		}
		return map[string]any{"InvalidLabels": orEmpty(invalid), "ParameterVersion": version}, nil
	}
	return nil, &Error{Code: "InvalidAction", Message: fmt.Sprintf("The action %s is not valid for this endpoint (the local emulator serves %s)", action, strings.Join(Actions(), ", ")), Status: 400}
}

// Actions lists the actions this emulator serves, sorted.
func Actions() []string {
	return []string{"DeleteParameter", "DeleteParameters", "GetParameter", "GetParameterHistory", "GetParameters", "GetParametersByPath",
		"LabelParameterVersion", "PutParameter", "UnlabelParameterVersion"}
}

func orEmpty[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}
