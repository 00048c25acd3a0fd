package template

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// More rules of services, as servicerules.go: AWS Backup's lifecycle arithmetic and
// CloudFront's alternate domain names.

// backupLifecycles: AWS Backup refuses a lifecycle whose DeleteAfterDays is less than 90
// days after MoveToColdStorageAfterDays (a recovery point stays 90 days at least in cold
// storage; cfn-lint's E3504), in a plan's rules and in their copy actions.
func (c *checker) backupLifecycles(props *yaml.Node, base string) {
	plan := value(props, "BackupPlan")
	rules := value(plan, "BackupPlanRule")
	if rules == nil || rules.Kind != yaml.SequenceNode {
		return
	}
	for i, rule := range rules.Content {
		path := fmt.Sprintf("%s.Properties.BackupPlan.BackupPlanRule[%d]", base, i)
		c.backupLifecycle(value(rule, "Lifecycle"), path+".Lifecycle")
		if copies := value(rule, "CopyActions"); copies != nil && copies.Kind == yaml.SequenceNode {
			for j, cp := range copies.Content {
				c.backupLifecycle(value(cp, "Lifecycle"), fmt.Sprintf("%s.CopyActions[%d].Lifecycle", path, j))
			}
		}
	}
}

func (c *checker) backupLifecycle(lc *yaml.Node, path string) {
	del, okDel := literalInt(value(lc, "DeleteAfterDays"))
	cold, okCold := literalInt(value(lc, "MoveToColdStorageAfterDays"))
	if !okDel || !okCold || del-cold >= 90 {
		return
	}
	c.errorf(value(lc, "DeleteAfterDays"), path+".DeleteAfterDays", "DeleteAfterDays %d is less than 90 days after MoveToColdStorageAfterDays %d: AWS Backup keeps a recovery point 90 days at least in cold storage and refuses the plan; set DeleteAfterDays to %d or more", del, cold, cold+90)
}

// literalInt is n's value when n is a literal integer.
func literalInt(n *yaml.Node) (int, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, false
	}
	v, err := strconv.Atoi(n.Value)
	return v, err == nil
}

// cloudFrontAlias is the form CloudFront takes of an alternate domain name (cfn-lint's
// E3013): lowercase labels of letters, digits and inner hyphens, at least two, a wildcard
// only as a whole first label.
var cloudFrontAlias = regexp.MustCompile(`^(?:[a-z0-9*](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$`)

// cloudFrontAliases: CloudFront refuses a distribution with an alias that is no domain
// name (InvalidArgument: "The parameter CNAME contains one or more illegal characters").
func (c *checker) cloudFrontAliases(props *yaml.Node, base string) {
	aliases := value(value(props, "DistributionConfig"), "Aliases")
	if aliases == nil || aliases.Kind != yaml.SequenceNode {
		return
	}
	for i, a := range aliases.Content {
		s, ok := plainScalar(a)
		if !ok || strings.HasPrefix(s, "{{resolve:") {
			continue
		}
		if !strings.Contains(s, ".*.") && cloudFrontAlias.MatchString(s) {
			continue
		}
		c.errorf(a, fmt.Sprintf("%s.Properties.DistributionConfig.Aliases[%d]", base, i), "alias %q is no domain name CloudFront takes (lowercase labels of letters, digits and inner hyphens, a wildcard * only as the whole first label): CloudFront refuses the distribution; correct the alias", s)
	}
}
