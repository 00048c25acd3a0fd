// Package target names where a stack lives beyond cairn's own account and region — an
// account and a region — and what cairn makes there: the names infra's target stack gives
// its deploy role and ports topic, which cairn's own stack, local mode and the deployer
// rely on. One package owns them so they cannot drift apart.
package target

import (
	"fmt"
	"regexp"
	"strings"
)

// Target is an account and a region.
type Target struct {
	Account, Region string
}

var (
	accountRE = regexp.MustCompile(`^\d{12}$`)
	regionRE  = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d{1,2}$`)
)

// Parse reads "ACCOUNT:REGION", e.g. "111111111111:eu-west-1".
func Parse(s string) (Target, error) {
	account, region, ok := strings.Cut(strings.TrimSpace(s), ":")
	t := Target{Account: strings.TrimSpace(account), Region: strings.TrimSpace(region)}
	if !ok {
		return t, fmt.Errorf("%q is not ACCOUNT:REGION, e.g. 111111111111:eu-west-1", s)
	}
	return t, t.Validate()
}

// Validate checks the account is 12 digits and the region looks like one.
func (t Target) Validate() error {
	if !accountRE.MatchString(t.Account) {
		return fmt.Errorf("account %q is not 12 digits", t.Account)
	}
	if !regionRE.MatchString(t.Region) {
		return fmt.Errorf("region %q is not an AWS region name, e.g. eu-west-1", t.Region)
	}
	return nil
}

// ValidAccount reports whether s is an AWS account id.
func ValidAccount(s string) bool { return accountRE.MatchString(s) }

// ValidRegion reports whether s looks like an AWS region name.
func ValidRegion(s string) bool { return regionRE.MatchString(s) }

func (t Target) String() string { return t.Account + ":" + t.Region }

// Names of what cairn makes. Roles are global to an account, so the ones of a region carry
// its name.
const (
	// StackName is the target stack's name in each target account and region.
	StackName = "cairn-target"
	// PortsTopicName is the regional ports topic of a target, exported as
	// cairn-ports-service-token there.
	PortsTopicName = "cairn-ports"
	// ExportPortsServiceToken is the export templates import as their ServiceToken.
	ExportPortsServiceToken = "cairn-ports-service-token"
)

// DeployRoleName is the role the target stack makes in its region for the deployer (and
// the drift function) to assume: cairn-deploy-REGION.
func DeployRoleName(region string) string { return "cairn-deploy-" + region }

// DeployRoleARN is the ARN of t's deploy role.
func (t Target) DeployRoleARN() string {
	return "arn:aws:iam::" + t.Account + ":role/" + DeployRoleName(t.Region)
}

// DeployerRoleName and DriftRoleName are the roles of cairn's deployer and drift functions
// in cairn's own region, which target deploy roles trust.
func DeployerRoleName(region string) string { return "cairn-deployer-" + region }

// DriftRoleName: see DeployerRoleName.
func DriftRoleName(region string) string { return "cairn-drift-" + region }

// PortsTopicARN is the ARN of t's ports topic.
func (t Target) PortsTopicARN() string {
	return "arn:aws:sns:" + t.Region + ":" + t.Account + ":" + PortsTopicName
}
