// Package assembly reads an AWS CDK cloud assembly — what `cdk synth` writes to cdk.out —
// as a cairn bundle: every aws:cloudformation:stack artifact of its manifest.json and of its
// nested assemblies (stages) becomes a stack, with its template, stack name, environment,
// the bootstrap roles the default synthesizer names, tags, parameters, termination
// protection and dependencies; its asset manifests say which files cairn publishes and which
// Docker images must already be published before the stack deploys.
//
// It reads only the fields of the cloud assembly schema (and of the cdk-assets manifest
// format) named here, which have kept their meaning since CDK v2's first release; others are
// ignored, so a newer schema version still reads. Document turns an assembly, with the
// cairn.yaml that may name it, into the config document internal/config validates as any
// other, so both have the same checks. Reading needs no AWS call and never runs the app.
package assembly

import (
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/bundle"
)

// Artifact types of the cloud assembly schema (ArtifactType) that cairn reads; the others
// (cdk:tree, cdk:feature-flag-report, and any a newer schema adds) are ignored.
const (
	typeStack    = "aws:cloudformation:stack"
	typeAssets   = "cdk:asset-manifest"
	typeAssembly = "cdk:cloud-assembly"
)

// Environment placeholders (EnvironmentPlaceholders) the synthesizer writes into role ARNs
// and asset destinations; they stand for the place the stack is deployed to.
const (
	placeholderAccount   = "${AWS::AccountId}"
	placeholderRegion    = "${AWS::Region}"
	placeholderPartition = "${AWS::Partition}"
)

// The environment of an environment-agnostic stack (aws://unknown-account/unknown-region).
const (
	unknownAccount = "unknown-account"
	unknownRegion  = "unknown-region"
)

// maxDepth bounds how deep nested assemblies (stages in stages) are followed.
const maxDepth = 16

// Assembly is a cloud assembly with its nested assemblies.
type Assembly struct {
	// Dir is the assembly's folder in the bundle, slash-separated ("." when the bundle is
	// the assembly).
	Dir string
	// Version is the cloud assembly schema version its manifest.json declares.
	Version string
	// Stacks are the stacks of the assembly and its nested assemblies, by Path.
	Stacks []*Stack
}

// Stack is one aws:cloudformation:stack artifact.
type Stack struct {
	// Path is the artifact's display name, such as Dev/Service: the name `cdk deploy`
	// takes, and the stack's name in cairn (config name, reports, requires).
	Path string
	// ID is the artifact's id in its manifest, Manifest that manifest's bundle path.
	ID, Manifest string
	// Dir is the folder of the (root) assembly in the bundle ("." when the bundle is it).
	Dir string
	// StackName is the CloudFormation stack name (the artifact id when it names none).
	StackName string
	// Template is the template file's bundle path.
	Template string
	// Account and Region are the stack's environment; "" where it is unknown (an
	// environment-agnostic stack deploys where cairn.yaml's region and role_arn say).
	Account, Region string
	// Parameters and Tags are what the stack is deployed with.
	Parameters, Tags map[string]string
	// NotificationARNs receive the stack's events.
	NotificationARNs []string
	// TerminationProtection as the app sets it.
	TerminationProtection bool
	// DeployRole (assumeRoleArn) is the role a deployment of the stack assumes, with its
	// DeployExternalID; ExecutionRole (cloudFormationExecutionRoleArn) the role
	// CloudFormation runs the change set with. Placeholders are left as written (see
	// Resolve).
	DeployRole, DeployExternalID, ExecutionRole string
	// Bootstrap is what the stack needs of its environment's bootstrap stack.
	Bootstrap Bootstrap
	// Requires are the Paths of the stacks of the assembly it depends on.
	Requires []string
	// Files and Images are the assets of its asset manifests.
	Files  []FileAsset
	Images []ImageAsset
	// NestedStacks says the template has AWS::CloudFormation::Stack resources, whose
	// templates are file assets (CDK's NestedStack).
	NestedStacks bool
	// Bundle builds the file assets from the bundle holding the assembly: a folder zipped
	// deterministically, a file as it is.
	Bundle *artifact.Set
}

// Bootstrap is a required bootstrap version: the highest the stack and its asset manifests
// require (requiresBootstrapStackVersion), and the SSM parameter holding the version of
// the environment's bootstrap stack (bootstrapStackVersionSsmParameter). A zero Version
// requires nothing.
type Bootstrap struct {
	Version   int
	Parameter string
}

