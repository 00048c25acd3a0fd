package template

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Route 53's rules of a record set's values, which it checks when CloudFormation creates
// the record (InvalidChangeBatch; cfn-lint's E3023 and E3029).

var (
	// txtValue is a TXT record's value: quoted strings of 1 to 255 characters each.
	txtValue = regexp.MustCompile(`^("[^"]{1,255}" *)*"[^"]{1,255}"$`)
	// mxValue is an MX record's value: a priority and a mail server.
	mxValue = regexp.MustCompile(`^([0-9]{1,5})\s(\S+)$`)
)

// recordSets checks the record sets of an AWS::Route53::RecordSet or RecordSetGroup.
func (c *checker) recordSets(typ string, props *yaml.Node, base string) {
	if typ == "AWS::Route53::RecordSet" {
		c.recordSet(props, base+".Properties")
		return
	}
	sets := value(props, "RecordSets")
	if sets == nil || sets.Kind != yaml.SequenceNode {
		return
	}
	for i, s := range sets.Content {
		c.recordSet(s, fmt.Sprintf("%s.Properties.RecordSets[%d]", base, i))
	}
}

func (c *checker) recordSet(rs *yaml.Node, path string) {
	if value(rs, "AliasTarget") != nil && value(rs, "TTL") != nil {
		c.errorf(key(rs, "TTL"), path+".TTL", "an alias record takes no TTL (Route 53 uses the alias target's): Route 53 refuses the record; remove TTL")
	}
	typ, ok := plainScalar(value(rs, "Type"))
	records := value(rs, "ResourceRecords")
	if !ok || records == nil || records.Kind != yaml.SequenceNode {
		return
	}
	if typ == "CNAME" && len(records.Content) > 1 {
		c.errorf(records, path+".ResourceRecords", "a CNAME record has one value, not %d: Route 53 refuses the record", len(records.Content))
	}
	for i, r := range records.Content {
		v, ok := plainScalar(r)
		if !ok {
			continue
		}
		if why := recordValueProblem(typ, v); why != "" {
			c.errorf(r, fmt.Sprintf("%s.ResourceRecords[%d]", path, i), "%q is not %s: Route 53 refuses the record", v, why)
		}
	}
}

// recordValueProblem says what v fails to be as a value of a record of type typ, or "".
func recordValueProblem(typ, v string) string {
	switch typ {
	case "A":
		if a, err := netip.ParseAddr(v); err != nil || !a.Is4() {
			return "an IPv4 address, which an A record's value is"
		}
	case "AAAA":
		if a, err := netip.ParseAddr(v); err != nil || !a.Is6() || a.Zone() != "" {
			return "an IPv6 address, which an AAAA record's value is"
		}
	case "TXT":
		if !txtValue.MatchString(v) {
			return `quoted strings of 255 characters at most ("..." "..."), which a TXT record's value is`
		}
	case "MX":
		m := mxValue.FindStringSubmatch(v)
		if m == nil {
			return "a priority and a mail server (10 mail.example.com), which an MX record's value is"
		}
		if p, _ := strconv.Atoi(m[1]); p > 65535 {
			return "a priority of 0 to 65535 and a mail server, which an MX record's value is"
		}
	}
	return ""
}
