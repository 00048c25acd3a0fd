package template

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// ErrParameter marks a parameter value the template's constraints refuse: retrying does
// not help, the config (or the output it reads) must change.
var ErrParameter = errors.New("parameter value refused")

// paramError is a refused value; its text is the reason alone.
type paramError struct{ msg string }

func (e *paramError) Error() string        { return e.msg }
func (e *paramError) Is(target error) bool { return target == ErrParameter }

func refused(format string, args ...any) error { return &paramError{fmt.Sprintf(format, args...)} }

// MaxParameterValue is the most bytes CloudFormation takes in one parameter value.
const MaxParameterValue = 4096

// awsTypes are the shapes of AWS-specific parameter types' values; the List<...> forms
// check each item.
var awsTypes = map[string]*regexp.Regexp{
	"AWS::EC2::AvailabilityZone::Name":   regexp.MustCompile(`^[a-z]{2}(-[a-z0-9]+)+[a-z]$`),
	"AWS::EC2::Image::Id":                regexp.MustCompile(`^ami-[0-9a-f]{8}([0-9a-f]{9})?$`),
	"AWS::EC2::Instance::Id":             regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`),
	"AWS::EC2::KeyPair::KeyName":         regexp.MustCompile(`^.{1,255}$`),
	"AWS::EC2::SecurityGroup::GroupName": regexp.MustCompile(`^.{1,255}$`),
	"AWS::EC2::SecurityGroup::Id":        regexp.MustCompile(`^sg-[0-9a-f]{8}([0-9a-f]{9})?$`),
	"AWS::EC2::Subnet::Id":               regexp.MustCompile(`^subnet-[0-9a-f]{8}([0-9a-f]{9})?$`),
	"AWS::EC2::Volume::Id":               regexp.MustCompile(`^vol-[0-9a-f]{8}([0-9a-f]{9})?$`),
	"AWS::EC2::VPC::Id":                  regexp.MustCompile(`^vpc-[0-9a-f]{8}([0-9a-f]{9})?$`),
	"AWS::Route53::HostedZone::Id":       regexp.MustCompile(`^Z[A-Z0-9]{1,32}$`),
	"AWS::SSM::Parameter::Name":          regexp.MustCompile(`^[a-zA-Z0-9_.\-/]+$`),
}

var awsTypeHints = map[string]string{
	"AWS::EC2::AvailabilityZone::Name": "an Availability Zone such as us-east-1a",
	"AWS::EC2::Image::Id":              "an AMI id: ami- and 8 or 17 hex digits",
	"AWS::EC2::Instance::Id":           "an instance id: i- and 8 or 17 hex digits",
	"AWS::EC2::SecurityGroup::Id":      "a security group id: sg- and 8 or 17 hex digits",
	"AWS::EC2::Subnet::Id":             "a subnet id: subnet- and 8 or 17 hex digits",
	"AWS::EC2::Volume::Id":             "a volume id: vol- and 8 or 17 hex digits",
	"AWS::EC2::VPC::Id":                "a VPC id: vpc- and 8 or 17 hex digits",
	"AWS::Route53::HostedZone::Id":     "a hosted zone id such as Z1PA6795UKMFR9",
	"AWS::SSM::Parameter::Name":        "an SSM parameter name",
}

// knownType reports whether CloudFormation accepts t as a parameter Type.
func knownType(t string) bool {
	switch t {
	case "String", "Number", "List<Number>", "CommaDelimitedList":
		return true
	}
	if _, ok := awsTypes[t]; ok {
		return true
	}
	if inner, ok := strings.CutPrefix(t, "List<"); ok && strings.HasSuffix(inner, ">") {
		// List<String> is no documented type, yet accepted as a CommaDelimitedList (as
		// cfn-lint accepts it); AWS::SSM::Parameter::Value<List<String>> is documented.
		inner = strings.TrimSuffix(inner, ">")
		_, ok := awsTypes[inner]
		return ok || inner == "String"
	}
	if inner, ok := strings.CutPrefix(t, "AWS::SSM::Parameter::Value<"); ok && strings.HasSuffix(inner, ">") {
		return knownType(strings.TrimSuffix(inner, ">"))
	}
	return false
}

var parameterTypes = []string{"String", "Number", "List<Number>", "CommaDelimitedList", "AWS::EC2::VPC::Id",
	"AWS::EC2::Subnet::Id", "AWS::EC2::SecurityGroup::Id", "AWS::EC2::Image::Id", "List<AWS::EC2::Subnet::Id>",
	"AWS::SSM::Parameter::Value<String>", "AWS::SSM::Parameter::Name"}

var patterns sync.Map // AllowedPattern -> javaPattern

// errUnjudged says a pattern that Java may accept could not be compiled here.
var errUnjudged = errors.New("a Java construct cairn does not translate")

type javaPattern struct {
	re    matcher
	exact bool
	err   error
}

// pattern compiles an AllowedPattern with CloudFormation's semantics: Java's regular
// expressions (lookahead and the POSIX classes included) that must match the whole value.
// exact is false when cairn only approximates the pattern's meaning. The error is a syntax
// error Java reports too, or errUnjudged for a construct cairn does not translate.
func pattern(p string) (matcher, bool, error) {
	if v, ok := patterns.Load(p); ok {
		jp := v.(javaPattern)
		return jp.re, jp.exact, jp.err
	}
	re, exact, err := compileJava(p)
	patterns.Store(p, javaPattern{re, exact, err})
	return re, exact, err
}

// MatchPattern reports whether value matches an AllowedPattern as CloudFormation matches it.
// A pattern cairn cannot judge exactly, or at all, matches any value it cannot refuse for sure.
func MatchPattern(allowedPattern, value string) (bool, error) {
	re, exact, err := pattern(allowedPattern)
	if errors.Is(err, errUnjudged) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	ok, err := re.MatchString(value)
	if err == nil && !ok && !exact {
		return true, nil
	}
	return ok, err
}

// CheckValue returns why CloudFormation would refuse value for parameter p, or nil. A
// NoEcho parameter's value is never part of the message.
func (p Parameter) CheckValue(value string) error {
	shown := strconv.Quote(value)
	if p.NoEcho {
		shown = "(NoEcho, not shown)"
	}
	fail := func(format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if p.ConstraintDescription != "" {
			msg += ": " + p.ConstraintDescription
		}
		return refused("parameter %s: value %s %s", p.Name, shown, msg)
	}
	if len(value) > MaxParameterValue {
		return refused("parameter %s: value is %d bytes, more than CloudFormation's %d", p.Name, len(value), MaxParameterValue)
	}
	items := []string{value}
	typ := p.Type
	if strings.HasPrefix(typ, "AWS::SSM::Parameter::Value<") {
		typ = "AWS::SSM::Parameter::Name" // the value names the SSM parameter holding it
	}
	list := false
	if inner, ok := strings.CutPrefix(typ, "List<"); ok {
		typ, list = strings.TrimSuffix(inner, ">"), true
	}
	if typ == "CommaDelimitedList" {
		typ, list = "String", true
	}
	if list {
		items = strings.Split(value, ",")
		for i := range items {
			items[i] = strings.TrimSpace(items[i])
		}
	}
	for _, it := range items {
		switch {
		case typ == "Number":
			f, err := strconv.ParseFloat(strings.TrimSpace(it), 64)
			if err != nil {
				return fail("is not a number (the parameter is a %s)", p.Type)
			}
			if p.MinValue != nil && f < *p.MinValue {
				return fail("is less than its MinValue %s", fmtFloat(*p.MinValue))
			}
			if p.MaxValue != nil && f > *p.MaxValue {
				return fail("is more than its MaxValue %s", fmtFloat(*p.MaxValue))
			}
		case awsTypes[typ] != nil:
			if !awsTypes[typ].MatchString(it) {
				return fail("is not %s (the parameter is a %s)", awsTypeHints[typ], p.Type)
			}
		}
		if len(p.AllowedValues) > 0 && !slices.Contains(p.AllowedValues, it) {
			return fail("is not one of its AllowedValues %s", strings.Join(p.AllowedValues, ", "))
		}
		if p.AllowedPattern != "" {
			ok, err := MatchPattern(p.AllowedPattern, it)
			if err != nil {
				return fail("cannot be checked against its AllowedPattern %q: %v", p.AllowedPattern, err)
			}
			if !ok {
				return fail("does not match its AllowedPattern %s", p.AllowedPattern)
			}
		}
	}
	if typ == "String" && !list {
		if p.MinLength != nil && len(value) < *p.MinLength {
			return fail("is shorter than its MinLength %d", *p.MinLength)
		}
		if p.MaxLength != nil && len(value) > *p.MaxLength {
			return fail("is longer than its MaxLength %d", *p.MaxLength)
		}
	}
	return nil
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// CheckParameters checks the values a stack deploys with, lookups resolved: each given
// value, and the Default of each parameter given none. It names every parameter
// CloudFormation would refuse (the error wraps ErrParameter).
func (t *Template) CheckParameters(values map[string]string) error {
	var errs []string
	for _, name := range t.ParameterNames() {
		p := t.Parameters[name]
		v, given := values[name]
		if !given {
			if !p.HasDefault {
				errs = append(errs, fmt.Sprintf("parameter %s has no value and no Default", name))
			}
			continue
		}
		if err := p.CheckValue(v); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return refused("%s", strings.Join(errs, "; "))
}

// checkParameters checks the declarations: known types, patterns that compile, and
// defaults that meet the parameter's own constraints.
func (c *checker) checkParameters() {
	for _, name := range c.t.ParameterNames() {
		p := c.t.Parameters[name]
		base := "Parameters." + name
		if !knownType(p.Type) {
			c.errorf(value(p.node, "Type"), base+".Type", "unknown parameter type %q%s: use String, Number, List<Number>, CommaDelimitedList or an AWS-specific type such as AWS::EC2::VPC::Id", p.Type, Suggest(p.Type, parameterTypes))
			continue
		}
		if p.AllowedPattern != "" {
			if _, _, err := pattern(p.AllowedPattern); err != nil && !errors.Is(err, errUnjudged) {
				c.errorf(value(p.node, "AllowedPattern"), base+".AllowedPattern", "AllowedPattern %q is not a valid regular expression: %v", p.AllowedPattern, err)
				continue
			}
		}
		if p.HasDefault && !(p.Default == "" && len(p.AllowedValues) == 0 && p.AllowedPattern == "") {
			if err := p.CheckValue(p.Default); err != nil {
				c.errorf(value(p.node, "Default"), base+".Default", "the Default is refused: %v", err)
			}
		}
	}
}

var _ = yaml.ScalarNode
