// Package cloudwatchlocal emulates the metric alarms of Amazon CloudWatch for cairn's local
// mode: PutMetricAlarm, DescribeAlarms, SetAlarmState and DeleteAlarms, in the three
// protocols clients speak to CloudWatch (Smithy RPC v2 CBOR, the Go SDK's; AWS JSON 1.0,
// the AWS CLI v1's; and the older query protocol).
//
// It exists for CloudFormation's rollback triggers: the emulator's CloudFormation asks it
// for the state of the alarms a stack operation watches, and SetAlarmState is how a test
// or a user breaks a deployment on purpose. No metric is stored or evaluated, so an alarm
// stays in the state it was last set to (INSUFFICIENT_DATA when created) and alarm actions
// are recorded, never run. It is a test double of AWS, never a production path.
package cloudwatchlocal

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/statefile"
	"github.com/cairn-dev/cairn/internal/clock"
)

// Options configures a Service.
type Options struct {
	Region, AccountID string // defaults us-east-1, 000000000000
	Clock             clock.Clock
	// Dir persists the alarms in Dir/alarms.json; "" keeps them in memory.
	Dir    string
	Logger *slog.Logger
	// OnStateChange is called after SetAlarmState changed the state of an alarm, outside
	// the service's lock, so the emulator's CloudFormation reacts to it at once.
	OnStateChange func(alarmARN, state string)
}

// Service is one emulated CloudWatch.
type Service struct {
	o Options
	// state is where the service keeps its state under --dir.
	state statefile.File

	mu     sync.Mutex
	alarms map[string]*record // by name
}

// record is an alarm with what DescribeAlarms does not show.
type record struct {
	Alarm
	Tags []Tag `json:"Tags,omitempty"`
}

// Alarm is a metric alarm as DescribeAlarms answers it.
type Alarm struct {
	AlarmName                          string            `json:"AlarmName" xml:"AlarmName"`
	AlarmArn                           string            `json:"AlarmArn" xml:"AlarmArn"`
	AlarmDescription                   string            `json:"AlarmDescription,omitempty" xml:"AlarmDescription,omitempty"`
	AlarmConfigurationUpdatedTimestamp Timestamp         `json:"AlarmConfigurationUpdatedTimestamp" xml:"AlarmConfigurationUpdatedTimestamp"`
	ActionsEnabled                     bool              `json:"ActionsEnabled" xml:"ActionsEnabled"`
	OKActions                          []string          `json:"OKActions" xml:"OKActions>member"`
	AlarmActions                       []string          `json:"AlarmActions" xml:"AlarmActions>member"`
	InsufficientDataActions            []string          `json:"InsufficientDataActions" xml:"InsufficientDataActions>member"`
	StateValue                         string            `json:"StateValue" xml:"StateValue"`
	StateReason                        string            `json:"StateReason" xml:"StateReason"`
	StateReasonData                    string            `json:"StateReasonData,omitempty" xml:"StateReasonData,omitempty"`
	StateUpdatedTimestamp              Timestamp         `json:"StateUpdatedTimestamp" xml:"StateUpdatedTimestamp"`
	StateTransitionedTimestamp         Timestamp         `json:"StateTransitionedTimestamp" xml:"StateTransitionedTimestamp"`
	MetricName                         string            `json:"MetricName,omitempty" xml:"MetricName,omitempty"`
	Namespace                          string            `json:"Namespace,omitempty" xml:"Namespace,omitempty"`
	Statistic                          string            `json:"Statistic,omitempty" xml:"Statistic,omitempty"`
	ExtendedStatistic                  string            `json:"ExtendedStatistic,omitempty" xml:"ExtendedStatistic,omitempty"`
	Dimensions                         []Dimension       `json:"Dimensions" xml:"Dimensions>member"`
	Period                             *int32            `json:"Period,omitempty" xml:"Period,omitempty"`
	Unit                               string            `json:"Unit,omitempty" xml:"Unit,omitempty"`
	EvaluationPeriods                  *int32            `json:"EvaluationPeriods,omitempty" xml:"EvaluationPeriods,omitempty"`
	DatapointsToAlarm                  *int32            `json:"DatapointsToAlarm,omitempty" xml:"DatapointsToAlarm,omitempty"`
	Threshold                          *Double           `json:"Threshold,omitempty" xml:"Threshold,omitempty"`
	ComparisonOperator                 string            `json:"ComparisonOperator,omitempty" xml:"ComparisonOperator,omitempty"`
	TreatMissingData                   string            `json:"TreatMissingData,omitempty" xml:"TreatMissingData,omitempty"`
	EvaluateLowSampleCountPercentile   string            `json:"EvaluateLowSampleCountPercentile,omitempty" xml:"EvaluateLowSampleCountPercentile,omitempty"`
	Metrics                            []MetricDataQuery `json:"Metrics,omitempty" xml:"Metrics>member"`
	ThresholdMetricId                  string            `json:"ThresholdMetricId,omitempty" xml:"ThresholdMetricId,omitempty"`
}

