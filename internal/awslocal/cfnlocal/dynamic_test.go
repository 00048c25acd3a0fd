package cfnlocal

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzResolveRefs: resolving the dynamic references of any property tree never panics,
// leaves the given properties unchanged, and, when every reference resolves, leaves none
// behind.
func FuzzResolveRefs(f *testing.F) {
	f.Add("{{resolve:ssm:/a/b}}", "x-{{resolve:secretsmanager:arn:aws:secretsmanager:us-east-1:1:secret:s-abcdef:SecretString:k}}-y", true)
	f.Add("{{resolve:ssm-secure:p:3}}{{resolve:ssm:q}}", "{{resolve:nope:x}}", false)
	f.Add("{{resolve:ssm:}}", "{{{{resolve:ssm:a}}}}", true)
	f.Fuzz(func(t *testing.T, a, b string, secure bool) {
		s := &Service{o: Options{DynamicReference: func(service, key string) (string, error) {
			return "<" + service + ">", nil
		}}}
		props := map[string]any{"A": a, "L": []any{b, map[string]any{"B": b}}}
		before := fmt.Sprint(props)
		out, err := s.resolveRefs(props, secure)
		if err != nil {
			t.Fatalf("a resolver that never fails: %v", err)
		}
		if fmt.Sprint(props) != before {
			t.Fatal("resolveRefs changed the properties it was given")
		}
		left := fmt.Sprint(out)
		for _, m := range dynamicRef.FindAllStringSubmatch(left, -1) {
			if secure || m[1] == "ssm" {
				// Only a reference made up by joining a resolved value with its neighbours may remain.
				if strings.Contains(a+b, m[0]) {
					t.Fatalf("reference %s left unresolved in %v", m[0], out)
				}
			}
		}
	})
}
