// Package bucket is the layout of cairn's one bucket: the key of every object cairn reads
// or writes, the parsers of the keys users upload, and which run may touch which key. It
// links no AWS SDK: reading and writing the objects is package objects'.
//
// Everything cairn keeps lives in one versioned bucket, in folders:
//
//	deployments/NAME.zip            bundle uploads that deploy
//	plans/NAME.zip                  bundle uploads that only plan
//	approvals/NAME/PLAN_ID          an approval of plan PLAN_ID
//	approvals/NAME.zip              a bundle whose content is applied from reviewed plans
//	plans/NAME/PLAN_ID.json, .md    plans and their pull-request comments
//	plans/NAME/PLAN_ID.html         their pages
//	state/NAMESPACE/KEY.json        persistent graphs
//	locks/NAMESPACE/KEY.lock        their locks
//	runs/NAME/RUN_ID.json, .md      runs and their reports
//	runs/NAME/RUN_ID.html           their pages
//	runs/active/RUN_ID.json         the index of open runs
//	runs/active/stacks/NAME.json    the open run of each stack it started, by stack name
//	templates/SHA256.json           templates passed by TemplateURL
//	assets/SHA256.EXT               packaged artifacts (code, definitions) of stacks at home
//	ports/POOL.json                 port allocations
//	drift/NAME/SWEEP_ID.json, .md   drift reports
//	drift/sweeps/SWEEP_ID.json      drift sweeps in progress
//	policies/, policy-overrides/    the team's policies and their overrides (policies.go)
//
// No other package spells a key, so the layout changes in one place, and names that would
// make two folders collide (a deployment named "active" would write its runs into the
// open-run index) are refused here.
package bucket

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The bucket's folders.
const (
	DeploymentsPrefix = "deployments/"
	PlansPrefix       = "plans/"
	ApprovalsPrefix   = "approvals/"
	StatePrefix       = "state/"
	LocksPrefix       = "locks/"
	RunsPrefix        = "runs/"
	TemplatesPrefix   = "templates/"
	// AssetsPrefix holds the local artifacts a bundle's templates name (Lambda code,
	// layers, API and state machine definitions), packaged as `aws cloudformation package`
	// does and addressed by content: in cairn's bucket for stacks of cairn's account and
	// region, and under the same prefix in each target's assets bucket for the others.
	AssetsPrefix = "assets/"
	PortsPrefix  = "ports/"
	DriftPrefix  = "drift/"
	// OpenRunsPrefix holds one small index object per open run, so a stack status event
	// finds its run with one listing.
	OpenRunsPrefix = RunsPrefix + openRuns + "/"
	// OpenStacksPrefix holds, per CloudFormation stack name, the open run that started
	// the stack, so a stack status event finds its run with one read and no listing.
	OpenStacksPrefix = OpenRunsPrefix + "stacks/"
	// SweepsPrefix holds the drift sweeps in progress; a finished sweep's document is
	// deleted (its reports remain).
	SweepsPrefix = DriftPrefix + sweeps + "/"
)

const (
	openRuns = "active"
	sweeps   = "sweeps"
	zip      = ".zip"
	jsonExt  = ".json"
	mdExt    = ".md"
	htmlExt  = ".html"
)

// Filter selects the uploads that start work: new objects under Prefix whose key ends in
// Suffix ("" for any).
type Filter struct{ Prefix, Suffix string }

// UploadFilters are the bucket notifications to the deploy queue. Bundles arrive as
// deployments/NAME.zip and plans/NAME.zip; the deployer's own plans/NAME/PLAN_ID.json must
// never trigger it, so both folders notify on .zip keys only.
func UploadFilters() []Filter {
	return []Filter{{DeploymentsPrefix, zip}, {PlansPrefix, zip}, {ApprovalsPrefix, ""}}
}

// DeploymentKey is the upload that deploys deployment name.
func DeploymentKey(name string) string { return DeploymentsPrefix + name + zip }

// PlanUploadKey is the upload that plans deployment name.
func PlanUploadKey(name string) string { return PlansPrefix + name + zip }

// ApplyKey is the upload that applies a bundle's content from the reviewed plans of
// deployment name (cairn apply): an approval, so it lives with them.
func ApplyKey(name string) string { return ApprovalsPrefix + name + zip }

