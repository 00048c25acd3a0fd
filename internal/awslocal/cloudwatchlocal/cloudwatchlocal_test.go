package cloudwatchlocal_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awslocal/cloudwatchlocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

var epoch = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

type changes struct {
	mu  sync.Mutex
	got []string
}

func (c *changes) record(arn, state string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, arn+" "+state)
}

func (c *changes) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

// serve starts a Service behind an HTTP server and returns it with a Go SDK client.
func serve(t *testing.T, dir string) (*cloudwatchlocal.Service, *cloudwatch.Client, *changes, *clock.Fake, string) {
	t.Helper()
	clk := clock.NewFake(epoch)
	ch := &changes{}
	s, err := cloudwatchlocal.New(cloudwatchlocal.Options{Clock: clk, Dir: dir, OnStateChange: ch.record})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() {
		srv.Close()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	c := cloudwatch.New(cloudwatch.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	return s, c, ch, clk, srv.URL
}

func latency(name string) *cloudwatch.PutMetricAlarmInput {
	return &cloudwatch.PutMetricAlarmInput{
		AlarmName: aws.String(name), AlarmDescription: aws.String("p99 latency of the shop"),
		MetricName: aws.String("Latency"), Namespace: aws.String("Shop"), Statistic: types.StatisticAverage,
		Dimensions: []types.Dimension{{Name: aws.String("Service"), Value: aws.String("checkout")}},
		Period:     aws.Int32(60), EvaluationPeriods: aws.Int32(3), DatapointsToAlarm: aws.Int32(2), Threshold: aws.Float64(0.25),
		ComparisonOperator: types.ComparisonOperatorGreaterThanThreshold, TreatMissingData: aws.String("notBreaching"),
		AlarmActions: []string{"arn:aws:sns:us-east-1:000000000000:pager"},
		Tags:         []types.Tag{{Key: aws.String("team"), Value: aws.String("checkout")}},
	}
}

func describe(t *testing.T, c *cloudwatch.Client, name string) types.MetricAlarm {
	t.Helper()
	out, err := c.DescribeAlarms(context.Background(), &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{name}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.MetricAlarms) != 1 {
		t.Fatalf("DescribeAlarms %s: %d alarms", name, len(out.MetricAlarms))
	}
	return out.MetricAlarms[0]
}

// TestAlarmLifeCycleThroughTheSDK: the Go SDK (RPC v2 CBOR) creates, reads, sets and
// deletes an alarm; a new alarm is INSUFFICIENT_DATA; SetAlarmState holds and is told;
// an update keeps the state and the tags.
func TestAlarmLifeCycleThroughTheSDK(t *testing.T) {
	s, c, ch, clk, _ := serve(t, "")
	ctx := context.Background()
	if _, err := c.PutMetricAlarm(ctx, latency("shop-latency")); err != nil {
		t.Fatal(err)
	}
	a := describe(t, c, "shop-latency")
	arn := "arn:aws:cloudwatch:us-east-1:000000000000:alarm:shop-latency"
	if aws.ToString(a.AlarmArn) != arn || a.StateValue != types.StateValueInsufficientData ||
		aws.ToString(a.StateReason) != "Unchecked: Initial alarm creation" || !a.StateUpdatedTimestamp.Equal(epoch) ||
		aws.ToFloat64(a.Threshold) != 0.25 || aws.ToInt32(a.Period) != 60 || aws.ToInt32(a.DatapointsToAlarm) != 2 ||
		len(a.Dimensions) != 1 || aws.ToString(a.Dimensions[0].Value) != "checkout" || !aws.ToBool(a.ActionsEnabled) ||
		a.ComparisonOperator != types.ComparisonOperatorGreaterThanThreshold || len(a.AlarmActions) != 1 {
		t.Fatalf("new alarm: %+v", a)
	}

	clk.Advance(time.Minute)
	if _, err := c.SetAlarmState(ctx, &cloudwatch.SetAlarmStateInput{AlarmName: aws.String("shop-latency"),
		StateValue: types.StateValueAlarm, StateReason: aws.String("latency test"), StateReasonData: aws.String(`{"p99": 0.9}`)}); err != nil {
		t.Fatal(err)
	}
	a = describe(t, c, "shop-latency")
	if a.StateValue != types.StateValueAlarm || aws.ToString(a.StateReason) != "latency test" || aws.ToString(a.StateReasonData) != `{"p99": 0.9}` ||
		!a.StateUpdatedTimestamp.Equal(epoch.Add(time.Minute)) || !a.StateTransitionedTimestamp.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("after SetAlarmState: %+v", a)
	}
	if state, at, ok := s.State(arn); !ok || state != "ALARM" || !at.Equal(epoch.Add(time.Minute)) {
		t.Errorf("State(%s) = %s %v %v", arn, state, at, ok)
	}
	// Setting the same state again is no change.
	if _, err := c.SetAlarmState(ctx, &cloudwatch.SetAlarmStateInput{AlarmName: aws.String("shop-latency"),
		StateValue: types.StateValueAlarm, StateReason: aws.String("still")}); err != nil {
		t.Fatal(err)
	}
	if got := ch.list(); len(got) != 1 || got[0] != arn+" ALARM" {
		t.Errorf("state changes told: %v, want the one to ALARM", got)
	}

	in := latency("shop-latency")
	in.Threshold, in.Tags = aws.Float64(0.5), nil
	if _, err := c.PutMetricAlarm(ctx, in); err != nil {
		t.Fatal(err)
	}
	a = describe(t, c, "shop-latency")
	if a.StateValue != types.StateValueAlarm || aws.ToFloat64(a.Threshold) != 0.5 {
		t.Errorf("after an update: state %s threshold %v, want ALARM kept and 0.5", a.StateValue, aws.ToFloat64(a.Threshold))
	}
	if tags := s.Tags("shop-latency"); len(tags) != 1 || tags[0].Key != "team" {
		t.Errorf("tags after an update: %v, want the creation's", tags)
	}

	if _, err := c.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{"shop-latency", "never-was"}}); err != nil {
		t.Fatal(err)
	}
	out, err := c.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
	if err != nil || len(out.MetricAlarms) != 0 {
		t.Errorf("after DeleteAlarms: %v, %v", out, err)
	}
	if _, _, ok := s.State(arn); ok {
		t.Errorf("State of a deleted alarm: ok")
	}
}