// FileAsset is a file asset of an asset manifest: a file or folder of the assembly that
// cdk-assets uploads to each of its destinations.
type FileAsset struct {
	// ID is the asset's id (its source hash); Name its display name ("" when none).
	ID, Name string
	// Manifest is the bundle path of the asset manifest naming it.
	Manifest string
	// Source is the file or folder's bundle path ("" for an executable source).
	Source string
	// Zip says the source is a folder to upload zipped (packaging "zip").
	Zip bool
	// Executable is the command that produces the asset (source.executable), which cairn
	// does not run.
	Executable   []string
	Destinations []Destination
}

// ImageAsset is a Docker image asset of an asset manifest, which cdk-assets builds and
// pushes to each of its destinations; cairn only checks it is there.
type ImageAsset struct {
	// ID is the asset's id (its source hash); Name its display name ("" when none).
	ID, Name string
	// Manifest is the bundle path of the asset manifest naming it.
	Manifest     string
	Destinations []Destination
}

// Label names an asset for people: its display name and id.
func label(id, name string) string {
	if name == "" {
		return id
	}
	return name + " (" + id + ")"
}

// PublishCommand is the command that publishes the asset id of the asset manifest manifest
// of an assembly in folder dir of the bundle, as a CI job runs it where it synthesized the
// app (whose assembly is cdk.out when the bundle is the assembly alone).
func PublishCommand(dir, manifest, id string) string {
	rel := manifest
	if dir == "." {
		dir = "cdk.out"
	} else {
		rel = strings.TrimPrefix(manifest, dir+"/")
	}
	return "cd " + dir + " && npx cdk-assets publish --path " + rel + " " + id
}

// Label names the file asset for people.
func (a FileAsset) Label() string { return label(a.ID, a.Name) }

// Label names the image asset for people.
func (a ImageAsset) Label() string { return label(a.ID, a.Name) }

// Destination is where an asset is published, as written (placeholders unresolved): a
// bucket and key for a file, a repository and tag for an image, in a region, through a
// role.
type Destination struct {
	// ID is the destination's id in the asset manifest.
	ID                  string
	Region              string
	RoleARN, ExternalID string
	Bucket, Key         string
	Repository, Tag     string
}

// Resolve is d with the environment placeholders replaced for account and region, as
// cdk-assets does; a destination naming no region is in region.
func (d Destination) Resolve(account, region string) Destination {
	r := func(s string) string { return Resolve(s, account, region) }
	out := Destination{ID: d.ID, Region: r(d.Region), RoleARN: r(d.RoleARN), ExternalID: d.ExternalID,
		Bucket: r(d.Bucket), Key: r(d.Key), Repository: r(d.Repository), Tag: r(d.Tag)}
	if out.Region == "" {
		out.Region = region
	}
	return out
}

// Resolve replaces the environment placeholders of s: ${AWS::AccountId}, ${AWS::Region}
// and ${AWS::Partition} (the partition of region).
func Resolve(s, account, region string) string {
	if !strings.Contains(s, "${AWS::") {
		return s
	}
	return strings.NewReplacer(placeholderAccount, account, placeholderRegion, region, placeholderPartition, Partition(region)).Replace(s)
}

// Partition is the AWS partition of region.
func Partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	case strings.HasPrefix(region, "us-iso-"):
		return "aws-iso"
	case strings.HasPrefix(region, "us-isob-"):
		return "aws-iso-b"
	}
	return "aws"
}

// Error is one problem of an assembly, in the file that has it.
type Error struct {
	File string
	// Key is the JSON path of the offending field, such as artifacts.Dev.properties.
	Key string
	Msg string
}

func (e Error) Error() string {
	if e.Key == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Key + ": " + e.Msg
}

// Errors is every problem found in an assembly.
type Errors []Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Is reports whether dir of fsys holds a cloud assembly (its manifest.json).
func Is(fsys fs.FS, dir string) bool {
	st, err := fs.Stat(fsys, path.Join(dir, bundle.AssemblyManifest))
	return err == nil && st.Mode().IsRegular()
}

// Read reads the cloud assembly in folder dir of the bundle files fsys, with its nested
// assemblies and asset manifests. On any problem it returns the assembly it could read and
// Errors, all of them: a stack with an error annotation of the app (aws:cdk:error), an
// assembly missing context values (the app looks things up in AWS at synthesis), files
// the manifests name that are missing or leave the bundle, malformed JSON.
func Read(fsys fs.FS, dir string) (*Assembly, error) {
	a := &Assembly{Dir: path.Clean(dir)}
	r := &reader{fsys: fsys, root: a.Dir, seen: map[string]bool{}, files: artifact.NewSet(fsys)}
	r.assembly(a, a.Dir, "", 0)
	slices.SortFunc(a.Stacks, func(x, y *Stack) int { return strings.Compare(x.Path, y.Path) })
	if len(r.errs) > 0 {
		return a, r.errs
	}
	return a, nil
}