// AppliedKeys are the uploads of deployment name that a bundle the persistent graph
// records as applied can have come from, the one answer to where an applied bundle is: a
// push's (DeploymentKey), a plan's applied by its approval (PlanUploadKey), and cairn
// apply's (ApplyKey). Every reader of the applied bundle (diff, rollback, destroy, drift)
// looks in these, in this order.
func AppliedKeys(name string) []string {
	return []string{DeploymentKey(name), PlanUploadKey(name), ApplyKey(name)}
}

// AppliedPrefixes are the folders of AppliedKeys, for listing their versions.
func AppliedPrefixes() []string { return []string{DeploymentsPrefix, PlansPrefix, ApprovalsPrefix} }

// Applies reports whether an upload of kind k carries a bundle that can be applied (a
// push, a plan upload, cairn apply's), not an approval of a plan.
func (k UploadKind) Applies() bool {
	return k == DeployUpload || k == PlanUpload || k == ApplyUpload
}

// ApprovalKey is the object whose creation approves plan planID of deployment name.
func ApprovalKey(name, planID string) string { return ApprovalsPrefix + name + "/" + planID }

// PlansOf is the folder of deployment name's plan documents.
func PlansOf(name string) string { return PlansPrefix + name + "/" }

// PlanKey is the document of plan planID of deployment name.
func PlanKey(name, planID string) string { return PlansOf(name) + planID + jsonExt }

// PlanMarkdownKey is the pull-request comment of plan planID of deployment name.
func PlanMarkdownKey(name, planID string) string { return PlansOf(name) + planID + mdExt }

// PlanPageKey is the HTML page of plan planID of deployment name (package runpage).
func PlanPageKey(name, planID string) string { return PlansOf(name) + planID + htmlExt }

// StateKey is the persistent graph of namespace/key.
func StateKey(namespace, key string) string { return StatePrefix + namespace + "/" + key + jsonExt }

// LockKey is the lock of the persistent graph of namespace/key.
func LockKey(namespace, key string) string { return LocksPrefix + namespace + "/" + key + ".lock" }

// RunsOf is the folder of deployment name's runs.
func RunsOf(name string) string { return RunsPrefix + name + "/" }

// RunKey is the document of run runID of deployment name.
func RunKey(name, runID string) string { return RunsOf(name) + runID + jsonExt }

// RunReportKey is the Markdown report of run runID of deployment name.
func RunReportKey(name, runID string) string { return RunsOf(name) + runID + mdExt }

// RunPageKey is the HTML page of run runID of deployment name (package runpage), written
// beside its Markdown report.
func RunPageKey(name, runID string) string { return RunsOf(name) + runID + htmlExt }

// OpenRunKey is the index object of open run runID.
func OpenRunKey(runID string) string { return OpenRunsPrefix + runID + jsonExt }

// OpenStackKey is the index object naming the open run of the CloudFormation stack named
// stackName (stack names are letters, digits and '-').
func OpenStackKey(stackName string) string { return OpenStacksPrefix + stackName + jsonExt }

// TemplateKey is a template uploaded for TemplateURL, addressed by its sha256 (hex).
func TemplateKey(sha256 string) string { return TemplatesPrefix + sha256 + jsonExt }

// The lifecycle of assets/: an object no deploy wrote for AssetsExpireDays expires (the
// buckets' lifecycle rule), and a deploy naming an artifact older than AssetsRefreshAfter
// writes it again, so the artifacts of stacks that keep being deployed stay. Lambda keeps
// its own copy of a function's code; a rollback to code no deploy named for a year would
// not find it.
const (
	AssetsExpireDays   = 365
	AssetsRefreshAfter = 30 * 24 * time.Hour
)

// AssetKey is a packaged artifact, addressed by the sha256 (hex) of the object stored and
// named with its extension ("zip" for a folder or file zipped; "" for a file whose name has
// none): assets/SHA256.EXT.
func AssetKey(sha256, ext string) string {
	if ext == "" {
		return AssetsPrefix + sha256
	}
	return AssetsPrefix + sha256 + "." + ext
}