// TestErrorsThroughTheSDK: refused requests come back as the SDK's typed errors with
// CloudWatch's codes.
func TestErrorsThroughTheSDK(t *testing.T) {
	_, c, _, _, _ := serve(t, "")
	ctx := context.Background()
	if _, err := c.PutMetricAlarm(ctx, latency("known")); err != nil {
		t.Fatal(err)
	}
	set := func(name, state, data string) error {
		in := &cloudwatch.SetAlarmStateInput{AlarmName: aws.String(name), StateValue: types.StateValue(state), StateReason: aws.String("test")}
		if data != "" {
			in.StateReasonData = aws.String(data)
		}
		_, err := c.SetAlarmState(ctx, in)
		return err
	}
	put := func(edit func(*cloudwatch.PutMetricAlarmInput)) error {
		in := latency("new")
		edit(in)
		_, err := c.PutMetricAlarm(ctx, in)
		return err
	}
	var notFound *types.ResourceNotFound
	var badFormat *types.InvalidFormatFault
	var missing *types.MissingRequiredParameterException
	var combination *types.InvalidParameterCombinationException
	var invalid *types.InvalidParameterValueException
	for _, tc := range []struct {
		name    string
		err     error
		as      any
		code    string
		message string
	}{
		{"set a missing alarm", set("nope", "ALARM", ""), &notFound, "ResourceNotFound", "Alarm nope not found"},
		{"reason data not JSON", set("known", "ALARM", "{not json"), &badFormat, "InvalidFormat", "Invalid JSON in StateReasonData: {not json"},
		{"unknown state", set("known", "BROKEN", ""), nil, "ValidationError", "Value 'BROKEN' at 'stateValue' failed to satisfy constraint: Member must satisfy enum value set: [OK, ALARM, INSUFFICIENT_DATA]"},
		{"no period", put(func(in *cloudwatch.PutMetricAlarmInput) { in.Period = nil }), &missing, "MissingParameter", "The parameter Period is required for an alarm on the metric Latency."},
		{"a period CloudWatch refuses", put(func(in *cloudwatch.PutMetricAlarmInput) { in.Period = aws.Int32(45) }), &invalid, "InvalidParameterValue", "The parameter Period must be 10, 20, 30 or a multiple of 60, got 45."},
		{"metric and metrics", put(func(in *cloudwatch.PutMetricAlarmInput) {
			in.Metrics = []types.MetricDataQuery{{Id: aws.String("m1"), Expression: aws.String("SUM(METRICS())")}}
		}), &combination, "InvalidParameterCombination", "MetricName and Metrics cannot both be specified"},
		{"two statistics", put(func(in *cloudwatch.PutMetricAlarmInput) { in.ExtendedStatistic = aws.String("p99") }), &combination, "InvalidParameterCombination", "Statistic and ExtendedStatistic cannot both be specified."},
		{"unknown operator", put(func(in *cloudwatch.PutMetricAlarmInput) { in.ComparisonOperator = "Bigger" }), nil, "ValidationError", "Value 'Bigger' at 'comparisonOperator' failed to satisfy constraint"},
		{"too many datapoints", put(func(in *cloudwatch.PutMetricAlarmInput) { in.DatapointsToAlarm = aws.Int32(4) }), &invalid, "InvalidParameterValue", "DatapointsToAlarm (4) must be between 1 and EvaluationPeriods (3)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var api smithy.APIError
			if !errors.As(tc.err, &api) {
				t.Fatalf("err = %v, want an API error", tc.err)
			}
			if api.ErrorCode() != tc.code || !strings.Contains(api.ErrorMessage(), tc.message) {
				t.Errorf("error %s: %q, want %s: %q", api.ErrorCode(), api.ErrorMessage(), tc.code, tc.message)
			}
			if tc.as != nil && !errors.As(tc.err, tc.as) {
				t.Errorf("error %T is not the SDK's %T", tc.err, tc.as)
			}
		})
	}
}

