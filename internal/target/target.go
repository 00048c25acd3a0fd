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

// AssetsBucketName is the bucket the target stack makes in t's account and region for the
// packaged artifacts (Lambda code, layers, definitions) of the stacks there: Lambda and the
// other services read them from their own region only. Stacks of cairn's own account and
// region use cairn's bucket instead.
func (t Target) AssetsBucketName() string {
	return AssetsBucketPrefix + t.Account + "-" + t.Region
}

// AssetsBucketPrefix begins the name of every target's assets bucket
// (cairn-assets-ACCOUNT-REGION).
const AssetsBucketPrefix = "cairn-assets-"

// Spec is where a stack lives and how the deployer reaches it, as cairn.yaml says: region,
// role_arn, external_id and service_role. The zero Spec is cairn's own account and region,
// reached with the deployer's own credentials.
type Spec struct {
	// Region is the stack's region; "" is cairn's own.
	Region string `json:"region,omitempty"`
	// RoleARN is the role the deployer assumes (through STS) to reach the stack; its
	// account is the stack's. "": the deployer's own credentials, cairn's account.
	RoleARN string `json:"role_arn,omitempty"`
	// ExternalID is passed with AssumeRole when the role's trust policy demands one.
	ExternalID string `json:"external_id,omitempty"`
	// ServiceRole is the CloudFormation service role of the stack (the RoleARN of its
	// change sets): Stacker's service_role, Sceptre's cloudformation_service_role.
	ServiceRole string `json:"service_role,omitempty"`
}

var roleARNRE = regexp.MustCompile(`^arn:aws[a-z-]*:iam::(\d{12}):role/(?:[\w+=,.@-]+/)*[\w+=,.@-]{1,64}$`)

// RoleARNPattern matches an IAM role ARN; its first group is the account.
func RoleARNPattern() *regexp.Regexp { return roleARNRE }

// Account returns the account of RoleARN, "" (cairn's own) without one.
func (s Spec) Account() string {
	if m := roleARNRE.FindStringSubmatch(s.RoleARN); m != nil {
		return m[1]
	}
	return ""
}

// IsHome reports whether s is cairn's own account and region with its own credentials.
func (s Spec) IsHome() bool { return s.Region == "" && s.RoleARN == "" }

// Location is where s puts a stack, relative to home (the deployer's account and region,
// its account "" when unknown): the zero Target is home, and a field is "" where it is
// home's.
func (s Spec) Location(home Target) Target {
	return Target{Account: s.Account(), Region: s.Region}.From(home)
}

// From is t relative to home (its account "" when unknown): a field is "" where it is
// home's, so the zero Target is home. A stack id's place (OfStackID) made relative this
// way is described as a stack's Location is.
func (t Target) From(home Target) Target {
	if t.Account == home.Account {
		t.Account = ""
	}
	if t.Region == home.Region {
		t.Region = ""
	}
	return t
}

// Key identifies a stack among the stacks of a deployment by account, region and name: its
// name alone at home (so a deployment without targets keys its stacks as before),
// ACCOUNT/REGION/NAME elsewhere, a part "" where it is home's.
func Key(at Target, stackName string) string {
	if at == (Target{}) {
		return stackName
	}
	return at.Account + "/" + at.Region + "/" + stackName
}

// Describe names a stack for people: its name, and where it lives when that is not home,
// e.g. "shop-app (111111111111, eu-west-1)". Every output naming a stack (graph, plans,
// run reports, status, drift, port owners, the follower) names it so.
func Describe(at Target, stackName string) string {
	if at == (Target{}) {
		return stackName
	}
	return stackName + " (" + at.Where() + ")"
}

// Where names a place relative to home for people, its parts "cairn's account" and
// "cairn's region" where they are home's: "111111111111, eu-west-1".
func (t Target) Where() string {
	acct, region := t.Account, t.Region
	if acct == "" {
		acct = "cairn's account"
	}
	if region == "" {
		region = "cairn's region"
	}
	return acct + ", " + region
}

// OfStackID returns the account and region of a stack id,
// arn:aws:cloudformation:REGION:ACCOUNT:stack/NAME/ID.
func OfStackID(id string) (Target, bool) {
	parts := strings.SplitN(id, ":", 6)
	if len(parts) < 6 || parts[0] != "arn" || parts[2] != "cloudformation" {
		return Target{}, false
	}
	return Target{Account: parts[4], Region: parts[3]}, true
}

// ParseKey splits a Key into its place and stack name.
func ParseKey(key string) (Target, string) {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return Target{}, key
	}
	return Target{Account: parts[0], Region: parts[1]}, parts[2]
}