// Dimension is a metric dimension.
type Dimension struct {
	Name  string `json:"Name" xml:"Name"`
	Value string `json:"Value" xml:"Value"`
}

// Tag is a resource tag.
type Tag struct {
	Key   string `json:"Key" xml:"Key"`
	Value string `json:"Value" xml:"Value"`
}

// MetricDataQuery is one metric or expression of an alarm on metric math.
type MetricDataQuery struct {
	Id         string      `json:"Id" xml:"Id"`
	MetricStat *MetricStat `json:"MetricStat,omitempty" xml:"MetricStat,omitempty"`
	Expression string      `json:"Expression,omitempty" xml:"Expression,omitempty"`
	Label      string      `json:"Label,omitempty" xml:"Label,omitempty"`
	ReturnData *bool       `json:"ReturnData,omitempty" xml:"ReturnData,omitempty"`
	Period     *int32      `json:"Period,omitempty" xml:"Period,omitempty"`
	AccountId  string      `json:"AccountId,omitempty" xml:"AccountId,omitempty"`
}

// MetricStat is a metric with its statistic.
type MetricStat struct {
	Metric Metric `json:"Metric" xml:"Metric"`
	Period int32  `json:"Period" xml:"Period"`
	Stat   string `json:"Stat" xml:"Stat"`
	Unit   string `json:"Unit,omitempty" xml:"Unit,omitempty"`
}

// Metric names a metric.
type Metric struct {
	Namespace  string      `json:"Namespace,omitempty" xml:"Namespace,omitempty"`
	MetricName string      `json:"MetricName,omitempty" xml:"MetricName,omitempty"`
	Dimensions []Dimension `json:"Dimensions,omitempty" xml:"Dimensions>member"`
}

// MetricAlarmInput is PutMetricAlarm's request.
type MetricAlarmInput struct {
	AlarmName                        string            `json:"AlarmName"`
	AlarmDescription                 string            `json:"AlarmDescription,omitempty"`
	ActionsEnabled                   *bool             `json:"ActionsEnabled,omitempty"`
	OKActions                        []string          `json:"OKActions,omitempty"`
	AlarmActions                     []string          `json:"AlarmActions,omitempty"`
	InsufficientDataActions          []string          `json:"InsufficientDataActions,omitempty"`
	MetricName                       string            `json:"MetricName,omitempty"`
	Namespace                        string            `json:"Namespace,omitempty"`
	Statistic                        string            `json:"Statistic,omitempty"`
	ExtendedStatistic                string            `json:"ExtendedStatistic,omitempty"`
	Dimensions                       []Dimension       `json:"Dimensions,omitempty"`
	Period                           *int32            `json:"Period,omitempty"`
	Unit                             string            `json:"Unit,omitempty"`
	EvaluationPeriods                *int32            `json:"EvaluationPeriods,omitempty"`
	DatapointsToAlarm                *int32            `json:"DatapointsToAlarm,omitempty"`
	Threshold                        *float64          `json:"Threshold,omitempty"`
	ComparisonOperator               string            `json:"ComparisonOperator,omitempty"`
	TreatMissingData                 string            `json:"TreatMissingData,omitempty"`
	EvaluateLowSampleCountPercentile string            `json:"EvaluateLowSampleCountPercentile,omitempty"`
	Metrics                          []MetricDataQuery `json:"Metrics,omitempty"`
	Tags                             []Tag             `json:"Tags,omitempty"`
	ThresholdMetricId                string            `json:"ThresholdMetricId,omitempty"`
	// EvaluationCriteria (PromQL alarms) is refused: the emulator does not serve them.
	EvaluationCriteria any `json:"EvaluationCriteria,omitempty"`
}