// TestDescribeAlarmsFilters pages through alarms by name and filters by prefix, state and
// action, as DescribeAlarms does.
func TestDescribeAlarmsFilters(t *testing.T) {
	_, c, _, _, _ := serve(t, "")
	ctx := context.Background()
	for _, n := range []string{"web-5xx", "web-latency", "db-cpu", "db-disk", "queue-depth"} {
		in := latency(n)
		if strings.HasPrefix(n, "db-") {
			in.AlarmActions = []string{"arn:aws:sns:us-east-1:000000000000:dba"}
		}
		if _, err := c.PutMetricAlarm(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.SetAlarmState(ctx, &cloudwatch.SetAlarmStateInput{AlarmName: aws.String("db-disk"), StateValue: types.StateValueAlarm, StateReason: aws.String("full")}); err != nil {
		t.Fatal(err)
	}
	var all []string
	p := cloudwatch.NewDescribeAlarmsPaginator(c, &cloudwatch.DescribeAlarmsInput{MaxRecords: aws.Int32(2)})
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, a := range out.MetricAlarms {
			all = append(all, aws.ToString(a.AlarmName))
		}
	}
	if strings.Join(all, ",") != "db-cpu,db-disk,queue-depth,web-5xx,web-latency" || pages != 3 {
		t.Errorf("paged: %v in %d pages", all, pages)
	}
	for _, tc := range []struct {
		name string
		in   cloudwatch.DescribeAlarmsInput
		want string
	}{
		{"prefix", cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String("web-")}, "web-5xx,web-latency"},
		{"state", cloudwatch.DescribeAlarmsInput{StateValue: types.StateValueAlarm}, "db-disk"},
		{"action", cloudwatch.DescribeAlarmsInput{ActionPrefix: aws.String("arn:aws:sns:us-east-1:000000000000:dba")}, "db-cpu,db-disk"},
		{"names", cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"queue-depth", "gone"}}, "queue-depth"},
		{"composite only", cloudwatch.DescribeAlarmsInput{AlarmTypes: []types.AlarmType{types.AlarmTypeCompositeAlarm}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.DescribeAlarms(ctx, &tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range out.MetricAlarms {
				got = append(got, aws.ToString(a.AlarmName))
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("got %v, want %s", got, tc.want)
			}
		})
	}
}

