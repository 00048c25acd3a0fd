package awslocal_test

import (
	"testing"
)

// TestGetAZsAndSchedulerRate: Fn::GetAZs answers us-east-1's six zones, and an
// AWS::Scheduler::Schedule with rate(5 minute) deploys, as both do on AWS.
func TestGetAZsAndSchedulerRate(t *testing.T) {
	v := startStacks(t)
	out := v.deploy(t, "zones", `Resources:
  Ticks:
    Type: AWS::SQS::Queue
  Every:
    Type: AWS::Scheduler::Schedule
    Properties:
      ScheduleExpression: rate(5 minute)
      FlexibleTimeWindow: {Mode: "OFF"}
      Target: {Arn: !GetAtt Ticks.Arn, RoleArn: arn:aws:iam::000000000000:role/scheduler}
Outputs:
  Zones: {Value: !Join [",", !GetAZs ""]}
  West: {Value: !Join [",", !GetAZs eu-west-1]}
  Oregon: {Value: !Join [",", !GetAZs us-west-2]}
`)
	if out["Zones"] != "us-east-1a,us-east-1b,us-east-1c,us-east-1d,us-east-1e,us-east-1f" {
		t.Errorf("Fn::GetAZs in us-east-1: %s", out["Zones"])
	}
	if out["West"] != "eu-west-1a,eu-west-1b,eu-west-1c" || out["Oregon"] != "us-west-2a,us-west-2b,us-west-2c,us-west-2d" {
		t.Errorf("Fn::GetAZs elsewhere: %s; %s", out["West"], out["Oregon"])
	}
}
