//go:build !cairn.lambda

package template

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dlclark/regexp2/v2/syntax"
)

// An AllowedPattern is a regular expression of Java's java.util.regex (CloudFormation
// compiles it with that engine). regexp2, which judges it here, speaks .NET's dialect, which
// lacks some of Java's: the POSIX and java.lang.Character classes (\p{Print}, \p{Alpha},
// \p{javaLowerCase}), \Q...\E quoting, possessive quantifiers, \h, \v, \R and \x{...}.
// javaToNET rewrites those into .NET's syntax. exact is false when the rewrite only
// approximates Java's meaning (a possessive quantifier becomes a greedy one, a class
// intersection or a script is not translated): a value is then not refused on its strength.
func javaToNET(p string) (out string, exact bool) {
	var b strings.Builder
	exact = true
	inClass := 0
	quantified := false // the last thing written is a quantifier (*, +, ?, {n,m})
	for i := 0; i < len(p); i++ {
		c := p[i]
		wasQuantified := quantified
		quantified = false
		switch {
		case c == '\\' && i+1 < len(p):
			var ok bool
			i, ok = javaEscape(&b, p, i, inClass > 0)
			exact = exact && ok
		case c == '[':
			if inClass > 0 && i+1 < len(p) && p[i+1] == ':' {
				b.WriteString(`\[`) // a literal [ in Java, a POSIX bracket in .NET
				continue
			}
			if inClass > 0 {
				exact = false // a nested class (a union in Java): its members join the outer class
				inClass++
				continue
			}
			inClass++
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' { // a leading ] is a literal in Java
				b.WriteString(`\]`)
				i++
			}
		case c == ']' && inClass > 0:
			inClass--
			if inClass == 0 {
				b.WriteByte(c)
			}
		case c == '&' && inClass > 0 && i+1 < len(p) && p[i+1] == '&':
			exact = false // an intersection: approximated by the union
			i++
		case c == '+' && inClass == 0 && wasQuantified:
			exact = false // possessive: matched greedily
		case c == '?' && inClass == 0 && wasQuantified:
			b.WriteByte(c) // lazy
		case (c == '*' || c == '+' || c == '?') && inClass == 0:
			b.WriteByte(c)
			quantified = true
		case c == '{' && inClass == 0 && repetition.MatchString(p[i:]):
			n := len(repetition.FindString(p[i:]))
			b.WriteString(p[i : i+n])
			i += n - 1
			quantified = true
		case c == '(' && inClass == 0 && strings.HasPrefix(p[i:], "(?") && i+2 < len(p) && strings.IndexByte("idmsuxU-", p[i+2]) >= 0:
			// embedded flags: .NET lacks d (UNIX_LINES), u (UNICODE_CASE) and U (UNICODE_CHARACTER_CLASS)
			j := i + 2
			for j < len(p) && strings.IndexByte("idmsuxU-", p[j]) >= 0 {
				j++
			}
			flags := p[i+2 : j]
			kept := strings.Map(func(r rune) rune {
				if r == 'd' || r == 'u' || r == 'U' {
					return -1
				}
				return r
			}, flags)
			if kept != flags {
				exact = false
			}
			if j < len(p) && p[j] == ')' && (kept == "" || kept == "-") {
				i = j
				continue
			}
			if kept == "-" {
				kept = ""
			}
			b.WriteString("(?" + kept)
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), exact
}