// TestAlarmsSurviveRestart: alarms and their states persist under Dir.
func TestAlarmsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := cloudwatchlocal.New(cloudwatchlocal.Options{Clock: clock.NewFake(epoch), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	in := cloudwatchlocal.MetricAlarmInput{AlarmName: "kept", MetricName: "Errors", Namespace: "Shop", Statistic: "Sum",
		Period: aws.Int32(300), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1), ComparisonOperator: "GreaterThanOrEqualToThreshold"}
	if err := s.PutMetricAlarm(in); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAlarmState("kept", "ALARM", "restart test", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again, c, _, _, _ := serve(t, dir)
	a := describe(t, c, "kept")
	if a.StateValue != types.StateValueAlarm || aws.ToInt32(a.Period) != 300 || !a.StateUpdatedTimestamp.Equal(epoch) {
		t.Errorf("after a restart: %+v", a)
	}
	if _, ok := again.Describe("kept"); !ok {
		t.Error("Describe after a restart: not found")
	}
}

// TestJSONProtocolAsTheAWSCLISendsIt: the requests of the AWS CLI v1 (AWS JSON 1.0 with
// query compatibility) get JSON answers and errors with the query error header.
func TestJSONProtocolAsTheAWSCLISendsIt(t *testing.T) {
	_, _, _, _, base := serve(t, "")
	call := func(action, body string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(body))
		req.Header.Set("X-Amz-Target", "GraniteServiceVersion20100801."+action)
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("x-amzn-query-mode", "true")
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		b, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: answer %q is not JSON: %v", action, b, err)
		}
		return res, out
	}
	res, _ := call("PutMetricAlarm", `{"AlarmName": "cli", "MetricName": "Errors", "Namespace": "Shop", "Statistic": "Sum", "Period": 60, "EvaluationPeriods": 1, "Threshold": 1.0, "ComparisonOperator": "GreaterThanOrEqualToThreshold"}`)
	if res.StatusCode != 200 {
		t.Fatalf("PutMetricAlarm: %s", res.Status)
	}
	if res, _ := call("SetAlarmState", `{"AlarmName": "cli", "StateValue": "ALARM", "StateReason": "from the CLI"}`); res.StatusCode != 200 {
		t.Fatalf("SetAlarmState: %s", res.Status)
	}
	_, out := call("DescribeAlarms", `{"AlarmNames": ["cli"]}`)
	alarms, _ := out["MetricAlarms"].([]any)
	if len(alarms) != 1 {
		t.Fatalf("DescribeAlarms: %v", out)
	}
	a := alarms[0].(map[string]any)
	if a["StateValue"] != "ALARM" || a["StateReason"] != "from the CLI" || a["StateUpdatedTimestamp"] != float64(epoch.Unix()) {
		t.Errorf("alarm %v", a)
	}
	res, out = call("SetAlarmState", `{"AlarmName": "gone", "StateValue": "OK", "StateReason": "x"}`)
	if res.StatusCode != 404 || res.Header.Get("X-Amzn-Query-Error") != "ResourceNotFound;Sender" ||
		out["__type"] != "com.amazonaws.cloudwatch#ResourceNotFound" || out["message"] != "Alarm gone not found" {
		t.Errorf("missing alarm: %s %q %v", res.Status, res.Header.Get("X-Amzn-Query-Error"), out)
	}
	res, out = call("PutDashboard", `{}`)
	if res.StatusCode != 400 || !strings.Contains(out["message"].(string), "DeleteAlarms, DescribeAlarms, PutMetricAlarm, SetAlarmState") {
		t.Errorf("unserved operation: %s %v", res.Status, out)
	}
}

