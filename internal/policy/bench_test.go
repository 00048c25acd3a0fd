package policy

import (
	"context"
	"fmt"
	"testing"
)

// bigInput is a plan of n stacks, each with 10 resources of the library's kinds (a bucket,
// a table, a role, a security group, a volume...) and a change set replacing two of them.
func bigInput(n int) Input {
	in := Input{Kind: "plan", Deployment: "big", Time: "2026-12-07T10:00:00Z", TimeNS: evalTime.UnixNano()}
	for i := range n {
		s := Stack{Name: fmt.Sprintf("stack-%03d", i), Action: "update", Region: "eu-west-1", TemplateKnown: true,
			Parameters: map[string]string{"Env": "prod"}}
		for j := range 2 {
			s.Resources = append(s.Resources,
				Resource{LogicalID: fmt.Sprintf("Bucket%d", j), Type: "AWS::S3::Bucket", DeletionPolicy: "Retain",
					Properties: map[string]any{"PublicAccessBlockConfiguration": map[string]any{"BlockPublicAcls": true}}},
				Resource{LogicalID: fmt.Sprintf("Table%d", j), Type: "AWS::DynamoDB::Table", Properties: map[string]any{"BillingMode": "PAY_PER_REQUEST"}},
				Resource{LogicalID: fmt.Sprintf("Role%d", j), Type: "AWS::IAM::Role", Properties: map[string]any{"Policies": []any{
					map[string]any{"PolicyDocument": map[string]any{"Statement": []any{map[string]any{"Effect": "Allow", "Action": []any{"s3:GetObject"}, "Resource": "*"}}}}}}},
				Resource{LogicalID: fmt.Sprintf("Sg%d", j), Type: "AWS::EC2::SecurityGroup", Properties: map[string]any{"SecurityGroupIngress": []any{
					map[string]any{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0"}}}},
				Resource{LogicalID: fmt.Sprintf("Vol%d", j), Type: "AWS::EC2::Volume", Properties: map[string]any{"Encrypted": true}},
			)
		}
		s.Changes = []Change{{LogicalID: "Table0", Type: "AWS::DynamoDB::Table", Action: "Modify", Replacement: "True"},
			{LogicalID: "Bucket1", Type: "AWS::S3::Bucket", Action: "Modify", Replacement: "False", Scope: []string{"Tags"}}}
		in.Stacks = append(in.Stacks, s)
	}
	return in
}

// BenchmarkEvaluate200Stacks evaluates the starter library (its region and change window
// configured) against a 200-stack plan: one Evaluate, the policies compiled once.
func BenchmarkEvaluate200Stacks(b *testing.B) {
	lib, err := LibrarySet(Team)
	if err != nil {
		b.Fatal(err)
	}
	lib.Data["config"] = map[string]any{"allowed_regions": []any{"eu-west-1"},
		"production":    map[string]any{"deployments": []any{"big"}},
		"change_window": map[string]any{"days": []any{"Monday"}, "start": "09:00", "end": "16:00"}}
	e, err := Compile(context.Background(), lib)
	if err != nil {
		b.Fatal(err)
	}
	in := bigInput(200)
	rs, err := e.Evaluate(context.Background(), in)
	if err != nil {
		b.Fatal(err)
	}
	if len(rs) != 200 { // each stack's replaced table
		b.Fatalf("%d results, want 200: %v", len(rs), rs[:min(len(rs), 3)])
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Evaluate(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileLibrary compiles the starter library: what a cold policy function pays
// once per process.
func BenchmarkCompileLibrary(b *testing.B) {
	lib, err := LibrarySet(Team)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Compile(context.Background(), lib); err != nil {
			b.Fatal(err)
		}
	}
}
