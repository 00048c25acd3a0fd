package template

import (
	"errors"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"
)

// TestJavaAllowedPatterns: an AllowedPattern is judged as Java's java.util.regex judges it.
// Java's POSIX and java.lang.Character classes, \Q..\E, possessive quantifiers, \h and
// \x{..} are accepted; a syntax error Java reports too is refused; a construct cairn does
// not translate is accepted and refuses no value.
func TestJavaAllowedPatterns(t *testing.T) {
	tests := []struct {
		pattern, value string
		match          bool
		invalid        bool
	}{
		{`\p{Print}*`, "hello world!", true, false},
		{`\p{Print}*`, "tab\there", false, false},
		{`\p{Alpha}+`, "abc", true, false},
		{`\p{Alpha}+`, "abc1", false, false},
		{`\P{Alpha}+`, "123", true, false},
		{`[\p{Alpha}\p{Digit}_-]{3,}`, "a1_-", true, false},
		{`[^\p{Punct}]+`, "a!", false, false},
		{`\p{Punct}+`, "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", true, false},
		{`\p{Graph}+`, "a b", false, false},
		{`\p{Alnum}\p{Upper}\p{Lower}\p{XDigit}\p{Blank}\p{Space}\p{Cntrl}\p{ASCII}`, "1Aaf \n\x01z", true, false},
		{`\p{javaLowerCase}+\p{IsAlphabetic}\p{L}\p{Lu}\p{IsLu}`, "abcéxAB", true, false},
		{`\p{InGreek}+`, "αβ", true, false},
		{`\pL+`, "abc", true, false},
		{`\Qa.b\E`, "a.b", true, false},
		{`\Qa.b\E`, "axb", false, false},
		{`a++b`, "aab", true, false},
		{`a{2}+`, "aa", true, false},
		{`\d+\h\x{41}`, "12 A", true, false},
		{`(?u)[a-z]+`, "abc", true, false},
		{`[a-z&&[^aeiou]]+`, "xyz", true, false},
		{`\p{IsLatin}+`, "abc", true, false}, // a script: not translated, refuses nothing
		{`[\p{Alpha}`, "", false, true},
		{`(ab`, "", false, true},
		{`ab)`, "", false, true},
		{`*a`, "", false, true},
		{`[z-a]`, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			_, _, err := pattern(tt.pattern)
			if tt.invalid {
				if err == nil || errors.Is(err, errUnjudged) {
					t.Fatalf("pattern %q: error %v, want a syntax error", tt.pattern, err)
				}
				return
			}
			if err != nil && !errors.Is(err, errUnjudged) {
				t.Fatalf("pattern %q refused: %v", tt.pattern, err)
			}
			got, err := MatchPattern(tt.pattern, tt.value)
			if err != nil || got != tt.match {
				t.Errorf("MatchPattern(%q, %q) = %v, %v; want %v", tt.pattern, tt.value, got, err, tt.match)
			}
		})
	}
}

// FuzzJavaPattern: any AllowedPattern is judged without a panic, and a pattern cairn
// refuses as Java's syntax error is refused by regexp2 as written too.
func FuzzJavaPattern(f *testing.F) {
	for _, s := range []string{`\p{Print}*`, `[\p{Alpha}&&[^a]]+`, `\Qa.b\E`, `a++`, `\x{1F600}`, `(?u)x`, `[`, `\`, `\p{`, `\x{`, `a{2,}+`} {
		f.Add(s, "value")
	}
	f.Fuzz(func(t *testing.T, p, value string) {
		_, _, err := pattern(p)
		MatchPattern(p, value)
		if err != nil && !errors.Is(err, errUnjudged) {
			if _, err2 := regexp2.Compile(p); err2 == nil {
				// the rewrite broke a pattern regexp2 takes as it is: only a Java-only
				// construct may do that, which the refusals list does not hold
				t.Errorf("pattern %q refused (%v), though it compiles as written", p, err)
			}
		}
	})
}

// TestHostilePatternIsBounded: an AllowedPattern written to backtrack catastrophically
// (a bundle is anyone's input, and the deployer validates it) gives up after its match
// budget instead of holding validate or the deployer: it answers, one way or the other.
func TestHostilePatternIsBounded(t *testing.T) {
	value := strings.Repeat("a", 40) + "!"
	ok, err := MatchPattern(`(a+)+$`, value)
	if ok {
		t.Errorf("MatchPattern((a+)+$, %q) = true, want no match (or a timeout)", value)
	}
	t.Logf("catastrophic pattern: match %v, err %v", ok, err)
}
