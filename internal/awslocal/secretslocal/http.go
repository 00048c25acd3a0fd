package secretslocal

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/awsjson"
)

// Time is a date as Secrets Manager's JSON carries it: seconds since the epoch.
type Time time.Time

// MarshalJSON writes seconds since the epoch, with milliseconds.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(float64(time.Time(t).UnixMilli())/1000, 'f', -1, 64)), nil
}

func pageToken(next int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(next)))
}

func pageStart(token string, n int) (int, error) {
	if token == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	start, convErr := strconv.Atoi(string(b))
	if err != nil || convErr != nil || start < 0 || start > n {
		return 0, &Error{"InvalidNextTokenException", "The NextToken value is invalid: pass the NextToken of the previous answer."}
	}
	return start, nil
}

// protocol is how the service speaks AWS JSON 1.1 (X-Amz-Target secretsmanager.ACTION).
var protocol = awsjson.Protocol{Internal: "InternalServiceError", MessageKey: "Message"}

// ServeHTTP serves the AWS JSON 1.1 protocol: X-Amz-Target secretsmanager.ACTION, a JSON body.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) { protocol.Serve(w, r, s.call) }

func (s *Service) call(action string, body []byte) (any, error) {
	type id struct{ SecretId string }
	switch action {
	case "CreateSecret":
		return decoded(action, body, s.Create)
	case "PutSecretValue":
		return decoded(action, body, s.Put)
	case "GetSecretValue":
		return decoded(action, body, s.Get)
	case "BatchGetSecretValue":
		return decoded(action, body, func(in struct {
			SecretIdList []string
			Filters      []Filter
		}) (any, error) {
			return s.batchGet(in.SecretIdList, in.Filters)
		})
	case "UpdateSecret":
		return decoded(action, body, s.Update)
	case "DescribeSecret":
		return decoded(action, body, func(in id) (*Description, error) { return s.Describe(in.SecretId) })
	case "DeleteSecret":
		return decoded(action, body, s.Delete)
	case "RestoreSecret":
		return decoded(action, body, func(in id) (*RestoreOutput, error) { return s.Restore(in.SecretId) })
	case "ListSecrets":
		return decoded(action, body, s.List)
	case "ListSecretVersionIds":
		return decoded(action, body, func(in struct {
			SecretId          string
			IncludeDeprecated bool
			MaxResults        int
			NextToken         string
		}) (*VersionsOutput, error) {
			return s.Versions(in.SecretId, in.IncludeDeprecated, in.MaxResults, in.NextToken)
		})
	case "UpdateSecretVersionStage":
		return decoded(action, body, func(in struct{ SecretId, VersionStage, MoveToVersionId, RemoveFromVersionId string }) (*RestoreOutput, error) {
			return s.MoveStage(in.SecretId, in.VersionStage, in.MoveToVersionId, in.RemoveFromVersionId)
		})
	case "TagResource", "UntagResource":
		return decoded(action, body, func(in struct {
			SecretId string
			Tags     []Tag
			TagKeys  []string
		}) (any, error) {
			return struct{}{}, s.Tag(in.SecretId, in.Tags, in.TagKeys)
		})
	case "PutResourcePolicy", "DeleteResourcePolicy":
		return decoded(action, body, func(in struct{ SecretId, ResourcePolicy string }) (*RestoreOutput, error) {
			if action == "PutResourcePolicy" && !json.Valid([]byte(in.ResourcePolicy)) {
				return nil, &Error{"MalformedPolicyDocumentException", "The resource policy has syntax errors: it is not a JSON document."}
			}
			return s.SetPolicy(in.SecretId, in.ResourcePolicy)
		})
	case "GetResourcePolicy":
		return decoded(action, body, func(in id) (any, error) {
			arn, name, policy, err := s.Policy(in.SecretId)
			if err != nil {
				return nil, err
			}
			out := map[string]string{"ARN": arn, "Name": name}
			if policy != "" {
				out["ResourcePolicy"] = policy
			}
			return out, nil
		})
	case "GetRandomPassword":
		return decoded(action, body, func(in PasswordInput) (any, error) {
			p, err := Password(in)
			if err != nil {
				return nil, err
			}
			return map[string]string{"RandomPassword": p}, nil
		})
	case "RotateSecret", "CancelRotateSecret":
		return nil, invalidRequest("%s is not emulated: the local emulator does not run rotation functions (put a new version with PutSecretValue instead).", action)
	}
	return nil, &Error{"InvalidAction", "The action " + action + " is not valid for this endpoint (the local emulator serves CreateSecret, GetSecretValue, BatchGetSecretValue, PutSecretValue, UpdateSecret, DescribeSecret, DeleteSecret, RestoreSecret, ListSecrets, ListSecretVersionIds, UpdateSecretVersionStage, TagResource, UntagResource, Put/Get/DeleteResourcePolicy and GetRandomPassword)"}
}

// decoded reads the JSON body of a request for action into a T, and serves it with f.
func decoded[T, R any](action string, body []byte, f func(T) (R, error)) (any, error) {
	var in T
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &Error{"SerializationException", "could not read the " + action + " request: " + err.Error()}
	}
	return f(in)
}

// batchGet is BatchGetSecretValue: the current values of the secrets listed (at most 20),
// or of those the filters match; a secret that cannot be read is an error of its own.
func (s *Service) batchGet(ids []string, filters []Filter) (any, error) {
	if len(ids) > 0 && len(filters) > 0 {
		return nil, invalidParameter("Either 'SecretIdList' or 'Filters' must be provided, but not both.")
	}
	if len(ids) > 20 {
		return nil, invalidParameter("SecretIdList can hold at most 20 secrets.")
	}
	if len(filters) > 0 {
		list, err := s.List(ListInput{Filters: filters, SortOrder: "asc"})
		if err != nil {
			return nil, err
		}
		for _, d := range list.SecretList {
			ids = append(ids, d.ARN)
		}
	}
	type apiError struct{ SecretId, ErrorCode, Message string }
	out := struct {
		SecretValues []*GetOutput
		Errors       []apiError
	}{SecretValues: []*GetOutput{}, Errors: []apiError{}}
	for _, id := range ids {
		v, err := s.Get(GetInput{SecretId: id})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				return nil, err
			}
			out.Errors = append(out.Errors, apiError{id, e.Code, e.Message})
			continue
		}
		out.SecretValues = append(out.SecretValues, v)
	}
	return out, nil
}

// Actions lists the actions this emulator serves, sorted (RotateSecret and
// CancelRotateSecret are answered, refused: no rotation function runs).
func Actions() []string {
	return []string{"BatchGetSecretValue", "CreateSecret", "DeleteResourcePolicy", "DeleteSecret", "DescribeSecret", "GetRandomPassword",
		"GetResourcePolicy", "GetSecretValue", "ListSecretVersionIds", "ListSecrets", "PutResourcePolicy", "PutSecretValue", "RestoreSecret",
		"TagResource", "UntagResource", "UpdateSecret", "UpdateSecretVersionStage"}
}