// javaEscape writes the .NET form of the escape at p[i] (a backslash followed by at least
// one byte) to b, inside a character class or not, and returns the index of the last byte
// it read and whether the rewrite is exact (see javaToNET).
func javaEscape(b *strings.Builder, p string, i int, inClass bool) (last int, exact bool) {
	c, next := p[i], p[i+1]
	switch next {
	case 'Q':
		end := strings.Index(p[i+2:], `\E`)
		lit := p[i+2:]
		last = len(p)
		if end >= 0 {
			lit = p[i+2 : i+2+end]
			last = i + 2 + end + 1
		}
		if inClass {
			for _, r := range lit {
				if strings.ContainsRune(`\]^-[`, r) {
					b.WriteByte('\\')
				}
				b.WriteRune(r)
			}
		} else {
			b.WriteString(regexp.QuoteMeta(lit))
		}
		return last, true
	case 'E': // a \E without \Q is ignored
		return i + 1, true
	case 'p', 'P':
		name, n := propertyName(p[i+2:])
		if n == 0 {
			b.WriteByte(c)
			b.WriteByte(next)
			return i + 1, true
		}
		cls, ok := javaProperty(name, next == 'P', inClass)
		b.WriteString(cls)
		return i + 1 + n, ok
	case 'h', 'H':
		writeClass(b, `\t \xA0\u1680\u180E\u2000-\u200A\u202F\u205F\u3000`, next == 'H', inClass)
	case 'v', 'V':
		writeClass(b, `\n\x0B\f\r\x85\u2028\u2029`, next == 'V', inClass)
	case 'R':
		b.WriteString(`(?:\r\n|[\n\x0B\f\r\x85\u2028\u2029])`)
	case 'X':
		b.WriteString(`(?:\P{M}\p{M}*)`)
	case '_':
		b.WriteByte('_')
	case 'x':
		if i+2 < len(p) && p[i+2] == '{' {
			if j := strings.IndexByte(p[i:], '}'); j > 0 {
				hex := p[i+3 : i+j]
				var r rune
				if _, err := fmt.Sscanf(hex, "%x", &r); err == nil && len(hex) <= 6 {
					if r <= 0xFFFF {
						fmt.Fprintf(b, `\u%04X`, r)
					} else {
						b.WriteString(regexp.QuoteMeta(string(r)))
					}
					return i + j, true
				}
			}
		}
		b.WriteString(`\x`)
	default:
		b.WriteByte(c)
		b.WriteByte(next)
	}
	return i + 1, true
}

var repetition = regexp.MustCompile(`^\{[0-9]+(,[0-9]*)?\}`)

// propertyName reads the name after \p: {Name} or one letter. n is the bytes read.
func propertyName(s string) (name string, n int) {
	if s == "" {
		return "", 0
	}
	if s[0] != '{' {
		return s[:1], 1
	}
	j := strings.IndexByte(s, '}')
	if j < 0 {
		return "", 0
	}
	return s[1:j], j + 1
}

// javaPOSIXClasses are the members of Java's POSIX classes (US-ASCII only, as Java has
// them without UNICODE_CHARACTER_CLASS).
var javaPOSIXClasses = map[string]string{
	"Lower":  `a-z`,
	"Upper":  `A-Z`,
	"ASCII":  `\x00-\x7F`,
	"Alpha":  `a-zA-Z`,
	"Digit":  `0-9`,
	"Alnum":  `a-zA-Z0-9`,
	"Punct":  `!-/:-@\[-` + "`" + `{-~`,
	"Graph":  `!-~`,
	"Print":  ` -~`,
	"Blank":  ` \t`,
	"Cntrl":  `\x00-\x1F\x7F`,
	"XDigit": `0-9a-fA-F`,
	"Space":  ` \t\n\x0B\f\r`,
	// java.lang.Character's classes and the Unicode binary properties, as .NET categories
	"javaLowerCase":     `\p{Ll}`,
	"javaUpperCase":     `\p{Lu}`,
	"javaWhitespace":    `\t-\r\x1C-\x1F\p{Zs}\p{Zl}\p{Zp}`,
	"javaMirrored":      `()<>\[\]{}`,
	"javaLetter":        `\p{L}`,
	"javaDigit":         `\p{Nd}`,
	"javaLetterOrDigit": `\p{L}\p{Nd}`,
	"javaAlphabetic":    `\p{L}\p{Nl}`,
	"IsAlphabetic":      `\p{L}\p{Nl}`,
	"IsLetter":          `\p{L}`,
	"IsDigit":           `\p{Nd}`,
	"IsUppercase":       `\p{Lu}`,
	"IsLowercase":       `\p{Ll}`,
	"IsWhite_Space":     `\t-\r \x85\xA0\p{Z}`,
	"IsWhiteSpace":      `\t-\r \x85\xA0\p{Z}`,
	"IsPunctuation":     `\p{P}`,
	"IsControl":         `\p{Cc}`,
	"IsHex_Digit":       `0-9a-fA-F\uFF10-\uFF19\uFF21-\uFF26\uFF41-\uFF46`,
	"IsHexDigit":        `0-9a-fA-F\uFF10-\uFF19\uFF21-\uFF26\uFF41-\uFF46`,
	"IsIdeographic":     `\p{Lo}`,
	"IsAssigned":        `\P{Cn}`,
}