// Error is a CloudWatch API error: Shape names its type in the service model (what the
// SDKs decode), Code is its query protocol code (what the AWS CLI prints).
type Error struct {
	Shape, Code, Message string
	Status               int
}

func (e *Error) Error() string { return "cloudwatch " + e.Code + ": " + e.Message }

func invalidValue(format string, args ...any) *Error {
	return &Error{Shape: "InvalidParameterValueException", Code: "InvalidParameterValue", Message: fmt.Sprintf(format, args...), Status: 400}
}

func missing(format string, args ...any) *Error {
	return &Error{Shape: "MissingRequiredParameterException", Code: "MissingParameter", Message: fmt.Sprintf(format, args...), Status: 400}
}

func combination(format string, args ...any) *Error {
	return &Error{Shape: "InvalidParameterCombinationException", Code: "InvalidParameterCombination", Message: fmt.Sprintf(format, args...), Status: 400}
}

// validation is the model's own constraint check, worded as AWS words it.
func validation(format string, args ...any) *Error {
	return &Error{Shape: "ValidationException", Code: "ValidationError", Message: "1 validation error detected: " + fmt.Sprintf(format, args...), Status: 400}
}

func notFound(name string) *Error {
	return &Error{Shape: "ResourceNotFound", Code: "ResourceNotFound", Message: fmt.Sprintf("Alarm %s not found", name), Status: 404}
}

// The model's enumerations and limits.
var (
	stateValues         = []string{"OK", "ALARM", "INSUFFICIENT_DATA"}
	comparisonOperators = []string{"GreaterThanOrEqualToThreshold", "GreaterThanThreshold", "LessThanThreshold", "LessThanOrEqualToThreshold",
		"LessThanLowerOrGreaterThanUpperThreshold", "LessThanLowerThreshold", "GreaterThanUpperThreshold"}
	statistics = []string{"SampleCount", "Average", "Sum", "Minimum", "Maximum"}
	units      = []string{"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes", "Bits",
		"Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second", "Kilobytes/Second", "Megabytes/Second",
		"Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second", "Megabits/Second", "Gigabits/Second",
		"Terabits/Second", "Count/Second", "None"}
	treatMissing = []string{"breaching", "notBreaching", "ignore", "missing"}
)

const (
	maxActions     = 5
	maxNames       = 100
	maxRecords     = 100
	defaultRecords = 50
)

// New returns a Service, loading Dir's alarms when there are some.
func New(o Options) (*Service, error) {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "000000000000"
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{o: o, alarms: map[string]*record{}}
	s.state = statefile.File{Dir: o.Dir, Name: "alarms.json", Service: "cloudwatch emulator", Perm: 0o644, Logger: o.Logger}
	if err := s.state.Load(&s.alarms); err != nil {
		return nil, err
	}
	return s, nil
}

// Close writes the state a last time.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Save(s.alarms)
}

// ARN returns the ARN of the alarm named name in the emulated account and region.
func (s *Service) ARN(name string) string {
	return fmt.Sprintf("arn:aws:cloudwatch:%s:%s:alarm:%s", s.o.Region, s.o.AccountID, name)
}

// nameOf returns the alarm name of an alarm ARN of the emulated account and region.
func (s *Service) nameOf(arn string) (string, bool) {
	return strings.CutPrefix(arn, s.ARN(""))
}

