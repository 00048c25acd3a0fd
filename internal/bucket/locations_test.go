package bucket

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

const locBucket = "cairn-000000000000-us-east-1"

var (
	sha64     = strings.Repeat("a", 64)
	goodTmpl  = "templates/" + sha64 + ".json"
	goodAsset = "assets/" + sha64 + ".zip"
)

func lit(s string) []Part          { return []Part{{Text: s}} }
func unknown(what string) Part     { return Part{Unknown: what} }
func parts(p ...Part) []Part       { return p }
func text(s string) Part           { return Part{Text: s} }
func obj(b, k []Part) Location     { return Location{Object: true, Bucket: b, Key: k} }
func urlOf(p ...Part) Location     { return Location{URL: p} }
func own(what string) Part         { return Part{Unknown: what, Own: true} }
func literalURL(s string) Location { return URLLocation(s) }
func verdict(err error) string {
	switch {
	case err == nil:
		return "ok"
	case IsUnsure(err):
		return "unsure"
	}
	return "refused"
}

// TestCheckLocation is the rule every S3 location of a template passes: literal URLs of
// every style S3 reads, the object form (Code's S3Bucket/S3Key), and locations computed
// from values cairn does not know.
func TestCheckLocation(t *testing.T) {
	const name = locBucket
	tests := []struct {
		name string
		loc  Location
		want string // ok, refused (names an object), unsure (may name one)
	}{
		{"uploaded template", literalURL("https://" + name + ".s3.amazonaws.com/" + goodTmpl), "ok"},
		{"packaged asset", literalURL("s3://" + name + "/" + goodAsset), "ok"},
		{"asset without extension", obj(lit(name), lit("assets/"+sha64)), "ok"},
		{"state, virtual-hosted", literalURL("https://" + name + ".s3.amazonaws.com/state/shop/shop.json"), "refused"},
		{"runs, regional", literalURL("https://" + name + ".s3.eu-west-1.amazonaws.com/runs/shop/x.json"), "refused"},
		{"plans, dual-stack", literalURL("https://" + name + ".s3.dualstack.eu-west-1.amazonaws.com/plans/shop/x.json"), "refused"},
		{"state, path style", literalURL("https://s3.amazonaws.com/" + name + "/state/shop/shop.json"), "refused"},
		{"deployments, regional path style", literalURL("https://s3.us-east-1.amazonaws.com/" + name + "/deployments/shop.zip"), "refused"},
		{"emulator endpoint", literalURL("http://127.0.0.1:4566/" + name + "/state/shop/shop.json"), "refused"},
		{"locks, s3://", literalURL("s3://" + name + "/locks/shop/shop.lock"), "refused"},
		{"dot segments", literalURL("https://" + name + ".s3.amazonaws.com/templates/../state/shop/shop.json"), "refused"},
		{"escaped dot segments", literalURL("https://" + name + ".s3.amazonaws.com/templates%2F..%2Fstate/shop.json"), "refused"},
		{"double slash", literalURL("https://" + name + ".s3.amazonaws.com/templates//x.json"), "refused"},
		{"templates/ other than SHA256.json", literalURL("s3://" + name + "/templates/evil.yaml"), "refused"},
		{"assets/ other than SHA256.EXT", literalURL("s3://" + name + "/assets/victim/code.zip"), "refused"},
		{"upper-case host", literalURL("https://S3.AMAZONAWS.COM/" + name + "/state/x.json"), "refused"},
		{"userinfo and port", literalURL("https://me@s3.amazonaws.com:443/" + name + "/ports/p.json"), "refused"},
		{"query string", literalURL("https://s3.amazonaws.com/" + name + "/drift/x.json?versionId=1"), "refused"},
		{"another bucket", literalURL("https://other-bucket.s3.amazonaws.com/state/shop/shop.json"), "ok"},
		{"another bucket's path", literalURL("https://s3.amazonaws.com/other-bucket/" + name + "/x.json"), "ok"},
		{"another bucket, virtual-hosted, cairn's name in the path", literalURL("https://other.s3.amazonaws.com/" + name + "/state/x.json"), "ok"},
		{"a longer name", literalURL("https://" + name + "-other.s3.amazonaws.com/state/x.json"), "ok"},
		{"not S3", literalURL("https://example.com/template.yaml"), "ok"},
		{"a bundle path", literalURL("templates/network.yaml"), "ok"},
		{"object form: another deployment's bundle", obj(lit(name), lit("deployments/victim.zip")), "refused"},
		{"object form: a graph", obj(lit(name), lit("state/victim/victim.json")), "refused"},
		{"object form: another bucket", obj(lit("my-artifacts"), lit("state/x.zip")), "ok"},
		{"object form: cairn's bucket, key unknown", obj(lit(name), parts(text("assets/"), unknown("parameter Hash"))), "unsure"},
		{"object form: bucket imported", obj(parts(unknown("Fn::ImportValue shared")), lit("fn.zip")), "unsure"},
		{"object form: bucket of a prefix that is not cairn's", obj(parts(text("team-"), unknown("parameter Env")), lit("fn.zip")), "ok"},
		{"object form: bucket of a prefix that could be cairn's", obj(parts(text("cairn-"), unknown("AWS::AccountId"), text("-us-east-1")), lit("fn.zip")), "unsure"},
		{"object form: the template's own bucket", obj(parts(own("Ref Artifacts")), lit("state/x")), "ok"},
		{"URL: host unknown", urlOf(text("https://"), unknown("parameter Bucket"), text(".s3.amazonaws.com/state/x.json")), "unsure"},
		{"URL: the template's own bucket's domain", urlOf(text("https://"), own("Fn::GetAtt Artifacts.RegionalDomainName"), text("/x.yaml")), "ok"},
		{"URL: all of it unknown", urlOf(unknown("Fn::ImportValue url")), "unsure"},
		{"URL: cairn's bucket, key unknown", urlOf(text("https://"+name+".s3.amazonaws.com/"), unknown("parameter Key")), "unsure"},
		{"URL: path style, bucket unknown", urlOf(text("https://s3.amazonaws.com/"), unknown("parameter Bucket"), text("/state/x.json")), "unsure"},
		{"URL: path style, unknown after another bucket", urlOf(text("https://s3.amazonaws.com/mine/"), unknown("parameter Key")), "ok"},
		{"URL: another bucket, key unknown", urlOf(text("https://mine.s3.amazonaws.com/"), unknown("parameter Key")), "ok"},
		{"URL: a hole in the scheme", urlOf(unknown("parameter Scheme"), text("://"+name+"/state/x")), "unsure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckLocation(tt.loc, name)
			if got := verdict(err); got != tt.want {
				t.Fatalf("CheckLocation = %v, want %s", err, tt.want)
			}
			switch tt.want {
			case "refused":
				if !strings.Contains(err.Error(), "an object of cairn's own bucket: a template may name cairn's bucket only at the templates and artifacts cairn uploads itself (templates/SHA256.json, assets/SHA256.EXT)") {
					t.Errorf("message: %v", err)
				}
			case "unsure":
				if !strings.Contains(err.Error(), "which cairn cannot know before CloudFormation does, so it could name an object of cairn's own bucket") {
					t.Errorf("message: %v", err)
				}
			}
			if err := CheckLocation(tt.loc, ""); err != nil {
				t.Errorf("no bucket known: %v", err)
			}
		})
	}
	if err := CheckTemplateURL("s3://"+name+"/state/a.json", name); err == nil || !strings.HasPrefix(err.Error(), `"s3://`+name+`/state/a.json" names s3://`+name+"/state/a.json") {
		t.Errorf("CheckTemplateURL: %v", err)
	}
}