var unicodeCategories = map[string]bool{}

func init() {
	for _, c := range strings.Fields("L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So Z Zs Zl Zp C Cc Cf Cs Co Cn LC") {
		unicodeCategories[c] = true
	}
}

// javaProperty is the .NET spelling of Java's \p{name} (\P{name} when negated). ok is false
// when it only approximates it (a script, which .NET lacks, matches any letter).
func javaProperty(name string, negated, inClass bool) (string, bool) {
	if members, ok := javaPOSIXClasses[name]; ok {
		return classOf(members, negated, inClass)
	}
	cat := name
	for _, prefix := range []string{"Is", "gc=", "general_category=", "IsGeneral_Category="} {
		cat = strings.TrimPrefix(cat, prefix)
	}
	if cat == "L&" {
		cat = "LC"
	}
	if unicodeCategories[cat] {
		if cat == "LC" {
			return classOf(`\p{Lu}\p{Ll}\p{Lt}`, negated, inClass)
		}
		return escapeP(cat, negated), true
	}
	if block, ok := strings.CutPrefix(name, "In"); ok { // a Unicode block: .NET writes \p{IsBlock}
		block = strings.NewReplacer(" ", "", "_", "", "-", "").Replace(block)
		if _, err := regexp2.Compile(`\p{Is` + block + `}`); err == nil {
			return escapeP("Is"+block, negated), true
		}
	}
	// A script (\p{IsLatin}, \p{script=Greek}) or a name Java may know and .NET does not.
	if inClass {
		return `\s\S`, false
	}
	return `[\s\S]`, false
}

func escapeP(name string, negated bool) string {
	if negated {
		return `\P{` + name + `}`
	}
	return `\p{` + name + `}`
}

// classOf writes members as a class, or, inside one, as its members. A negated class
// inside a class is approximated by any character.
func classOf(members string, negated, inClass bool) (string, bool) {
	switch {
	case !inClass && negated:
		return "[^" + members + "]", true
	case !inClass:
		return "[" + members + "]", true
	case negated:
		return `\s\S`, false
	default:
		return members, true
	}
}

func writeClass(b *strings.Builder, members string, negated, inClass bool) {
	s, _ := classOf(members, negated, inClass)
	if inClass && negated {
		// \H, \V inside a class: .NET has no negation there; any character approximates it
		s = `\s\S`
	}
	b.WriteString(s)
}

// javaRefuses is the parse errors of the .NET dialect that Java's parser reports too: any
// other (a construct only one dialect has) leaves the pattern unjudged rather than refused.
var javaRefuses = map[syntax.ErrorCode]bool{
	syntax.ErrUnterminatedBracket:   true,
	syntax.ErrMissingParen:          true,
	syntax.ErrUnexpectedParen:       true,
	syntax.ErrMissingRepeatArgument: true,
	syntax.ErrIllegalEndEscape:      true,
	syntax.ErrReversedCharRange:     true,
	syntax.ErrInvalidRepeatOp:       true,
	syntax.ErrUndefinedNameRef:      true,
}

// compileJava compiles an AllowedPattern (anchored as CloudFormation matches it). An error
// is either a syntax error Java reports too, or errUnjudged.
func compileJava(p string) (m matcher, exact bool, err error) {
	net, exact := javaToNET(p)
	if _, err := regexp2.Compile(net); err != nil {
		var se *syntax.Error
		if errors.As(err, &se) && javaRefuses[se.Code] {
			return nil, false, &syntax.Error{Code: se.Code, Expr: p, Args: se.Args}
		}
		return nil, false, errUnjudged
	}
	re, err := regexp2.Compile(`\A(?:` + net + `)\z`)
	if err != nil {
		return nil, false, errUnjudged
	}
	re.MatchTimeout = 100 * time.Millisecond
	return re, exact, nil
}

// compileLookaround compiles a JSON Schema pattern that Go's regexp cannot (lookaround, \u
// escapes, \Z) with regexp2, bounded by a match timeout.
func compileLookaround(p string) (matcher, error) {
	re, err := regexp2.Compile(p, regexp2.None)
	if err != nil {
		if re, err = regexp2.Compile(strings.ReplaceAll(p, `\_`, "_"), regexp2.None); err != nil {
			return nil, err
		}
	}
	re.MatchTimeout = 50 * time.Millisecond
	return re, nil
}
