package kmslocal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ServeHTTP serves the AWS JSON 1.1 protocol: X-Amz-Target TrentService.ACTION, a JSON
// body (blobs in base64, which encoding/json does for []byte).
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, action, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, &Error{Code: "SerializationException", Message: err.Error(), Status: 400})
		return
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	res, err := s.call(action, body)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(res)
}

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
		k, err := s.SetState(in.KeyId, "PendingDeletion")
		if err != nil {
			return nil, err
		}
		return map[string]any{"KeyId": k.ARN, "KeyState": k.State, "DeletionDate": float64(k.DeletionAt.UnixMilli()) / 1000, "PendingWindowInDays": 30}, nil
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
	return nil, &Error{Code: "UnsupportedOperationException", Message: fmt.Sprintf("The action %s is not served by the local emulator (served: CreateKey, DescribeKey, ListKeys, EnableKey, DisableKey, ScheduleKeyDeletion, CancelKeyDeletion, GenerateMac, VerifyMac)", action), Status: 400}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func writeError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: "KMSInternalException", Message: err.Error(), Status: 500}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": e.Code, "message": e.Message})
}
