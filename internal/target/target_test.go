package target

import "testing"

func TestLocationAndKey(t *testing.T) {
	home := Target{Account: "000000000000", Region: "us-east-1"}
	tests := []struct {
		spec      Spec
		at        Target
		key, desc string
	}{
		{Spec{}, Target{}, "shop-app", "shop-app"},
		{Spec{Region: "us-east-1"}, Target{}, "shop-app", "shop-app"},
		{Spec{RoleARN: "arn:aws:iam::000000000000:role/r"}, Target{}, "shop-app", "shop-app"},
		{Spec{Region: "us-west-2"}, Target{Region: "us-west-2"}, "/us-west-2/shop-app", "shop-app (cairn's account, us-west-2)"},
		{Spec{RoleARN: "arn:aws:iam::111111111111:role/path/r"}, Target{Account: "111111111111"}, "111111111111//shop-app", "shop-app (111111111111, cairn's region)"},
		{Spec{Region: "eu-west-1", RoleARN: "arn:aws:iam::111111111111:role/r"}, Target{Account: "111111111111", Region: "eu-west-1"}, "111111111111/eu-west-1/shop-app", "shop-app (111111111111, eu-west-1)"},
	}
	for _, tc := range tests {
		at := tc.spec.Location(home)
		if at != tc.at || Key(at, "shop-app") != tc.key || Describe(at, "shop-app") != tc.desc {
			t.Errorf("%+v: at %+v key %q desc %q, want %+v %q %q", tc.spec, at, Key(at, "shop-app"), Describe(at, "shop-app"), tc.at, tc.key, tc.desc)
		}
		if gotAt, name := ParseKey(tc.key); gotAt != tc.at || name != "shop-app" {
			t.Errorf("ParseKey(%q) = %+v %q", tc.key, gotAt, name)
		}
	}
	if at, ok := OfStackID("arn:aws:cloudformation:eu-west-1:111111111111:stack/shop-app/abc"); !ok || at != (Target{Account: "111111111111", Region: "eu-west-1"}) {
		t.Errorf("OfStackID: %+v %v", at, ok)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"111111111111:eu-west-1", "1:x", ":", "", "000000000000:us-gov-west-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := Parse(s)
		if err != nil {
			return
		}
		if again, err := Parse(tg.String()); err != nil || again != tg {
			t.Fatalf("Parse(%q) = %+v, which reads back as %+v (%v)", s, tg, again, err)
		}
	})
}

func TestNamesOfWhatTheTargetStackMakes(t *testing.T) {
	at := Target{Account: "111111111111", Region: "eu-west-1"}
	for _, tc := range []struct{ got, want string }{
		{at.DeployRoleARN(), "arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1"},
		{at.PortsTopicARN(), "arn:aws:sns:eu-west-1:111111111111:cairn-ports"},
		{at.AssetsBucketName(), "cairn-assets-111111111111-eu-west-1"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s, want %s", tc.got, tc.want)
		}
	}
}
