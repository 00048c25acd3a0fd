package template

import (
	"net"
	"regexp"
	"strings"
	"sync"
)

// schemaPatterns caches the compiled patterns of the resource provider schemas. A
// pattern compiles with Go's regexp (linear time) when it can; one using what RE2 lacks
// (lookaround, \u escapes, \Z) with compileLookaround.
var schemaPatterns sync.Map // pattern -> *regexp.Regexp, matcher or error

// searchPattern reports whether value contains a match of a JSON Schema pattern (which,
// unlike a parameter's AllowedPattern, is not anchored). A pattern neither engine
// compiles, or a match that times out, is an error: the value is then not judged.
func searchPattern(p, value string) (bool, error) {
	v, ok := schemaPatterns.Load(p)
	if !ok {
		v = compileSchemaPattern(p)
		schemaPatterns.Store(p, v)
	}
	ok, err := match(v, value)
	if err == nil && !ok && strings.HasSuffix(value, "\n") {
		// $ matches before a final newline in the regular expressions of Java (which
		// AWS's handlers use) and Python (cfn-lint's), not in Go's: a YAML block value
		// ends with one.
		return match(v, strings.TrimSuffix(value, "\n"))
	}
	return ok, err
}

func match(compiled any, value string) (bool, error) {
	switch re := compiled.(type) {
	case *regexp.Regexp:
		return re.MatchString(value), nil
	case matcher:
		return re.MatchString(value)
	default:
		return false, compiled.(error)
	}
}

func compileSchemaPattern(p string) any {
	if re, err := regexp.Compile(p); err == nil {
		return re
	}
	if re, err := regexp.Compile(javaSyntax(p)); err == nil {
		return re
	}
	re, err := compileLookaround(p)
	if err != nil {
		return err
	}
	return re
}

// matcher is a compiled pattern of an engine with a match timeout (an error when a match
// takes too long): Java's semantics, where Go's regexp lacks them.
type matcher interface {
	MatchString(string) (bool, error)
}

// javaPOSIX are Java's POSIX character classes, as RE2 writes them.
var javaPOSIX = map[string]string{"Graph": "graph", "Print": "print", "Alpha": "alpha", "Alnum": "alnum",
	"Digit": "digit", "Punct": "punct", "Space": "space", "Upper": "upper", "Lower": "lower", "XDigit": "xdigit"}

// javaSyntax rewrites what Java's regular expressions (in which AWS writes its schemas'
// patterns) have and RE2 lacks: \p{Graph} and the other POSIX classes, and escapes of
// characters that need none (\_).
func javaSyntax(p string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			next := p[i+1]
			if next == 'p' && i+2 < len(p) && p[i+2] == '{' {
				if j := strings.IndexByte(p[i:], '}'); j > 0 {
					if posix, ok := javaPOSIX[p[i+3:i+j]]; ok {
						if inClass {
							b.WriteString("[:" + posix + ":]")
						} else {
							b.WriteString("[[:" + posix + ":]]")
						}
						i += j
						continue
					}
				}
			}
			if next == '_' {
				b.WriteByte('_')
			} else {
				b.WriteByte(c)
				b.WriteByte(next)
			}
			i++
		case c == '[':
			inClass = true
			b.WriteByte(c)
		case c == ']':
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// format is what a format of the provider schemas (as cfn-lint patches them in) means:
// the shapes AWS's APIs accept for an identifier, an ARN or a network, refusing any other
// (InvalidVpcID.Malformed, InvalidParameterValue, ...).
type format struct {
	what  string
	check func(string) bool
}

func matching(expr string) func(string) bool {
	re := regexp.MustCompile(expr)
	return re.MatchString
}

const arnPrefix = `^arn:aws[a-zA-Z-]*:`

var formats = map[string]format{
	"AWS::EC2::VPC.Id":           {"a VPC id: vpc- and 8 or 17 hex digits", matching(`^vpc-([0-9a-fA-F]{8}|[0-9a-fA-F]{17})$`)},
	"AWS::EC2::Subnet.Id":        {"a subnet id: subnet- and 8 or 17 hex digits", matching(`^subnet-([0-9a-fA-F]{8}|[0-9a-fA-F]{17})$`)},
	"AWS::EC2::SecurityGroup.Id": {"a security group id: sg- and 8 or 17 hex digits", matching(`^sg-([0-9a-fA-F]{8}|[0-9a-fA-F]{17})$`)},
	"AWS::EC2::Image.Id":         {"an AMI id: ami- and 8 or 17 hex digits", matching(`^ami-([0-9a-z]{8}|[0-9a-z]{17})$`)},
	"AWS::IAM::Role.Arn":         {"an IAM role ARN (arn:aws:iam::123456789012:role/NAME)", matching(arnPrefix + `iam::\d{12}:role/.+$`)},
	"AWS::KMS::Key.Arn":          {"a KMS key or alias ARN", matching(arnPrefix + `kms:[a-z0-9-]+:\d{12}:(key|alias)/.+$`)},
	"AWS::KMS::Key.Id": {"a KMS key id (a UUID, mrk- and 32 hex digits, or alias/NAME)",
		matching(`^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32}|alias/[a-zA-Z0-9/_-]+)$`)},
	"AWS::KMS::Alias.AliasName": {"a KMS alias name (alias/NAME)", matching(`^alias/[a-zA-Z0-9:/_-]+$`)},
	"AWS::SNS::Topic.Arn":       {"an SNS topic ARN", matching(arnPrefix + `sns:[a-z0-9-]+:\d{12}:.+$`)},
	"AWS::Lambda::Function.Arn": {"a Lambda function ARN", matching(arnPrefix + `lambda:[a-z0-9-]+:\d{12}:function:.+(:.+)?$`)},
	"AWS::ACM::Certificate.Arn": {"an ACM certificate ARN", matching(arnPrefix + `acm:[a-z0-9-]+:\d{12}:certificate/.+$`)},
	"AWS::S3::Bucket.Name":      {"an S3 bucket name (3 to 63 lower-case letters, digits, dots and hyphens, starting and ending with a letter or digit)", bucketName},
	"ipv4-network":              {"an IPv4 network in CIDR notation (10.0.0.0/16)", cidr(false)},
	"ipv6-network":              {"an IPv6 network in CIDR notation (2001:db8::/32)", cidr(true)},
}

var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

func bucketName(s string) bool {
	return bucketRE.MatchString(s) && !strings.Contains(s, "..") && !strings.Contains(s, ".-") && !strings.Contains(s, "-.")
}

// cidr accepts an address and prefix length. An address with host bits set is accepted:
// AWS masks it (a VPC's CidrBlock is canonicalized, a security group rule's too), where
// cfn-lint refuses it.
func cidr(v6 bool) func(string) bool {
	return func(s string) bool {
		ip, _, err := net.ParseCIDR(s)
		return err == nil && (ip.To4() == nil) == v6
	}
}