// TestQueryProtocol: form-encoded requests (the query protocol of older clients) get XML.
func TestQueryProtocol(t *testing.T) {
	_, c, _, _, base := serve(t, "")
	post := func(form url.Values) (*http.Response, []byte) {
		t.Helper()
		form.Set("Version", "2010-08-01")
		res, err := http.DefaultTransport.RoundTrip(mustRequest(t, base, form))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	res, b := post(url.Values{"Action": {"PutMetricAlarm"}, "AlarmName": {"query"}, "MetricName": {"Errors"}, "Namespace": {"Shop"},
		"Statistic": {"Sum"}, "Period": {"60"}, "EvaluationPeriods": {"2"}, "Threshold": {"3.5"}, "ComparisonOperator": {"GreaterThanThreshold"},
		"Dimensions.member.1.Name": {"Service"}, "Dimensions.member.1.Value": {"web"}, "ActionsEnabled": {"false"},
		"OKActions.member.1": {"arn:aws:sns:us-east-1:000000000000:ok"}})
	if res.StatusCode != 200 || !strings.Contains(string(b), "<PutMetricAlarmResponse") {
		t.Fatalf("PutMetricAlarm: %s %s", res.Status, b)
	}
	a := describe(t, c, "query")
	if aws.ToFloat64(a.Threshold) != 3.5 || aws.ToInt32(a.EvaluationPeriods) != 2 || aws.ToBool(a.ActionsEnabled) ||
		len(a.Dimensions) != 1 || aws.ToString(a.Dimensions[0].Name) != "Service" || len(a.OKActions) != 1 {
		t.Errorf("alarm made through the query protocol: %+v", a)
	}
	res, b = post(url.Values{"Action": {"DescribeAlarms"}, "AlarmNames.member.1": {"query"}})
	var out struct {
		Alarms []struct {
			AlarmName, StateValue, StateUpdatedTimestamp string
			Dimensions                                   []struct{ Name, Value string } `xml:"Dimensions>member"`
		} `xml:"DescribeAlarmsResult>MetricAlarms>member"`
	}
	if err := xml.Unmarshal(b, &out); err != nil || res.StatusCode != 200 {
		t.Fatalf("DescribeAlarms: %s %s (%v)", res.Status, b, err)
	}
	if len(out.Alarms) != 1 || out.Alarms[0].StateValue != "INSUFFICIENT_DATA" || out.Alarms[0].StateUpdatedTimestamp != "2026-11-30T08:00:00.000Z" ||
		len(out.Alarms[0].Dimensions) != 1 || out.Alarms[0].Dimensions[0].Value != "web" {
		t.Errorf("DescribeAlarms: %s", b)
	}
	res, b = post(url.Values{"Action": {"SetAlarmState"}, "AlarmName": {"gone"}, "StateValue": {"OK"}, "StateReason": {"x"}})
	if res.StatusCode != 404 || !strings.Contains(string(b), "<Code>ResourceNotFound</Code>") {
		t.Errorf("missing alarm: %s %s", res.Status, b)
	}
	res, b = post(url.Values{"Action": {"PutMetricAlarm"}, "AlarmName": {"bad"}, "Period": {"sixty"}})
	if res.StatusCode != 400 || !strings.Contains(string(b), "<Code>InvalidParameterValue</Code>") || !strings.Contains(string(b), "Period") {
		t.Errorf("a period that is no number: %s %s", res.Status, b)
	}
}

func mustRequest(t *testing.T, base string, form url.Values) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	return req
}
