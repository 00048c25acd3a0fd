package template

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Dynamic references ({{resolve:ssm:name}}, {{resolve:ssm-secure:name:1}},
// {{resolve:secretsmanager:id:SecretString:key}}) are resolved by CloudFormation when it
// creates or updates a stack, and only in some places (AWS's "Get values stored in other
// services using dynamic references"): SSM parameters in resource properties and metadata,
// outputs' values and parameters' defaults; Secrets Manager secrets in resource properties;
// secure strings in the few properties that take a password.

// DynamicReference is one {{resolve:...}} of a string.
type DynamicReference struct {
	// Service is ssm, ssm-secure or secretsmanager; Parts the fields after it.
	Service string
	Parts   []string
	// Text is the reference as written.
	Text string
}

// DynamicReferences returns the dynamic references of s. A "{{resolve:" never closed is
// none: an Fn::Join or Fn::Sub may complete it with the rest.
func DynamicReferences(s string) []DynamicReference {
	var out []DynamicReference
	for {
		i := strings.Index(s, "{{resolve:")
		if i < 0 {
			return out
		}
		rest := s[i+len("{{resolve:"):]
		j := strings.Index(rest, "}}")
		if j < 0 {
			return out
		}
		body := rest[:j]
		service, fields, _ := strings.Cut(opaqueVariables(body), ":")
		out = append(out, DynamicReference{Service: service, Parts: strings.Split(fields, ":"), Text: "{{resolve:" + body + "}}"})
		s = rest[j+2:]
	}
}

// opaqueVariables replaces each Fn::Sub variable (${AWS::Partition}, ${Name}) by a
// placeholder without colons, so the colons of the reference are its own.
func opaqueVariables(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString("${}")
		s = s[i+j+1:]
	}
}

func shortText(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Problem says what CloudFormation refuses in the reference's syntax, or "".
func (d DynamicReference) Problem() string {
	switch d.Service {
	case "ssm", "ssm-secure":
		if len(d.Parts) == 0 || d.Parts[0] == "" {
			return d.Text + " names no parameter: {{resolve:" + d.Service + ":NAME}} or {{resolve:" + d.Service + ":NAME:VERSION}}"
		}
		if strings.HasPrefix(d.Parts[0], "arn") {
			return "" // a shared parameter's ARN: its colons are its own
		}
		if len(d.Parts) > 2 {
			return d.Text + " has too many fields: {{resolve:" + d.Service + ":NAME:VERSION}}"
		}
		for _, r := range d.Parts[0] {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.-/", r)) {
				return fmt.Sprintf("%s: an SSM parameter name has letters, digits and _.-/ only, not %q", d.Text, r)
			}
		}
		if len(d.Parts) == 2 && (d.Parts[1] == "" || strings.Trim(d.Parts[1], "0123456789") != "") {
			return d.Text + ": the version after the name must be a number"
		}
	case "secretsmanager":
		parts := d.Parts
		if len(parts) > 0 && parts[0] == "arn" {
			if len(parts) < 7 || parts[5] != "secret" {
				return d.Text + " names no secret: a secret's ARN is arn:PARTITION:secretsmanager:REGION:ACCOUNT:secret:NAME"
			}
			parts = append([]string{strings.Join(parts[:7], ":")}, parts[7:]...)
		}
		if len(parts) == 0 || parts[0] == "" {
			return d.Text + " names no secret: {{resolve:secretsmanager:SECRET:SecretString:KEY:STAGE:VERSION}}"
		}
		if len(parts) > 5 {
			return d.Text + " has too many fields: {{resolve:secretsmanager:SECRET:SecretString:KEY:STAGE:VERSION}}"
		}
		if len(parts) > 1 && parts[1] != "SecretString" && parts[1] != "" {
			return fmt.Sprintf("%s: the field after the secret must be SecretString (or empty), not %q", d.Text, parts[1])
		}
		if len(parts) == 5 && parts[3] != "" && parts[4] != "" {
			return d.Text + " gives both a version stage and a version id: give one"
		}
	default:
		return fmt.Sprintf("%s: unknown service %q: use ssm, ssm-secure or secretsmanager", d.Text, d.Service)
	}
	return ""
}