func checkName(key, name string) *Error {
	switch {
	case name == "":
		return missing("The parameter %s is required.", key)
	case len(name) > 255:
		return validation("Value at '%s' failed to satisfy constraint: Member must have length less than or equal to 255", lowerFirst(key))
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return invalidValue("The alarm name %q contains ASCII control characters, which CloudWatch does not accept.", name)
	}
	return nil
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func oneOf(key, v string, allowed []string) *Error {
	if v == "" || slices.Contains(allowed, v) {
		return nil
	}
	return validation("Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: [%s]", v, lowerFirst(key), strings.Join(allowed, ", "))
}

// check refuses what CloudWatch refuses in a PutMetricAlarm request.
func (in *MetricAlarmInput) check() error {
	if err := checkName("AlarmName", in.AlarmName); err != nil {
		return err
	}
	if in.EvaluationCriteria != nil {
		return invalidValue("EvaluationCriteria (PromQL alarms) is not served by the local emulator: use MetricName or Metrics")
	}
	for key, l := range map[string][]string{"OKActions": in.OKActions, "AlarmActions": in.AlarmActions, "InsufficientDataActions": in.InsufficientDataActions} {
		if len(l) > maxActions {
			return validation("Value at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", lowerFirst(key), maxActions)
		}
	}
	for _, c := range []struct {
		key, v  string
		allowed []string
	}{
		{"ComparisonOperator", in.ComparisonOperator, comparisonOperators}, {"Statistic", in.Statistic, statistics},
		{"Unit", in.Unit, units}, {"TreatMissingData", in.TreatMissingData, treatMissing},
	} {
		if err := oneOf(c.key, c.v, c.allowed); err != nil {
			return err
		}
	}
	switch {
	case in.MetricName != "" && len(in.Metrics) > 0:
		return combination("MetricName and Metrics cannot both be specified: an alarm watches one metric or one metric math expression.")
	case in.MetricName == "" && len(in.Metrics) == 0:
		return missing("One of MetricName or Metrics must be specified.")
	case len(in.Metrics) > 0 && (in.Namespace != "" || in.Statistic != "" || in.ExtendedStatistic != "" || in.Period != nil || in.Unit != "" || len(in.Dimensions) > 0):
		return combination("With Metrics, the metrics' own MetricStat gives Namespace, Dimensions, Period, Unit and Statistic: leave them out of the request.")
	}
	if in.MetricName != "" {
		switch {
		case in.Statistic != "" && in.ExtendedStatistic != "":
			return combination("Statistic and ExtendedStatistic cannot both be specified.")
		case in.Statistic == "" && in.ExtendedStatistic == "":
			return missing("One of Statistic or ExtendedStatistic must be specified for an alarm on the metric %s.", in.MetricName)
		case in.Period == nil:
			return missing("The parameter Period is required for an alarm on the metric %s.", in.MetricName)
		}
		if p := *in.Period; p < 1 || (p != 10 && p != 20 && p != 30 && p%60 != 0) {
			return invalidValue("The parameter Period must be 10, 20, 30 or a multiple of 60, got %d.", p)
		}
	}
	for i, q := range in.Metrics {
		if q.Id == "" {
			return missing("The parameter Metrics.member.%d.Id is required.", i+1)
		}
		if q.MetricStat == nil && q.Expression == "" {
			return missing("Metrics.member.%d (%s) needs a MetricStat or an Expression.", i+1, q.Id)
		}
	}
	switch {
	case in.EvaluationPeriods == nil:
		return missing("The parameter EvaluationPeriods is required.")
	case *in.EvaluationPeriods < 1:
		return validation("Value '%d' at 'evaluationPeriods' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.EvaluationPeriods)
	case in.DatapointsToAlarm != nil && (*in.DatapointsToAlarm < 1 || *in.DatapointsToAlarm > *in.EvaluationPeriods):
		return invalidValue("DatapointsToAlarm (%d) must be between 1 and EvaluationPeriods (%d).", *in.DatapointsToAlarm, *in.EvaluationPeriods)
	case in.ComparisonOperator == "":
		return missing("The parameter ComparisonOperator is required.")
	case in.Threshold == nil && in.ThresholdMetricId == "":
		return missing("One of Threshold or ThresholdMetricId must be specified.")
	}
	return nil
}

// PutMetricAlarm creates an alarm in INSUFFICIENT_DATA, or replaces the configuration of
// an existing one, keeping its state and tags, as CloudWatch does.
func (s *Service) PutMetricAlarm(in MetricAlarmInput) error {
	if err := in.check(); err != nil {
		return err
	}
	now := s.o.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	a := Alarm{
		AlarmName: in.AlarmName, AlarmArn: s.ARN(in.AlarmName), AlarmDescription: in.AlarmDescription,
		AlarmConfigurationUpdatedTimestamp: Timestamp(now), ActionsEnabled: in.ActionsEnabled == nil || *in.ActionsEnabled,
		OKActions: orEmpty(in.OKActions), AlarmActions: orEmpty(in.AlarmActions), InsufficientDataActions: orEmpty(in.InsufficientDataActions),
		StateValue: "INSUFFICIENT_DATA", StateReason: "Unchecked: Initial alarm creation",
		StateUpdatedTimestamp: Timestamp(now), StateTransitionedTimestamp: Timestamp(now),
		MetricName: in.MetricName, Namespace: in.Namespace, Statistic: in.Statistic, ExtendedStatistic: in.ExtendedStatistic,
		Dimensions: orEmpty(in.Dimensions), Period: in.Period, Unit: in.Unit, EvaluationPeriods: in.EvaluationPeriods,
		DatapointsToAlarm: in.DatapointsToAlarm, Threshold: (*Double)(in.Threshold), ComparisonOperator: in.ComparisonOperator,
		TreatMissingData: in.TreatMissingData, EvaluateLowSampleCountPercentile: in.EvaluateLowSampleCountPercentile,
		Metrics: in.Metrics, ThresholdMetricId: in.ThresholdMetricId,
	}
	tags := in.Tags
	if old, ok := s.alarms[in.AlarmName]; ok {
		a.StateValue, a.StateReason, a.StateReasonData = old.StateValue, old.StateReason, old.StateReasonData
		a.StateUpdatedTimestamp, a.StateTransitionedTimestamp = old.StateUpdatedTimestamp, old.StateTransitionedTimestamp
		tags = old.Tags // an update ignores the request's tags
	}
	s.alarms[in.AlarmName] = &record{Alarm: a, Tags: tags}
	s.state.Persist(s.alarms)
	return nil
}

// Filter selects alarms for DescribeAlarms.
type Filter struct {
	AlarmNames      []string `json:"AlarmNames,omitempty"`
	AlarmNamePrefix string   `json:"AlarmNamePrefix,omitempty"`
	AlarmTypes      []string `json:"AlarmTypes,omitempty"`
	StateValue      string   `json:"StateValue,omitempty"`
	ActionPrefix    string   `json:"ActionPrefix,omitempty"`
	MaxRecords      *int32   `json:"MaxRecords,omitempty"`
	NextToken       string   `json:"NextToken,omitempty"`
	// Composite alarms are not served, so they have no children or parents.
	ChildrenOfAlarmName string `json:"ChildrenOfAlarmName,omitempty"`
	ParentsOfAlarmName  string `json:"ParentsOfAlarmName,omitempty"`
}

// DescribeAlarms returns the alarms f selects, by name, a page of at most MaxRecords
// (default 50) and the token of the next page.
func (s *Service) DescribeAlarms(f Filter) ([]Alarm, string, error) {
	if err := oneOf("StateValue", f.StateValue, stateValues); err != nil {
		return nil, "", err
	}
	for _, t := range f.AlarmTypes {
		if err := oneOf("AlarmTypes", t, []string{"CompositeAlarm", "MetricAlarm"}); err != nil {
			return nil, "", err
		}
	}
	switch {
	case len(f.AlarmNames) > 0 && f.AlarmNamePrefix != "":
		return nil, "", combination("AlarmNames and AlarmNamePrefix cannot both be specified.")
	case len(f.AlarmNames) > maxNames:
		return nil, "", validation("Value at 'alarmNames' failed to satisfy constraint: Member must have length less than or equal to %d", maxNames)
	case f.MaxRecords != nil && (*f.MaxRecords < 1 || *f.MaxRecords > maxRecords):
		return nil, "", validation("Value '%d' at 'maxRecords' failed to satisfy constraint: Member must have value between 1 and %d", *f.MaxRecords, maxRecords)
	}
	size := defaultRecords
	if f.MaxRecords != nil {
		size = int(*f.MaxRecords)
	}
	metric := len(f.AlarmTypes) == 0 || slices.Contains(f.AlarmTypes, "MetricAlarm")
	if !metric || f.ChildrenOfAlarmName != "" || f.ParentsOfAlarmName != "" {
		return []Alarm{}, "", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.alarms))
	for n, a := range s.alarms {
		switch {
		case len(f.AlarmNames) > 0 && !slices.Contains(f.AlarmNames, n):
		case !strings.HasPrefix(n, f.AlarmNamePrefix):
		case f.StateValue != "" && a.StateValue != f.StateValue:
		case f.ActionPrefix != "" && !hasPrefixed(f.ActionPrefix, a.OKActions, a.AlarmActions, a.InsufficientDataActions):
		default:
			names = append(names, n)
		}
	}
	sort.Strings(names)
	start := 0
	if f.NextToken != "" {
		i, ok := decodeToken(f.NextToken)
		if !ok || i > len(names) {
			return nil, "", &Error{Shape: "InvalidNextToken", Code: "InvalidNextToken", Message: "The service returned an invalid NextToken.", Status: 400}
		}
		start = i
	}
	end := min(start+size, len(names))
	out := make([]Alarm, 0, end-start)
	for _, n := range names[start:end] {
		out = append(out, s.alarms[n].Alarm)
	}
	next := ""
	if end < len(names) {
		next = encodeToken(end)
	}
	return out, next, nil
}

func hasPrefixed(prefix string, lists ...[]string) bool {
	for _, l := range lists {
		for _, a := range l {
			if strings.HasPrefix(a, prefix) {
				return true
			}
		}
	}
	return false
}

// Describe returns one alarm, for in-process callers (drift detection of stacks).
func (s *Service) Describe(name string) (Alarm, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.alarms[name]
	if !ok {
		return Alarm{}, false
	}
	return a.Alarm, true
}

// Tags returns the tags an alarm was created with.
func (s *Service) Tags(name string) []Tag {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.alarms[name]; ok {
		return slices.Clone(a.Tags)
	}
	return nil
}

// SetAlarmState sets an alarm's state until it is set again (the emulator evaluates no
// metric), then tells Options.OnStateChange when the state changed.
func (s *Service) SetAlarmState(name, value, reason, reasonData string) error {
	if err := checkName("AlarmName", name); err != nil {
		return err
	}
	switch {
	case value == "":
		return missing("The parameter StateValue is required.")
	case len(reason) > 1023:
		return validation("Value at 'stateReason' failed to satisfy constraint: Member must have length less than or equal to 1023")
	case len(reasonData) > 4000:
		return validation("Value at 'stateReasonData' failed to satisfy constraint: Member must have length less than or equal to 4000")
	case reasonData != "" && !json.Valid([]byte(reasonData)):
		return &Error{Shape: "InvalidFormatFault", Code: "InvalidFormat", Message: "Invalid JSON in StateReasonData: " + reasonData, Status: 400}
	}
	if err := oneOf("StateValue", value, stateValues); err != nil {
		return err
	}
	now := s.o.Clock.Now()
	s.mu.Lock()
	a, ok := s.alarms[name]
	if !ok {
		s.mu.Unlock()
		return notFound(name)
	}
	changed := a.StateValue != value
	a.StateValue, a.StateReason, a.StateReasonData, a.StateUpdatedTimestamp = value, reason, reasonData, Timestamp(now)
	if changed {
		a.StateTransitionedTimestamp = Timestamp(now)
	}
	arn := a.AlarmArn
	s.state.Persist(s.alarms)
	s.mu.Unlock()
	s.o.Logger.Info("cloudwatch: alarm state set", "alarm", name, "state", value, "reason", reason)
	if changed && s.o.OnStateChange != nil {
		s.o.OnStateChange(arn, value)
	}
	return nil
}

// DeleteAlarms deletes the named alarms; names that match none are ignored, as
// CloudWatch ignores them.
func (s *Service) DeleteAlarms(names ...string) error {
	if len(names) == 0 {
		return missing("The parameter AlarmNames is required.")
	}
	if len(names) > maxNames {
		return validation("Value at 'alarmNames' failed to satisfy constraint: Member must have length less than or equal to %d", maxNames)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		delete(s.alarms, n)
	}
	s.state.Persist(s.alarms)
	return nil
}

// State returns the state of the alarm of an ARN and when it was last set; ok is false
// when the emulator holds no such alarm (or the ARN is of another account or region).
func (s *Service) State(arn string) (state string, updated time.Time, ok bool) {
	name, ok := s.nameOf(arn)
	if !ok {
		return "", time.Time{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.alarms[name]
	if !ok {
		return "", time.Time{}, false
	}
	return a.StateValue, time.Time(a.StateUpdatedTimestamp), true
}

func orEmpty[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}
