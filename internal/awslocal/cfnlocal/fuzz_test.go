package cfnlocal

import (
	"testing"
)

// FuzzTemplate feeds arbitrary templates through parsing, planning and change set diffing:
// bad input must give an error, never a panic (which would take the emulator down).
func FuzzTemplate(f *testing.F) {
	for _, name := range []string{"network.yaml", "app.yaml", "edge.yaml"} {
		f.Add(readFixture(f, name), "prod")
	}
	f.Add(threeQueues, "")
	f.Add(portTemplate, "x")
	f.Add("Resources:\n  A:\n    Type: AWS::SNS::Topic\n    Properties:\n      X: !Select [!Ref P, !Split [',', !Sub '${AWS::Region}']]\n", "1")
	f.Add("Resources: {A: {Type: X, Properties: {Y: {\"Fn::Cidr\": [\"10.0.0.0/8\", 256, 4]}}}}", "")
	f.Fuzz(func(t *testing.T, body, env string) {
		svc := &Service{o: Options{Region: "us-east-1", AccountID: "000000000000", PageSize: 100}, byID: map[string]*stack{}, templates: map[string]*template{}}
		st := &stack{Name: "fuzz", ID: "arn:fuzz", Resources: map[string]*resource{}}
		tpl, err := svc.parse(body)
		if err != nil {
			return
		}
		params := map[string]string{}
		for n := range tpl.Parameters {
			params[n] = env
		}
		p, err := svc.plan(st, body, params, nil)
		if err != nil {
			return
		}
		_ = svc.diff(st, p)
	})
}

// FuzzTransforms feeds arbitrary templates with transforms (AWS::LanguageExtensions,
// AWS::Serverless-2016-10-31, inline Fn::Transform) through processing: an error or a
// processed template that parses, never a panic.
func FuzzTransforms(f *testing.F) {
	f.Add(langExtTemplate, "a,b")
	f.Add(samTemplate, "5")
	f.Add("Transform: [AWS::LanguageExtensions, AWS::Serverless-2016-10-31]\nParameters: {P: {Type: CommaDelimitedList}}\nResources:\n  Fn::ForEach::F:\n    - X\n    - !Ref P\n    - F${X}: {Type: AWS::Serverless::Function, Properties: {Handler: h, Runtime: python3.12, InlineCode: x}}\n", "a,b")
	f.Add("Transform: Count\nResources: {A: {Type: AWS::SQS::Queue}}\n", "")
	f.Fuzz(func(t *testing.T, body, value string) {
		svc := &Service{o: Options{Region: "us-east-1", AccountID: "000000000000", PageSize: 100}, byID: map[string]*stack{}, templates: map[string]*template{}}
		m, err := rawTemplate(body)
		if err != nil {
			return
		}
		params := map[string]string{}
		if ps, ok := m["Parameters"].(map[string]any); ok {
			for n := range ps {
				params[n] = value
			}
		}
		out, err := svc.process(&stack{Name: "fuzz", ID: "arn:fuzz"}, body, params)
		if err != nil {
			return
		}
		_, _ = parseTemplate(out)
	})
}
