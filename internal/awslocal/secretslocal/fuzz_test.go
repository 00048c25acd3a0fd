package secretslocal_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/awslocal/secretslocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

// FuzzRequest feeds arbitrary JSON bodies to every action after a secret exists: a bad
// request must get an error in Secrets Manager's shape, never a panic (which would take the
// emulator down), and every answer must be JSON.
func FuzzRequest(f *testing.F) {
	f.Add("PutSecretValue", `{"SecretId":"s","SecretString":"v","VersionStages":["AWSPENDING"],"ClientRequestToken":"0123456789abcdef0123456789abcdef"}`)
	f.Add("GetSecretValue", `{"SecretId":"arn:aws:secretsmanager:us-east-1:000000000000:secret:s","VersionStage":"AWSPREVIOUS"}`)
	f.Add("UpdateSecretVersionStage", `{"SecretId":"s","VersionStage":"AWSCURRENT","MoveToVersionId":"x","RemoveFromVersionId":""}`)
	f.Add("DeleteSecret", `{"SecretId":"s","RecoveryWindowInDays":7,"ForceDeleteWithoutRecovery":false}`)
	f.Add("ListSecrets", `{"Filters":[{"Key":"name","Values":["!s"]}],"MaxResults":1,"NextToken":"MQ"}`)
	f.Add("GetRandomPassword", `{"PasswordLength":5,"ExcludeCharacters":"abc","RequireEachIncludedType":true,"IncludeSpace":true}`)
	f.Add("BatchGetSecretValue", `{"SecretIdList":["s","t"]}`)
	f.Fuzz(func(t *testing.T, action, body string) {
		s, err := secretslocal.New(secretslocal.Options{Clock: clock.NewFake(epoch)})
		if err != nil {
			t.Fatal(err)
		}
		call := func(action, body string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			req.Header.Set("X-Amz-Target", "secretsmanager."+action)
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			return rec
		}
		if rec := call("CreateSecret", `{"Name":"s","SecretString":"{\"k\":1}"}`); rec.Code != http.StatusOK {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		rec := call(action, body)
		var doc map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatalf("%s answered %d with a body that is not JSON: %q", action, rec.Code, rec.Body)
		}
		if rec.Code != http.StatusOK && doc["__type"] == nil {
			t.Fatalf("%s answered %d without an error type: %s", action, rec.Code, rec.Body)
		}
	})
}