// secureStringProperties are the properties that take an {{resolve:ssm-secure:...}}.
var secureStringProperties = []string{
	"AWS::DirectoryService::MicrosoftAD.Password",
	"AWS::DirectoryService::SimpleAD.Password",
	"AWS::ElastiCache::ReplicationGroup.AuthToken",
	"AWS::IAM::User.LoginProfile.Password",
	"AWS::KinesisFirehose::DeliveryStream.RedshiftDestinationConfiguration.Password",
	"AWS::OpsWorks::App.AppSource.Password",
	"AWS::OpsWorks::Stack.RdsDbInstances.DbPassword",
	"AWS::OpsWorks::Stack.CustomCookbooksSource.Password",
	"AWS::RDS::DBCluster.MasterUserPassword",
	"AWS::RDS::DBInstance.MasterUserPassword",
	"AWS::Redshift::Cluster.MasterUserPassword",
}

// dynamicReferences checks every dynamic reference of the template: its syntax, and
// that CloudFormation resolves its kind where it is.
func (c *checker) dynamicReferences() {
	root := c.t.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		section := root.Content[i].Value
		v := resolve(root.Content[i+1])
		if v.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			name := v.Content[j].Value
			item := resolve(v.Content[j+1])
			base := section + "." + name
			if item.Kind != yaml.MappingNode {
				c.dynrefs(item, []string{base}, dynPlace{section: section})
				continue
			}
			typ := ""
			if section == "Resources" {
				if r := c.resources[name]; r != nil {
					typ = r.typ
				}
			}
			for k := 0; k+1 < len(item.Content); k += 2 {
				attr := item.Content[k].Value
				c.dynrefs(item.Content[k+1], []string{base, "." + attr}, dynPlace{section: section, attr: attr, typ: typ})
			}
		}
	}
}

// dynPlace is where a string is: its section, the attribute of the resource, output or
// parameter, and for a resource property its type and property path (list indexes left
// out).
type dynPlace struct {
	section, attr, typ string
	prop               []string
}

// dynrefs checks the dynamic references under n; path holds the parts of n's path, joined
// only for a problem.
func (c *checker) dynrefs(n *yaml.Node, path []string, at dynPlace) {
	n = resolve(n)
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "{{") {
			return
		}
		p := strings.Join(path, "")
		if strings.Contains(n.Value, "{{ resolve:") || strings.Contains(n.Value, "{{resolve :") {
			c.add(n, p, true, "%q has a space in its dynamic reference: CloudFormation resolves {{resolve:...}} only as written, without spaces", shortText(n.Value))
		}
		for _, d := range DynamicReferences(n.Value) {
			if msg := d.Problem(); msg != "" {
				c.errorf(n, p, "%s", msg)
				continue
			}
			if where := at.refused(d.Service); where != "" {
				c.errorf(n, p, "%s: CloudFormation resolves %s references only %s", d.Text, d.Service, where)
			}
		}
	case yaml.SequenceNode:
		for i, it := range n.Content {
			c.dynrefs(it, append(path, "["+strconv.Itoa(i)+"]"), at)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			sub := at
			if at.section == "Resources" && at.attr == "Properties" && !strings.HasPrefix(k, "Fn::") && k != "Ref" {
				sub.prop = append(slices.Clip(at.prop), k)
			}
			c.dynrefs(n.Content[i+1], append(path, "."+k), sub)
		}
	}
}

// refused says where a reference to service is resolved when it is not resolved at this
// place, or "".
func (at dynPlace) refused(service string) string {
	switch service {
	case "ssm":
		switch {
		case at.section == "Resources" && (at.attr == "Properties" || at.attr == "Metadata"),
			at.section == "Outputs" && at.attr == "Value",
			at.section == "Parameters" && (at.attr == "Default" || at.attr == "AllowedValues"):
			return ""
		}
		return "in resource properties and metadata, outputs' values and parameters' defaults"
	case "secretsmanager":
		if at.section == "Resources" && at.attr == "Properties" || at.section == "Parameters" && at.attr == "Default" {
			return ""
		}
		return "in resource properties"
	case "ssm-secure":
		if at.section == "Resources" && at.attr == "Properties" && slices.Contains(secureStringProperties, at.typ+"."+strings.Join(at.prop, ".")) {
			return ""
		}
		return "in the few properties that take a password, such as MasterUserPassword of AWS::RDS::DBInstance (AWS's dynamic references guide lists them)"
	}
	return ""
}
