package resourcespec

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestLookup(t *testing.T) {
	q := Lookup("AWS::SQS::Queue")
	if q == nil || q.Properties.Kind != Object || !q.Properties.Closed {
		t.Fatalf("AWS::SQS::Queue = %+v", q)
	}
	if p := q.Properties.Properties["VisibilityTimeout"]; p == nil || p.Kind != Integer {
		t.Errorf("VisibilityTimeout = %+v", p)
	}
	if tags := q.Properties.Properties["Tags"]; tags == nil || tags.Kind != List || tags.Elem.Kind != Object || !slices.Equal(tags.Elem.Required, []string{"Key", "Value"}) {
		t.Errorf("Tags = %+v", tags)
	}
	if !q.HasAttribute("Arn") || !q.HasAttribute("RedrivePolicy.maxReceiveCount") || q.HasAttribute("Url") {
		t.Errorf("attributes %v", q.Attributes)
	}
	if s := Lookup("AWS::CloudFormation::Stack"); s == nil || !s.HasAttribute("Outputs.Anything") {
		t.Error("stack outputs are a pattern attribute")
	}
	sg := Lookup("AWS::EC2::SecurityGroup").Properties
	if in := sg.Properties["SecurityGroupIngress"]; in.Kind != List || !slices.Equal(in.Elem.Required, []string{"IpProtocol"}) {
		t.Errorf("SecurityGroupIngress = %+v", in.Elem)
	}
	if !slices.Equal(Lookup("AWS::SSM::Parameter").Properties.Required, []string{"Type", "Value"}) {
		t.Error("AWS::SSM::Parameter requires Type and Value")
	}
	if Lookup("AWS::SQS::Queu") != nil {
		t.Error("a misspelt type has a specification")
	}
	if Lookup("AWS::SQS::Queue") != q {
		t.Error("a type is decoded once and shared")
	}
	for typ, attrs := range map[string][2]string{
		"AWS::EC2::NetworkInterface":      {"SecondaryPrivateIpAddresses", "PrimaryPrivateIpAddress"},
		"AWS::DirectoryService::SimpleAD": {"DnsIpAddresses", "Alias"},
		"AWS::EC2::VPC":                   {"Ipv6CidrBlocks", "VpcId"},
	} {
		if st := Lookup(typ); !st.ListAttribute(attrs[0]) || st.ListAttribute(attrs[1]) {
			t.Errorf("%s: %s should be a list attribute and %s not", typ, attrs[0], attrs[1])
		}
	}
	cr := Lookup("AWS::EC2::CapacityReservation")
	if cr.ScalarAttribute("InstanceCount") != Integer || cr.ScalarAttribute("EphemeralStorage") != Boolean || cr.ScalarAttribute("Id") != Any {
		t.Errorf("capacity reservation attribute kinds: InstanceCount %v, EphemeralStorage %v, Id %v", cr.ScalarAttribute("InstanceCount"), cr.ScalarAttribute("EphemeralStorage"), cr.ScalarAttribute("Id"))
	}
	if Lookup("AWS::DocDB::DBCluster").ScalarAttribute("Port") != Any {
		t.Error("a DocDB cluster's Port attribute is text")
	}
	if n := Lookup("AWS::Logs::LogGroup").NameProperty; n != "LogGroupName" {
		t.Errorf("the name of a log group is %q", n)
	}
	if n := Lookup("AWS::EC2::VPC").NameProperty; n != "" {
		t.Errorf("a VPC's identifier is AWS's, yet its name property is %q", n)
	}
	if r, ok := LookupRuntime("python2.7"); !ok || r.Deprecated == "" {
		t.Errorf("python2.7 = %+v", r)
	}
	if Version() == "" {
		t.Error("no version")
	}
}

// TestEveryTypeDecodes: spec.txt.gz is whole (make spec regenerated it completely).
func TestEveryTypeDecodes(t *testing.T) {
	names := TypeNames()
	if len(names) < 1000 {
		t.Fatalf("%d types", len(names))
	}
	for _, n := range names {
		if st := Lookup(n); st == nil || st.Properties == nil || st.Properties.Kind != Object && st.Properties.Kind != Map {
			t.Fatalf("%s: %+v", n, st)
		}
	}
}

// BenchmarkLoad is what a process pays once, at its first lookup: inflating and indexing
// the embedded specification, then decoding the types a template of the web shop uses.
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		ix := build(text())
		ix.mu.Lock()
		for _, t := range []string{"AWS::EC2::VPC", "AWS::ECS::Service", "AWS::ElasticLoadBalancingV2::LoadBalancer", "AWS::IAM::Role", "AWS::Lambda::Function"} {
			var raw struct {
				S int `json:"s"`
			}
			if err := json.Unmarshal([]byte(ix.types[t]), &raw); err != nil {
				b.Fatal(err)
			}
			ix.shape(raw.S)
		}
		ix.mu.Unlock()
	}
	b.ReportMetric(float64(len(compressed))/1024, "KiB-embedded")
}
