package template

import "testing"

// TestSchemaPatterns: the provider schemas' patterns are Java's regular expressions,
// searched (not anchored), with $ before a final newline; Java's POSIX classes and
// needless escapes are read as Java reads them.
func TestSchemaPatterns(t *testing.T) {
	tests := []struct {
		pattern, value string
		want           bool
	}{
		{`[a-z]+`, "ABC-def", true},
		{`^[a-z]+$`, "abc\n", true},
		{`^[a-z]+$`, "abc\n\n", false},
		{`^[\p{Graph}\x20]*$`, "a b!~", true},
		{`^[\p{Graph}\x20]*$`, "a\tb", false},
		{`^\p{Print}+$`, "printable text", true},
		{`^(?!aws:.*)[a-zA-Z0-9\s\_\.\/\=\+\-\@\:]+$`, "my_tag", true},
		{`^(?!aws:.*)[a-zA-Z0-9\s\_\.\/\=\+\-\@\:]+$`, "aws:reserved", false},
		{`^[\u0009\u000A\u000D\u0020-\u00FF]+$`, "policy text", true},
	}
	for _, tt := range tests {
		got, err := searchPattern(tt.pattern, tt.value)
		if err != nil || got != tt.want {
			t.Errorf("searchPattern(%q, %q) = %v, %v; want %v", tt.pattern, tt.value, got, err, tt.want)
		}
	}
}
