package cfnlocal

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// List attributes (by the specification) are lists of plausible values, so Fn::Select over
// them works; a network interface's secondary addresses are those its template asks for.
func TestListAttributesAreLists(t *testing.T) {
	body := `Resources:
  Eni:
    Type: AWS::EC2::NetworkInterface
    Properties: {SubnetId: subnet-0a1b2c3d4e5f60718, SecondaryPrivateIpAddressCount: 2}
  Static:
    Type: AWS::EC2::NetworkInterface
    Properties:
      SubnetId: subnet-0a1b2c3d4e5f60718
      PrivateIpAddresses:
        - {PrivateIpAddress: 10.0.0.10, Primary: true}
        - {PrivateIpAddress: 10.0.0.11, Primary: false}
  Directory:
    Type: AWS::DirectoryService::SimpleAD
    Properties: {Name: corp.example.com, Password: secret-Pa55, Size: Small, VpcSettings: {SubnetIds: [subnet-a, subnet-b], VpcId: vpc-0a1b2c3d}}
  Vpc:
    Type: AWS::EC2::VPC
    Properties: {CidrBlock: 10.0.0.0/16}
Outputs:
  Second: {Value: !Select [1, !GetAtt Eni.SecondaryPrivateIpAddresses]}
  StaticPrimary: {Value: !GetAtt Static.PrimaryPrivateIpAddress}
  StaticSecondary: {Value: !Join [",", !GetAtt Static.SecondaryPrivateIpAddresses]}
  Dns: {Value: !Select [1, !GetAtt Directory.DnsIpAddresses]}
  Ipv6: {Value: !Select [0, !GetAtt Vpc.Ipv6CidrBlocks]}
`
	e := newEnv(t, nil)
	e.create("lists", body, nil)
	st := e.settle("lists")
	if st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("status %s (%s)\n%s", st.StackStatus, aws.ToString(st.StackStatusReason), strings.Join(eventLines(e.allEvents("lists")), "\n"))
	}
	out := outputs(st)
	for _, k := range []string{"Second", "Dns"} {
		if _, err := netip.ParseAddr(out[k]); err != nil {
			t.Errorf("output %s = %q, want an IP address", k, out[k])
		}
	}
	if out["StaticPrimary"] != "10.0.0.10" || out["StaticSecondary"] != "10.0.0.11" {
		t.Errorf("static addresses %q and %q, want the template's", out["StaticPrimary"], out["StaticSecondary"])
	}
	if p, err := netip.ParsePrefix(out["Ipv6"]); err != nil || !p.Addr().Is6() {
		t.Errorf("Ipv6 = %q, want an IPv6 block", out["Ipv6"])
	}
}

// Two stacks cannot both create a resource of one name; the second fails in AWS's words.
// A policy naming its role with RoleName needs CAPABILITY_IAM only.
func TestNamedResourcesAreUnique(t *testing.T) {
	body := `Resources:
  Logs:
    Type: AWS::Logs::LogGroup
    Properties: {LogGroupName: /shop/app}
  Role:
    Type: AWS::IAM::Role
    Properties: {AssumeRolePolicyDocument: {Version: "2012-10-17", Statement: []}}
  Policy:
    Type: AWS::IAM::RolePolicy
    Properties: {RoleName: !Ref Role, PolicyName: logs, PolicyDocument: {Version: "2012-10-17", Statement: []}}
`
	e := newEnv(t, nil)
	ctx := context.Background()
	for _, name := range []string{"first", "second"} {
		if _, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body),
			Capabilities: []types.Capability{types.CapabilityCapabilityIam}}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		e.settle(name)
	}
	if st := e.stack("first"); st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("first: %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	st := e.stack("second")
	want := "Logs CREATE_FAILED (Resource of type 'AWS::Logs::LogGroup' with identifier '/shop/app' already exists.)"
	if lines := eventLines(e.allEvents("second")); st.StackStatus != types.StackStatusRollbackComplete || !strings.Contains(strings.Join(lines, "\n"), want) {
		t.Fatalf("second: %s; want ROLLBACK_COMPLETE with %q:\n%s", st.StackStatus, want, strings.Join(lines, "\n"))
	}
	// once the first stack is gone, the name is free
	for _, name := range []string{"first", "second"} {
		if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
	}
	e.clk.Advance(time.Hour)
	e.create("third", body, nil)
	if st := e.settle("third"); st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("third: %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
}