// ParseAssetKey returns the sha256 and extension of an AssetKey; ok is false for any other key.
func ParseAssetKey(key string) (sha256, ext string, ok bool) {
	rest, ok := strings.CutPrefix(key, AssetsPrefix)
	if !ok {
		return "", "", false
	}
	sha256, ext, _ = strings.Cut(rest, ".")
	if len(sha256) != 64 || strings.Trim(sha256, "0123456789abcdef") != "" || strings.Contains(ext, "/") {
		return "", "", false
	}
	return sha256, ext, true
}

// PoolKey is the allocations document of port pool pool.
func PoolKey(pool string) string { return PortsPrefix + pool + jsonExt }

// DriftReportsOf is the folder of the drift reports of the graph reported as name.
func DriftReportsOf(name string) string { return DriftPrefix + name + "/" }

// DriftReportName is the name of the drift reports' folder of the persistent graph
// namespace/key when its deployment's name is taken (by another graph, or reserved):
// NAMESPACE.KEY. A namespace has no '.' (it starts CloudFormation stack names), so the
// name is the graph's alone.
func DriftReportName(namespace, key string) string { return namespace + "." + key }

// DriftReportKey is the JSON drift report of name in sweep sweepID.
func DriftReportKey(name, sweepID string) string { return DriftReportsOf(name) + sweepID + jsonExt }

// DriftMarkdownKey is the Markdown drift report of name in sweep sweepID.
func DriftMarkdownKey(name, sweepID string) string { return DriftReportsOf(name) + sweepID + mdExt }

// SweepKey is the document of open drift sweep id.
func SweepKey(id string) string { return SweepsPrefix + id + jsonExt }

// Reserved reports whether name cannot name a deployment (nor a drift report folder): its
// folder would be the bucket's own, runs/active/ (the open-run index) or drift/sweeps/.
func Reserved(name string) bool { return name == openRuns || name == sweeps }

// deploymentRE is the characters a deployment name may use: letters, digits, '.', '_' and
// '-', starting with a letter or digit, at most 128 of them. A name becomes part of keys,
// report headings, log lines and notification subjects, so nothing a terminal or a
// renderer reads as control (a newline, a right-to-left override, Markdown) is allowed.
var deploymentRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// planIDRE is what a plan id may hold: cairn names plans by their run ids
// (20261130-080000123-1a2b3c4d), and an approval naming anything else names no plan.
var planIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckDeployment refuses a deployment name that cannot make keys of its own: empty,
// reserved, or with any character outside letters, digits, '.', '_' and '-' (slashes,
// spaces, control and format characters such as a right-to-left override). The CLI and
// the deployer accept exactly the same names.
func CheckDeployment(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("deployment name is empty: name the deployment")
	case strings.ContainsAny(name, "/\\ "):
		return fmt.Errorf("deployment %q: use a name without slashes or spaces", name)
	case !deploymentRE.MatchString(name):
		return fmt.Errorf("deployment %q: use letters, digits, '.', '_' and '-' only, starting with a letter or digit, at most 128 characters", name)
	case name == openRuns:
		return fmt.Errorf("deployment %q: the name is reserved (%s holds the index of open runs): choose another name", name, OpenRunsPrefix)
	case name == sweeps:
		return fmt.Errorf("deployment %q: the name is reserved (%s holds the drift sweeps in progress): choose another name", name, SweepsPrefix)
	}
	return nil
}

// CheckPlanID refuses a plan id no plan can have (cairn's are run ids): an approval
// naming one approves nothing.
func CheckPlanID(id string) error {
	if !planIDRE.MatchString(id) {
		return fmt.Errorf("plan id %q: a plan id holds letters, digits, '.', '_' and '-' only (e.g. 20261130-080000123-1a2b3c4d, as `cairn plans NAME` lists them)", id)
	}
	return nil
}

// CheckRunID refuses a run id no run can have (`cairn status NAME` lists them; a plan's
// id is its plan run's).
func CheckRunID(id string) error {
	if !planIDRE.MatchString(id) {
		return fmt.Errorf("run id %q: a run id holds letters, digits, '.', '_' and '-' only (e.g. 20261130-080000123-1a2b3c4d, as `cairn status NAME` lists them)", id)
	}
	return nil
}

// UploadKind says what an upload asks for.
type UploadKind int

