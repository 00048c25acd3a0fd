package awslocal

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/awslocal/cloudwatchlocal"
)

// alarmProvider makes an AWS::CloudWatch::Alarm a real alarm of the emulator's CloudWatch,
// so a stack's alarm can be set to ALARM and roll back the stacks whose rollback triggers
// name it.
func (p *Place) alarmProvider() cfnlocal.Provider {
	put := func(name string, props map[string]any) error {
		in, err := alarmInput(name, props)
		if err != nil {
			return err
		}
		return p.cw.PutMetricAlarm(in)
	}
	return cfnlocal.Provider{
		Create: func(_ context.Context, r cfnlocal.Resource) (string, map[string]any, error) {
			name := r.Name("AlarmName", 255)
			if _, ok := p.cw.Describe(name); ok {
				return "", nil, fmt.Errorf("%s already exists", name)
			}
			return name, map[string]any{"Arn": p.cw.ARN(name)}, put(name, r.Props)
		},
		Update: func(_ context.Context, r cfnlocal.Resource, _ map[string]any) (map[string]any, error) {
			return map[string]any{"Arn": p.cw.ARN(r.PhysicalID)}, put(r.PhysicalID, r.Props)
		},
		Delete: func(_ context.Context, r cfnlocal.Resource) error {
			return p.cw.DeleteAlarms(r.PhysicalID)
		},
		Read: func(_ context.Context, r cfnlocal.Resource) (map[string]any, bool, error) {
			a, ok := p.cw.Describe(r.PhysicalID)
			if !ok {
				return nil, false, nil
			}
			out := map[string]any{"AlarmName": a.AlarmName, "ActionsEnabled": a.ActionsEnabled, "AlarmDescription": a.AlarmDescription,
				"MetricName": a.MetricName, "Namespace": a.Namespace, "Statistic": a.Statistic, "ExtendedStatistic": a.ExtendedStatistic,
				"ComparisonOperator": a.ComparisonOperator, "TreatMissingData": a.TreatMissingData, "Unit": a.Unit,
				"OKActions": anyList(a.OKActions), "AlarmActions": anyList(a.AlarmActions), "InsufficientDataActions": anyList(a.InsufficientDataActions)}
			var dims []any
			for _, d := range a.Dimensions {
				dims = append(dims, map[string]any{"Name": d.Name, "Value": d.Value})
			}
			out["Dimensions"] = dims
			for k, v := range map[string]*int32{"Period": a.Period, "EvaluationPeriods": a.EvaluationPeriods, "DatapointsToAlarm": a.DatapointsToAlarm} {
				if v != nil {
					out[k] = float64(*v)
				}
			}
			if a.Threshold != nil {
				out["Threshold"] = float64(*a.Threshold)
			}
			return out, true, nil
		},
	}
}

func anyList(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

// alarmInput builds PutMetricAlarm's request from an AWS::CloudWatch::Alarm's properties,
// which have the API's names (numbers may be given as strings, e.g. from parameters).
func alarmInput(name string, p map[string]any) (cloudwatchlocal.MetricAlarmInput, error) {
	in := cloudwatchlocal.MetricAlarmInput{AlarmName: name, AlarmDescription: text(p["AlarmDescription"]),
		MetricName: text(p["MetricName"]), Namespace: text(p["Namespace"]), Statistic: text(p["Statistic"]),
		ExtendedStatistic: text(p["ExtendedStatistic"]), Unit: text(p["Unit"]), ComparisonOperator: text(p["ComparisonOperator"]),
		TreatMissingData: text(p["TreatMissingData"]), EvaluateLowSampleCountPercentile: text(p["EvaluateLowSampleCountPercentile"]),
		ThresholdMetricId: text(p["ThresholdMetricId"]), Dimensions: dimensions(p["Dimensions"]),
		OKActions: texts(p["OKActions"]), AlarmActions: texts(p["AlarmActions"]), InsufficientDataActions: texts(p["InsufficientDataActions"])}
	if v, ok := p["ActionsEnabled"]; ok {
		b := text(v) == "true"
		in.ActionsEnabled = &b
	}
	var err error
	for _, f := range []struct {
		key string
		to  **int32
	}{{"Period", &in.Period}, {"EvaluationPeriods", &in.EvaluationPeriods}, {"DatapointsToAlarm", &in.DatapointsToAlarm}} {
		if *f.to, err = integer(p, f.key); err != nil {
			return in, err
		}
	}
	if v, ok := p["Threshold"]; ok {
		t, err := strconv.ParseFloat(text(v), 64)
		if err != nil {
			return in, fmt.Errorf("Threshold %q is not a number", text(v))
		}
		in.Threshold = &t
	}
	for _, m := range list(p["Metrics"]) {
		q, err := metricQuery(object(m))
		if err != nil {
			return in, err
		}
		in.Metrics = append(in.Metrics, q)
	}
	for k, v := range tagMap(p["Tags"]) {
		in.Tags = append(in.Tags, cloudwatchlocal.Tag{Key: k, Value: v})
	}
	return in, nil
}

func metricQuery(m map[string]any) (cloudwatchlocal.MetricDataQuery, error) {
	q := cloudwatchlocal.MetricDataQuery{Id: text(m["Id"]), Expression: text(m["Expression"]), Label: text(m["Label"]), AccountId: text(m["AccountId"])}
	if v, ok := m["ReturnData"]; ok {
		b := text(v) == "true"
		q.ReturnData = &b
	}
	var err error
	if q.Period, err = integer(m, "Period"); err != nil {
		return q, err
	}
	if ms := object(m["MetricStat"]); ms != nil {
		metric := object(ms["Metric"])
		st := &cloudwatchlocal.MetricStat{Stat: text(ms["Stat"]), Unit: text(ms["Unit"]),
			Metric: cloudwatchlocal.Metric{Namespace: text(metric["Namespace"]), MetricName: text(metric["MetricName"]), Dimensions: dimensions(metric["Dimensions"])}}
		period, err := integer(ms, "Period")
		if err != nil {
			return q, err
		}
		if period != nil {
			st.Period = *period
		}
		q.MetricStat = st
	}
	return q, nil
}

func integer(m map[string]any, key string) (*int32, error) {
	v, ok := m[key]
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(text(v), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not an integer", key, text(v))
	}
	i := int32(n)
	return &i, nil
}

func dimensions(v any) []cloudwatchlocal.Dimension {
	var out []cloudwatchlocal.Dimension
	for _, d := range list(v) {
		m := object(d)
		out = append(out, cloudwatchlocal.Dimension{Name: text(m["Name"]), Value: text(m["Value"])})
	}
	return out
}

func texts(v any) []string {
	var out []string
	for _, s := range list(v) {
		out = append(out, text(s))
	}
	return out
}
