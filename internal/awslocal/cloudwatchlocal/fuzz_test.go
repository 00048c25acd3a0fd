package cloudwatchlocal_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/cairn-dev/cairn/internal/awslocal/cloudwatchlocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

// FuzzRequest feeds arbitrary bodies in each protocol to every operation: a bad request
// must get an error answer, never a panic (which would take the emulator down) nor a
// success answer without a body the protocol can read.
func FuzzRequest(f *testing.F) {
	put, _ := cbor.Marshal(map[string]any{"AlarmName": "a", "MetricName": "m", "Statistic": "Sum", "Period": 60,
		"EvaluationPeriods": 1, "Threshold": 1.5, "ComparisonOperator": "GreaterThanThreshold", "Dimensions": []any{map[string]any{"Name": "n", "Value": "v"}}})
	f.Add("cbor", "PutMetricAlarm", string(put))
	f.Add("json", "SetAlarmState", `{"AlarmName": "a", "StateValue": "ALARM", "StateReason": "r", "StateReasonData": "{}"}`)
	f.Add("json", "DescribeAlarms", `{"MaxRecords": 0, "NextToken": "zz"}`)
	f.Add("query", "PutMetricAlarm", "AlarmName=a&Metrics.member.1.Id=m&Metrics.member.1.MetricStat.Period=x&Tags.member.1.Key=k")
	f.Add("query", "DeleteAlarms", "AlarmNames.member.1=a&AlarmNames.member.3=c")
	f.Fuzz(func(t *testing.T, proto, action, body string) {
		s, err := cloudwatchlocal.New(cloudwatchlocal.Options{Clock: clock.NewFake(epoch)})
		if err != nil {
			t.Fatal(err)
		}
		var req *http.Request
		switch proto {
		case "cbor":
			req = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			req.URL.Path = "/service/GraniteServiceVersion20100801/operation/" + action
			req.Header.Set("Smithy-Protocol", "rpc-v2-cbor")
		case "json":
			req = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			req.Header.Set("X-Amz-Target", "GraniteServiceVersion20100801."+action)
		default:
			req = httptest.NewRequest(http.MethodPost, "/", strings.NewReader("Action="+action+"&"+body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code == 0 || rec.Header().Get("x-amzn-RequestId") == "" {
			t.Fatalf("answer %d without a request id", rec.Code)
		}
	})
}