const (
	// DeployUpload is deployments/NAME.zip: deploy the bundle.
	DeployUpload UploadKind = iota + 1
	// PlanUpload is plans/NAME.zip: plan the bundle, execute nothing.
	PlanUpload
	// ApprovalUpload is approvals/NAME/PLAN_ID: apply that plan.
	ApprovalUpload
	// ApplyUpload is approvals/NAME.zip: apply the bundle's content, each stack it changes
	// through a reviewed plan's entry made for exactly that content.
	ApplyUpload
)

// Upload is what the key of an uploaded object names.
type Upload struct {
	Kind       UploadKind
	Deployment string
	// PlanID is the approved plan of an ApprovalUpload.
	PlanID string
}

// ParseUpload reads the key of an uploaded object. ok is false for a key that is no upload
// (the deployer's own documents, anything else). The deployment name is returned as the
// key spells it: CheckDeployment says whether it is usable.
func ParseUpload(key string) (u Upload, ok bool) {
	if name, ok := zipName(key, DeploymentsPrefix); ok {
		return Upload{Kind: DeployUpload, Deployment: name}, true
	}
	if name, ok := zipName(key, PlansPrefix); ok {
		return Upload{Kind: PlanUpload, Deployment: name}, true
	}
	if name, ok := zipName(key, ApprovalsPrefix); ok {
		return Upload{Kind: ApplyUpload, Deployment: name}, true
	}
	rest, ok := strings.CutPrefix(key, ApprovalsPrefix)
	if !ok {
		return Upload{}, false
	}
	name, planID, ok := strings.Cut(rest, "/")
	if !ok || name == "" || planID == "" || strings.Contains(planID, "/") {
		return Upload{}, false
	}
	return Upload{Kind: ApprovalUpload, Deployment: name, PlanID: planID}, true
}

// UploadName returns NAME of an upload's key PREFIX/NAME.zip (deployments/NAME.zip,
// plans/NAME.zip, approvals/NAME.zip).
func UploadName(key, prefix string) (string, bool) { return zipName(key, prefix) }

// zipName returns NAME of key PREFIX/NAME.zip.
func zipName(key, prefix string) (string, bool) {
	name, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, zip)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// leaf returns NAME of key FOLDER/NAME.EXT: a file directly in folder, with that extension.
func leaf(key, folder, ext string) (string, bool) {
	name, ok := strings.CutPrefix(key, folder)
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, ext)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// DeploymentOf returns NAME of deployments/NAME.zip.
func DeploymentOf(key string) (string, bool) { return zipName(key, DeploymentsPrefix) }

// PlanIDOf returns PLAN_ID of plans/NAME/PLAN_ID.json, for deployment name.
func PlanIDOf(name, key string) (string, bool) { return leaf(key, PlansOf(name), jsonExt) }

// RunIDOf returns RUN_ID of runs/NAME/RUN_ID.json, for deployment name.
func RunIDOf(name, key string) (string, bool) { return leaf(key, RunsOf(name), jsonExt) }

// OpenRunOf returns RUN_ID of the open-run index object runs/active/RUN_ID.json.
func OpenRunOf(key string) (string, bool) { return leaf(key, OpenRunsPrefix, jsonExt) }

// PoolOf returns POOL of ports/POOL.json.
func PoolOf(key string) (string, bool) { return leaf(key, PortsPrefix, jsonExt) }

// SweepOf returns SWEEP_ID of the open sweep drift/sweeps/SWEEP_ID.json.
func SweepOf(key string) (string, bool) { return leaf(key, SweepsPrefix, jsonExt) }

// DriftReportOf returns SWEEP_ID of the JSON drift report drift/NAME/SWEEP_ID.json.
func DriftReportOf(name, key string) (string, bool) { return leaf(key, DriftReportsOf(name), jsonExt) }

// ParseStateKey returns NAMESPACE and KEY of state/NAMESPACE/KEY.json.
func ParseStateKey(key string) (namespace, graphKey string, ok bool) {
	rest, ok := strings.CutPrefix(key, StatePrefix)
	if !ok {
		return "", "", false
	}
	namespace, file, ok := strings.Cut(rest, "/")
	graphKey, isJSON := strings.CutSuffix(file, jsonExt)
	if !ok || !isJSON || namespace == "" || graphKey == "" || strings.Contains(graphKey, "/") {
		return "", "", false
	}
	return namespace, graphKey, true
}

// URI is the s3:// address of key in bucket name, for messages.
func URI(name, key string) string { return "s3://" + name + "/" + key }
