package template

import (
	"slices"
	"strings"
	"testing"
)

// A Serverless template is checked after cairn's Serverless transform, as CloudFormation
// checks it: Fn::GetAtt, Ref and runtimes of the resources it generates are checked, and
// each problem is reported where the template says it (a generated resource's at the
// Serverless resource it comes from, a global runtime at Globals).
func TestServerlessTemplatesAreCheckedExpanded(t *testing.T) {
	const sam = "Transform: AWS::Serverless-2016-10-31\n"
	tests := []struct {
		name, body string
		want       []string
	}{
		{"GetAtt of an attribute the generated function lacks", sam + `Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties: {Runtime: python3.12, Handler: a.b, CodeUri: ./src}
Outputs:
  Name: {Value: !GetAtt Fn.Name}
  Role: {Value: !GetAtt FnRole.Arn}
  Alias: {Value: !Ref Fn.Alias}
`, []string{`7:28: Outputs.Name.Value: AWS::Lambda::Function Fn has no attribute "Name" for Fn::GetAtt; it has Arn, SnapStartResponse, SnapStartResponse.ApplyOn, SnapStartResponse.OptimizationStatus`,
			`9:18: Outputs.Alias.Value: Ref names nothing: "Fn.Alias" is not a parameter, resource or pseudo parameter of the template`}},
		{"Ref in a function's property, at its line", sam + `Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.12
      Handler: a.b
      CodeUri: ./src
      AutoPublishAlias: live
      Environment:
        Variables:
          TABLE: !Ref Tabel
  Table:
    Type: AWS::Serverless::SimpleTable
Outputs:
  Alias: {Value: !Ref Fn.Alias}
`, []string{`12:18: Resources.Fn.Properties.Environment.Variables.TABLE: Ref names nothing: "Tabel" is not a parameter, resource or pseudo parameter of the template (did you mean "Table"?)`}},
		{"a generated resource's problem at the Serverless resource", sam + `Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.12
      Handler: a.b
      CodeUri: ./src
      MemorySize: [128]
      RolePath: {a: b}
`, []string{`9:7: Resources.Fn.Properties.MemorySize: must be a single value (a string, number or boolean), not a list`,
			`10:7: Resources.FnRole.Properties.Path: must be a single value (a string, number or boolean), not a mapping (in FnRole, which the Serverless transform makes for Fn)`}},
		{"an event's resource at the event", sam + `Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.12
      Handler: a.b
      CodeUri: ./src
      Events:
        Poll:
          Type: SQS
          Properties:
            Queue: !GetAtt Orders.Arn
            BatchSize: [10]
  Orders:
    Type: AWS::SQS::Queue
`, []string{`14:13: Resources.FnPoll.Properties.BatchSize: must be a single value (a string, number or boolean), not a list (in FnPoll, which the Serverless transform makes for Fn)`}},
		// runtimes AWS no longer lets functions be created with are errors (a warning is for
		// a deprecated runtime AWS still takes)
		{"deprecated runtimes of functions and Globals", sam + `Globals:
  Function:
    Runtime: python3.6
Resources:
  Old:
    Type: AWS::Serverless::Function
    Properties: {Handler: a.b, CodeUri: ./src}
  Older:
    Type: AWS::Serverless::Function
    Properties: {Handler: a.b, CodeUri: ./src, Runtime: nodejs10.x}
`, []string{`4:14: Resources.Old.Properties.Runtime: Lambda runtime python3.6 is deprecated`,
			`11:57: Resources.Older.Properties.Runtime: Lambda runtime nodejs10.x is deprecated`}},
		{"a template the translator refuses, and the other errors", sam + `Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties: {PackageType: Image}
  Queue:
    Type: AWS::SQS::Queue
    Properties: {DelaySecond: 5}
`, []string{`3:3: Resources.Fn: the Serverless transform refuses it: 'ImageUri' must be set.`,
			`8:18: Resources.Queue.Properties.DelaySecond: unknown property "DelaySecond" of AWS::SQS::Queue (did you mean "DelaySeconds"?)`}},
		{"an omitted CodeUri is the template's folder, packaged as aws cloudformation package does", sam + `Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties: {Runtime: python3.12, Handler: a.b}
  Empty:
    Type: AWS::Serverless::Function
    Properties: {Runtime: python3.12, Handler: a.b, CodeUri: ""}
  Layer:
    Type: AWS::Serverless::LayerVersion
    Properties: {CompatibleRuntimes: [python3.12]}
`, nil},
		{"parameters without a default are stand-ins, not errors", sam + `Parameters:
  Alias: {Type: String}
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties: {Runtime: python3.12, Handler: a.b, CodeUri: ./src, AutoPublishAlias: !Ref Alias}
`, nil},
		{"a function's DeploymentPreference, which cairn's transform leaves out, is not checked", sam + `Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.12
      Handler: a.b
      CodeUri: ./src
      AutoPublishAlias: live
      DeploymentPreference: {Type: AllAtOnce}
      Policies:
        - Statement:
            - Effect: Allow
              Action: codedeploy:PutLifecycleEventHookExecutionStatus
              Resource: !Sub "arn:aws:codedeploy:${AWS::Region}:${AWS::AccountId}:deploymentgroup:${ServerlessDeploymentApplication}/*"
`, nil},
		{"types cairn's transform leaves out are not checked", sam + `Resources:
  Api:
    Type: AWS::Serverless::GraphQLApi
    Properties: {SchemaUri: ./schema.graphql, Auth: {Type: API_KEY}}
Outputs:
  Id: {Value: !GetAtt ApiGraphQLApi.ApiId}
`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.body)
			var trimmed []string
			for _, g := range got {
				// a deprecation says since when and what to move to: the date is the table's
				if i := strings.Index(g, " is deprecated"); i >= 0 {
					g = g[:i+len(" is deprecated")]
				}
				trimmed = append(trimmed, g)
			}
			if !slices.Equal(trimmed, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestServerlessRuntimesJudgedOnTheDay: CheckOn's day reaches the expanded template: a
// Globals runtime is a warning while AWS still creates functions with it, an error from
// the day it stops, at Globals either way.
func TestServerlessRuntimesJudgedOnTheDay(t *testing.T) {
	const body = "Transform: AWS::Serverless-2016-10-31\nGlobals:\n  Function:\n    Runtime: nodejs20.x\nResources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties: {Handler: index.handler, CodeUri: ./src}\n"
	tests := []struct{ day, want string }{
		{"2027-01-31", "warning: 4:14: Resources.Fn.Properties.Runtime: Lambda runtime nodejs20.x is deprecated since 2026-04-30 (AWS blocks creating functions with it on 2027-02-01): move to nodejs24.x"},
		{"2027-02-01", "4:14: Resources.Fn.Properties.Runtime: Lambda runtime nodejs20.x is deprecated: AWS blocked creating functions with it on 2027-02-01, and blocks updating them on 2027-03-03: move to nodejs24.x"},
	}
	for _, tt := range tests {
		if got := problemsOn(t, body, tt.day); !slices.Equal(got, []string{tt.want}) {
			t.Errorf("on %s: problems:\n%s\nwant:\n%s", tt.day, strings.Join(got, "\n"), tt.want)
		}
	}
}
