package kmslocal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/cairn-dev/cairn/internal/awslocal/awsjson"
)

// protocol is how the service speaks AWS JSON 1.1 (X-Amz-Target TrentService.ACTION).
var protocol = awsjson.Protocol{Internal: "KMSInternalException"}

// ServeHTTP serves the AWS JSON 1.1 protocol: X-Amz-Target TrentService.ACTION, a JSON body.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) { protocol.Serve(w, r, s.call) }

// metadata is a key as DescribeKey and CreateKey answer it.
func metadata(k Key, account string) map[string]any {
	m := map[string]any{"KeyId": k.ID, "Arn": k.ARN, "AWSAccountId": account, "KeySpec": k.Spec, "CustomerMasterKeySpec": k.Spec,
		"KeyUsage": k.Usage, "KeyState": k.State, "Enabled": k.State == "Enabled", "Description": k.Description,
		"CreationDate": float64(k.Created.UnixMilli()) / 1000, "KeyManager": "CUSTOMER", "Origin": "AWS_KMS", "MultiRegion": false}
	if alg, ok := macSpecs[k.Spec]; ok {
		m["MacAlgorithms"] = []string{alg.alg}
	} else {
		m["EncryptionAlgorithms"] = []string{"SYMMETRIC_DEFAULT"}
	}
	if !k.DeletionAt.IsZero() {
		m["DeletionDate"] = float64(k.DeletionAt.UnixMilli()) / 1000
	}
	return m
}

func (s *Service) call(action string, body []byte) (any, error) {
	decode := func(v any) error {
		if err := json.Unmarshal(body, v); err != nil {
			return &Error{Code: "SerializationException", Message: "could not read the request: " + err.Error(), Status: 400}
		}
		return nil
	}
	var in struct {
		KeyId, KeySpec, KeyUsage, Description, Policy, MacAlgorithm, CustomerMasterKeySpec string
		Message, Mac                                                                       []byte
	}
	if err := decode(&in); err != nil {
		return nil, err
	}
	switch action {
	case "CreateKey":
		k, err := s.Create(CreateInput{KeySpec: cmpOr(in.KeySpec, in.CustomerMasterKeySpec), KeyUsage: in.KeyUsage, Description: in.Description, Policy: in.Policy})
		if err != nil {
			return nil, err
		}
		return map[string]any{"KeyMetadata": metadata(k, s.opts.AccountID)}, nil
	case "DescribeKey":
		k, err := s.Describe(in.KeyId)
		if err != nil {
			return nil, err
		}
		return map[string]any{"KeyMetadata": metadata(k, s.opts.AccountID)}, nil
	case "ListKeys":
		keys := []map[string]string{}
		for _, k := range s.List() {
			keys = append(keys, map[string]string{"KeyId": k.ID, "KeyArn": k.ARN})
		}
		return map[string]any{"Keys": keys, "Truncated": false}, nil
	case "EnableKey", "DisableKey", "CancelKeyDeletion":
		state := map[string]string{"EnableKey": "Enabled", "DisableKey": "Disabled", "CancelKeyDeletion": "Cancel"}[action]
		k, err := s.SetState(in.KeyId, state)
		if err != nil {
			return nil, err
		}
		if action == "CancelKeyDeletion" {
			return map[string]any{"KeyId": k.ARN}, nil
		}
		return struct{}{}, nil
	case "ScheduleKeyDeletion":
		var w struct{ PendingWindowInDays *int }
		if err := decode(&w); err != nil {
			return nil, err
		}
		k, days, err := s.ScheduleDeletion(in.KeyId, w.PendingWindowInDays)
		if err != nil {
			return nil, err
		}
		return map[string]any{"KeyId": k.ARN, "KeyState": k.State, "DeletionDate": float64(k.DeletionAt.UnixMilli()) / 1000, "PendingWindowInDays": days}, nil
	case "GenerateMac":
		mac, arn, err := s.GenerateMac(in.KeyId, in.MacAlgorithm, in.Message)
		if err != nil {
			return nil, err
		}
		return map[string]any{"KeyId": arn, "Mac": mac, "MacAlgorithm": in.MacAlgorithm}, nil
	case "VerifyMac":
		arn, err := s.VerifyMac(in.KeyId, in.MacAlgorithm, in.Message, in.Mac)
		if err != nil {
			return nil, err
		}
		return map[string]any{"KeyId": arn, "MacValid": true, "MacAlgorithm": in.MacAlgorithm}, nil
	}
	return s.callMore(action, decode)
}

// callMore serves Encrypt, Decrypt and the alias actions.
func (s *Service) callMore(action string, decode func(any) error) (any, error) {
	var in struct {
		KeyId, AliasName, TargetKeyId string
		Plaintext, CiphertextBlob     []byte
		EncryptionContext             map[string]string
	}
	if err := decode(&in); err != nil {
		return nil, err
	}
	switch action {
	case "Encrypt":
		blob, arn, err := s.Encrypt(in.KeyId, in.Plaintext, in.EncryptionContext)
		if err != nil {
			return nil, err
		}
		return map[string]any{"CiphertextBlob": blob, "KeyId": arn, "EncryptionAlgorithm": "SYMMETRIC_DEFAULT"}, nil
	case "Decrypt":
		plain, arn, err := s.Decrypt(in.CiphertextBlob, in.KeyId, in.EncryptionContext)
		if err != nil {
			return nil, err
		}
		return map[string]any{"Plaintext": plain, "KeyId": arn, "EncryptionAlgorithm": "SYMMETRIC_DEFAULT"}, nil
	case "CreateAlias":
		return struct{}{}, s.CreateAlias(in.AliasName, in.TargetKeyId)
	case "DeleteAlias":
		return struct{}{}, s.DeleteAlias(in.AliasName)
	case "ListAliases":
		list, err := s.ListAliases(in.KeyId)
		if err != nil {
			return nil, err
		}
		return map[string]any{"Aliases": list, "Truncated": false}, nil
	}
	return nil, &Error{Code: "UnsupportedOperationException", Message: fmt.Sprintf("The action %s is not served by the local emulator (served: %s)", action, strings.Join(Actions(), ", ")), Status: 400}
}

// Actions lists the actions this emulator serves, sorted.
func Actions() []string {
	return []string{"CancelKeyDeletion", "CreateAlias", "CreateKey", "Decrypt", "DeleteAlias", "DescribeKey", "DisableKey", "EnableKey",
		"Encrypt", "GenerateMac", "ListAliases", "ListKeys", "ScheduleKeyDeletion", "VerifyMac"}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