// holed is loc's URL with bytes i to j replaced by one unknown part.
func holed(u string, i, j int) Location {
	return urlOf(text(u[:i]), unknown("the value at "+u[i:j]), text(u[j:]))
}

// unknownNeverHides is the rule's property: a location refused when spelled out is refused
// (as unsure, or as naming the object) whatever part of it is computed instead, since the
// unknown part could be exactly the text it replaces.
func unknownNeverHides(t interface{ Fatalf(string, ...any) }, u string, i, j int) {
	if CheckLocation(URLLocation(u), locBucket) == nil {
		return
	}
	if err := CheckLocation(holed(u, i, j), locBucket); err == nil {
		t.Fatalf("%q is refused, but with %q unknown it passes", u, u[i:j])
	}
}

// TestUnknownPartsNeverHideARefusal draws URLs of every style naming any key of cairn's
// bucket or of others, and replaces any part of each by an unknown value.
func TestUnknownPartsNeverHideARefusal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SampledFrom([]string{locBucket, "other", locBucket + "-x", "cairn"}).Draw(t, "bucket")
		key := rapid.SampledFrom([]string{"state/shop/shop.json", goodTmpl, goodAsset, "deployments/v.zip", "templates/../state/x", "assets/" + sha64 + "/x", "approvals/a/1", ""}).Draw(t, "key")
		form := rapid.SampledFrom([]string{"s3://%b/%k", "https://%b.s3.amazonaws.com/%k", "https://%b.s3.eu-west-1.amazonaws.com/%k", "https://s3.amazonaws.com/%b/%k", "http://127.0.0.1:4566/%b/%k", "https://%b/%k", "https://h.s3.amazonaws.com/%b/%k"}).Draw(t, "form")
		u := strings.NewReplacer("%b", b, "%k", key).Replace(form)
		i := rapid.IntRange(0, len(u)).Draw(t, "i")
		j := rapid.IntRange(i, len(u)).Draw(t, "j")
		unknownNeverHides(t, u, i, j)
		// the object form: any part of the bucket or key unknown
		if CheckLocation(obj(lit(b), lit(key)), locBucket) != nil {
			bi := rapid.IntRange(0, len(b)).Draw(t, "bi")
			bj := rapid.IntRange(bi, len(b)).Draw(t, "bj")
			if CheckLocation(obj(parts(text(b[:bi]), unknown("b"), text(b[bj:])), lit(key)), locBucket) == nil {
				t.Fatalf("bucket %q key %q refused, but not with %q unknown", b, key, b[bi:bj])
			}
		}
	})
}

// FuzzCheckLocation: the same property on any text (seeds in testdata/fuzz/FuzzCheckLocation
// at the repository root, one URL a file).
func FuzzCheckLocation(f *testing.F) {
	seeds, err := filepath.Glob("../../testdata/fuzz/FuzzCheckLocation/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(strings.TrimSpace(string(b)), 8, 20)
	}
	f.Fuzz(func(t *testing.T, u string, i, j int) {
		if i < 0 || j < i || j > len(u) {
			return
		}
		unknownNeverHides(t, u, i, j)
	})
}
