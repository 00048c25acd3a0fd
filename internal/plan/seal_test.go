package plan

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/sealkey"
)

// macKMS answers GenerateMac as a KMS HMAC_256 key of its material does.
type macKMS []byte

func (m macKMS) GenerateMac(_ context.Context, in *kms.GenerateMacInput, _ ...func(*kms.Options)) (*kms.GenerateMacOutput, error) {
	h := hmac.New(sha256.New, m)
	h.Write(in.Message)
	return &kms.GenerateMacOutput{KeyId: in.KeyId, Mac: h.Sum(nil)}, nil
}

// testKey is a seal key derived, as the deployer derives it, from a KMS key of material.
func testKey(t *testing.T, material string) seal.Key {
	t.Helper()
	k, err := sealkey.FromKMS(context.Background(), macKMS(material), "test-key")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestGraphSealedWithoutAKeyStaysUnchanged: a graph written by a cairn before keyed seals
// holds the hashes of parameters whose secrets (a NoEcho value of the bundle, a
// SecureString, a NoEcho value read from an output) were sealed without a key. A keyed
// deployer finds such a stack unchanged (no update, no refusal of the protected stack),
// keeps the graph's hash for it, and still sees a changed secret as a change.
func TestGraphSealedWithoutAKeyStaysUnchanged(t *testing.T) {
	const tmplSecrets = `
      Parameters:
        Literal: {Type: String, NoEcho: true}
        Password: {Type: String, NoEcho: true}
        FromOutput: {Type: String, NoEcho: true}
        Plain: {Type: String}
      Resources:
        Topic: {Type: AWS::SNS::Topic}
      Outputs:
        Out: {Value: !Ref Topic}`
	cfg := func(literal string) *config.Config {
		y := "namespace: shop\nstacks:\n  - name: net\n    template_body: |" + tmpl + "\n" +
			"  - name: db\n    protected: true\n    parameters: {Literal: '" + literal + "', Password: '${ssm /shop/pw}', FromOutput: '${output net::Out}', Plain: p}\n    template_body: |" + tmplSecrets + "\n"
		c, err := config.LoadOptions{Deployment: "shop"}.Load(bundle.FromYAML("cairn.yaml", []byte(y)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	key := testKey(t, "one")
	ssmOf := func(k seal.Key, pw string) map[string]config.SSMValue {
		return map[string]config.SSMValue{"/shop/pw": config.NewSSMValue(k, "/shop/pw", config.SecureString, pw, 1)}
	}
	before := cfg("hunter2")
	live := liveOf(before, "net", "db")
	g := appliedAs(t, seal.Unkeyed, before, live, ssmOf(seal.Unkeyed, "pw-1"))
	old := g.Stacks["db"].ParametersHash

	res := mustMake(t, Input{Config: cfg("hunter2"), Graph: g, Live: live, SSM: ssmOf(key, "pw-1"), Key: key})
	db := res.Run.Stacks["db"]
	if len(res.Refusals) > 0 || actions(res)["db"] != Check || db.KeptParametersHash != old || db.PrevParametersHash == old {
		t.Fatalf("unchanged secrets: refusals %q, db %s, kept %q (graph %q), prev %q", res.Refusals, actions(res)["db"], db.KeptParametersHash, old, db.PrevParametersHash)
	}
	if !strings.Contains(db.RawParameters["Literal"], "@"+seal.Marker) {
		t.Errorf("the run stores the bundle's NoEcho value as %q, want a keyed seal", db.RawParameters["Literal"])
	}
	// The run compares with the keyed hash of the same values: unchanged, recorded with
	// the graph's hash (state.Record), which the stack's tags hold too.
	got, _ := run.Advance(res.Run, nil, res.Run.StartedAt, run.Options{Resolve: Resolver(res.Run, map[string][]config.Lookup{"db": cfg("hunter2").Stack("db").StoredLookups()}, ssmOf(key, "pw-1")), Seal: Seal(key)})
	if s := got.Stacks["db"]; s.Phase != run.Unchanged {
		t.Errorf("run: db %s (%s), want unchanged", s.Phase, s.Reason)
	}
	for name, tc := range map[string]struct {
		literal, pw string
	}{"a changed NoEcho value": {"hunter3", "pw-1"}, "a changed SecureString": {"hunter2", "pw-2"}} {
		res := mustMake(t, Input{Config: cfg(tc.literal), Graph: g, Live: live, SSM: ssmOf(key, tc.pw), Key: key})
		if actions(res)["db"] != Update || !strings.Contains(strings.Join(res.Refusals, "\n"), "protected stack(s) db change only") {
			t.Errorf("%s: db %s, refusals %q", name, actions(res)["db"], res.Refusals)
		}
	}
}

// TestSealsAreKeyed: with a key, what a run stores of a NoEcho value and a SecureString is
// a keyed seal, which differs under another key and from the unkeyed hash of the value.
func TestSealsAreKeyed(t *testing.T) {
	rs := &run.Stack{Name: "db", NoEcho: []string{"Password"}}
	params := map[string]string{"Password": "hunter2", "Plain": "p"}
	one, two := Seal(testKey(t, "one"))(rs, params), Seal(testKey(t, "two"))(rs, params)
	unkeyed := Seal(seal.Unkeyed)(rs, params)
	if !strings.HasPrefix(one["Password"], "{{cairn:noecho@"+seal.Marker) || one["Password"] == two["Password"] || one["Password"] == unkeyed["Password"] || one["Plain"] != "p" {
		t.Errorf("sealed %v, under another key %v, unkeyed %v", one, two, unkeyed)
	}
	if v := config.NewSSMValue(testKey(t, "one"), "/pw", config.SecureString, "hunter2", 1); !seal.IsKeyed(v.Hash) || v.Unkeyed == "" || v.Value != "" {
		t.Errorf("SecureString kept as %+v", v)
	}
}
