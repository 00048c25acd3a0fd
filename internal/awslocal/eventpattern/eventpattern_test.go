package eventpattern

import (
	"encoding/json"
	"strings"
	"testing"
)

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMatch(t *testing.T) {
	stackEvent := `{"source":"aws.cloudformation","detail-type":"CloudFormation Stack Status Change","account":"000000000000",
	  "detail":{"stack-id":"arn:aws:cloudformation:us-east-1:000000000000:stack/shop-app/1","status-details":{"status":"UPDATE_COMPLETE"}},
	  "resources":["arn:aws:cloudformation:us-east-1:000000000000:stack/shop-app/1"],"size":42,"tags":["a","b"]}`
	tests := []struct {
		pattern string
		want    bool
	}{
		{`{"source":["aws.cloudformation"]}`, true},
		{`{"source":["aws.s3","aws.cloudformation"],"detail-type":["CloudFormation Stack Status Change"]}`, true},
		{`{"source":["aws.s3"]}`, false},
		{`{"detail":{"stack-id":[{"prefix":"arn:aws:cloudformation:us-east-1:000000000000:stack/shop-"}]}}`, true},
		{`{"detail":{"stack-id":[{"prefix":"arn:aws:cloudformation:us-east-1:000000000000:stack/web-"}]}}`, false},
		{`{"detail":{"stack-id":[{"suffix":"/1"}]}}`, true},
		{`{"detail":{"status-details":{"status":[{"anything-but":["CREATE_COMPLETE","DELETE_COMPLETE"]}]}}}`, true},
		{`{"detail":{"status-details":{"status":[{"anything-but":{"prefix":"UPDATE_"}}]}}}`, false},
		{`{"detail":{"missing":[{"exists":false}]}}`, true},
		{`{"detail":{"stack-id":[{"exists":true}]}}`, true},
		{`{"detail":{"stack-id":[{"exists":false}]}}`, false},
		{`{"size":[{"numeric":[">",40,"<=",42]}]}`, true},
		{`{"size":[{"numeric":["<",42]}]}`, false},
		{`{"size":[42]}`, true},
		{`{"tags":["b"]}`, true},
		{`{"tags":["c"]}`, false},
		{`{"source":[{"equals-ignore-case":"AWS.CloudFormation"}]}`, true},
		{`{"detail":{"stack-id":[{"wildcard":"arn:*:stack/shop-*/1"}]}}`, true},
		{`{"detail":{"stack-id":[{"wildcard":"arn:*:stack/web-*"}]}}`, false},
		{`{"$or":[{"source":["aws.s3"]},{"account":["000000000000"]}]}`, true},
		{`{"$or":[{"source":["aws.s3"]},{"account":["111111111111"]}]}`, false},
		{`{"nothere":["x"]}`, false},
		{`{"detail":{"nested":{"deep":[{"exists":false}]}}}`, true},
	}
	ev := decode(t, stackEvent)
	for _, tt := range tests {
		p, err := Parse([]byte(tt.pattern))
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.pattern, err)
		}
		if got := p.Match(ev); got != tt.want {
			t.Errorf("%s matches = %v, want %v", tt.pattern, got, tt.want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tt := range []struct{ pattern, want string }{
		{`[]`, "must be a JSON object"},
		{`{"source":"aws.s3"}`, "source: match expressions must be in an array"},
		{`{"source":[]}`, "source: empty arrays are not allowed"},
		{`{"size":[{"numeric":[">"]}]}`, "numeric takes one or two comparisons"},
		{`{"size":[{"numeric":["!=",1]}]}`, "want one of = < <= > >="},
		{`{"a":[{"regex":"x"}]}`, "unrecognized match type regex"},
		{`{"$or":[{"a":["x"]}]}`, "$or takes an array of at least two patterns"},
		{`{not json`, "not valid JSON"},
	} {
		if _, err := Parse([]byte(tt.pattern)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s) = %v, want an error containing %q", tt.pattern, err, tt.want)
		}
	}
}

// FuzzParse: any input either fails to parse or yields a pattern that can match any
// document without panicking.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"source":["aws.s3"]}`, `{"a":{"b":[{"prefix":"x"},{"numeric":[">",1]}]}}`, `{"$or":[{"a":[1]},{"b":[{"exists":false}]}]}`,
		`{"a":[{"anything-but":[{"prefix":"x"},"y"]}]}`, `{"a":[{"wildcard":"*x*"}]}`} {
		f.Add(s)
	}
	doc := decode(f, `{"a":"x","b":[1,"y",null],"c":{"d":2.5}}`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse([]byte(s))
		if err != nil {
			return
		}
		p.Match(doc)
		p.Match(map[string]any{})
	})
}
