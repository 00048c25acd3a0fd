package spec

import (
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
