package cfnlocal

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// Attributes the specification says are lists (a network interface's secondary addresses,
// a directory's DNS addresses, a VPC's IPv6 blocks, ...) get lists of plausible values, so
// that Fn::Select and Fn::Join over them work as they do against AWS.

// listAttribute returns two plausible values of the list attribute attr, by what its
// name says it holds.
func listAttribute(attr string, c idCtx) []any {
	l := strings.ToLower(attr)
	out := make([]any, 2)
	for i := range out {
		h := hashHex(8, c.seed, attr, strconv.Itoa(i))
		n, _ := strconv.ParseUint(h, 16, 32)
		switch {
		case strings.Contains(l, "ipv6") && strings.Contains(l, "cidr"):
			out[i] = fmt.Sprintf("2600:1f18:%s:%s00::/56", h[:4], h[4:6])
		case strings.Contains(l, "ipv6"):
			out[i] = fmt.Sprintf("2600:1f18:%s:%s::%x", h[:4], h[4:8], i+1)
		case strings.Contains(l, "cidr"):
			out[i] = fmt.Sprintf("10.%d.%d.0/24", n%200+10, i)
		case strings.Contains(l, "ip"), strings.Contains(l, "address"):
			out[i] = privateAddress(c, i+1)
		case strings.Contains(l, "subnet"):
			out[i] = "subnet-" + hashHex(17, c.seed, attr, strconv.Itoa(i))
		case strings.Contains(l, "securitygroup"):
			out[i] = "sg-" + hashHex(17, c.seed, attr, strconv.Itoa(i))
		case strings.Contains(l, "zone"):
			out[i] = c.region + string(rune('a'+i))
		case strings.HasSuffix(l, "arns"):
			out[i] = c.arn(strings.ToLower(strings.TrimSuffix(attr, "Arns")), c.logicalID+"/"+h)
		default:
			out[i] = fmt.Sprintf("%s-%s-%s", c.logicalID, attr, h)
		}
	}
	return out
}

// privateAddress is the i-th private address of a resource, in 10.0.0.0/16.
func privateAddress(c idCtx, i int) string {
	n, _ := strconv.ParseUint(hashHex(4, c.seed, "ip"), 16, 32)
	return fmt.Sprintf("10.0.%d.%d", n%250, 10+i)
}

// addresses are the PrivateIpAddresses a network interface's template gives, primary or
// secondary.
func addresses(c idCtx, primary bool) []any {
	var out []any
	l, _ := c.props["PrivateIpAddresses"].([]any)
	for _, a := range l {
		m, _ := a.(map[string]any)
		if (scalarString(m["Primary"]) == "true") == primary && m["PrivateIpAddress"] != nil {
			out = append(out, scalarString(m["PrivateIpAddress"]))
		}
	}
	return out
}

func primaryAddress(c idCtx) any {
	if a := addresses(c, true); len(a) > 0 {
		return a[0]
	}
	return orDefault(c.prop("PrivateIpAddress"), privateAddress(c, 0))
}

// secondaryAddresses are those the template names, else SecondaryPrivateIpAddressCount
// generated ones.
func secondaryAddresses(c idCtx) any {
	out := addresses(c, false)
	n, _ := strconv.Atoi(c.prop("SecondaryPrivateIpAddressCount"))
	for i := len(out); i < n; i++ {
		out = append(out, privateAddress(c, i+1))
	}
	if out == nil {
		out = []any{}
	}
	return out
}

// nameTaken fails the creation of a resource named (by its type's name property, such as
// LogGroupName) like one that exists in any stack, as AWS does. Types a Provider makes are
// refused by their service.
func (s *Service) nameTaken(r *resource) error {
	t := resourcespec.Lookup(r.Type)
	if t == nil || t.NameProperty == "" || s.provides(r.Type) {
		return nil
	}
	name, ok := r.Props[t.NameProperty].(string)
	if !ok || name == "" {
		return nil
	}
	for _, st := range s.st.Stacks {
		if st.deleted() {
			continue
		}
		for _, o := range st.Resources {
			if o != r && o.Type == r.Type && (exists(o) || o.Status == "CREATE_IN_PROGRESS") && o.Props[t.NameProperty] == name {
				return invalidf("Resource of type '%s' with identifier '%s' already exists.", r.Type, name)
			}
		}
	}
	return nil
}

// impliedDeps returns, per resource, the resources of the template it names by their
// name (their type's NameProperty, as evaluated) in a property value, such as a bucket
// policy naming its bucket with !Sub instead of !Ref. CloudFormation creates independent
// resources in parallel and such handlers wait for what they name; the emulator, which
// creates them one at a time, creates the named one first.
func impliedDeps(tpl *template, props map[string]map[string]any) map[string][]string {
	names := map[string]string{} // name -> resource
	for _, n := range sortedKeys(props) {
		// A name property names the resource itself when it is called so (BucketName,
		// Name); a bucket policy's identifier, Bucket, is the bucket it is for.
		t := resourcespec.Lookup(tpl.Resources[n].Type)
		if t == nil || !strings.HasSuffix(t.NameProperty, "Name") {
			continue
		}
		if v, ok := props[n][t.NameProperty].(string); ok && v != "" && !strings.Contains(v, knownAfterApply) {
			names[v] = n
		}
	}
	if len(names) == 0 {
		return nil
	}
	out := map[string][]string{}
	for _, n := range sortedKeys(props) {
		walkStrings(props[n], func(s string) {
			if b, ok := names[s]; ok && b != n && !slices.Contains(out[n], b) {
				out[n] = append(out[n], b)
			}
		})
	}
	return out
}

func walkStrings(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case map[string]any:
		for _, vv := range x {
			walkStrings(vv, fn)
		}
	case []any:
		for _, vv := range x {
			walkStrings(vv, fn)
		}
	}
}

// propsOf are the properties of a stack's resources, for impliedDeps.
func propsOf(rs map[string]*resource) map[string]map[string]any {
	out := make(map[string]map[string]any, len(rs))
	for n, r := range rs {
		out[n] = r.Props
	}
	return out
}

// resourceOrder is the order resources of tpl are made in (dependencies first) given their
// properties; deletes go the other way.
func resourceOrder(tpl *template, props map[string]map[string]any) ([]string, error) {
	return tpl.orderWith(impliedDeps(tpl, props))
}
