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
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
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

// manifest is the part of the cloud assembly schema's AssemblyManifest cairn reads.
type manifest struct {
	Version   string                      `json:"version"`
	Artifacts map[string]artifactManifest `json:"artifacts"`
	Missing   []struct {
		Key      string `json:"key"`
		Provider string `json:"provider"`
	} `json:"missing"`
}

type artifactManifest struct {
	Type         string                     `json:"type"`
	Environment  string                     `json:"environment"`
	Dependencies []string                   `json:"dependencies"`
	DisplayName  string                     `json:"displayName"`
	Metadata     map[string][]metadataEntry `json:"metadata"`
	MetadataFile string                     `json:"additionalMetadataFile"`
	Properties   json.RawMessage            `json:"properties"`
}

type metadataEntry struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// stackProperties is the schema's AwsCloudFormationStackProperties, as cairn reads it.
type stackProperties struct {
	TemplateFile                      string            `json:"templateFile"`
	Parameters                        map[string]string `json:"parameters"`
	Tags                              map[string]string `json:"tags"`
	NotificationARNs                  []string          `json:"notificationArns"`
	StackName                         string            `json:"stackName"`
	TerminationProtection             bool              `json:"terminationProtection"`
	AssumeRoleARN                     string            `json:"assumeRoleArn"`
	AssumeRoleExternalID              string            `json:"assumeRoleExternalId"`
	CloudFormationExecutionRoleARN    string            `json:"cloudFormationExecutionRoleArn"`
	RequiresBootstrapStackVersion     int               `json:"requiresBootstrapStackVersion"`
	BootstrapStackVersionSSMParameter string            `json:"bootstrapStackVersionSsmParameter"`
	AdditionalDependencies            []string          `json:"additionalDependencies"`
}

// assetManifestProperties is the schema's AssetManifestProperties.
type assetManifestProperties struct {
	File                              string `json:"file"`
	RequiresBootstrapStackVersion     int    `json:"requiresBootstrapStackVersion"`
	BootstrapStackVersionSSMParameter string `json:"bootstrapStackVersionSsmParameter"`
}

// nestedProperties is the schema's NestedCloudAssemblyProperties.
type nestedProperties struct {
	DirectoryName string `json:"directoryName"`
	DisplayName   string `json:"displayName"`
}

// assetManifest is the cdk-assets manifest format (AssetManifest), as cairn reads it.
type assetManifest struct {
	Version string `json:"version"`
	Files   map[string]struct {
		DisplayName string `json:"displayName"`
		Source      struct {
			Path       string   `json:"path"`
			Packaging  string   `json:"packaging"`
			Executable []string `json:"executable"`
		} `json:"source"`
		Destinations map[string]destination `json:"destinations"`
	} `json:"files"`
	DockerImages map[string]struct {
		DisplayName  string                 `json:"displayName"`
		Destinations map[string]destination `json:"destinations"`
	} `json:"dockerImages"`
}

type destination struct {
	Region               string `json:"region"`
	AssumeRoleARN        string `json:"assumeRoleArn"`
	AssumeRoleExternalID string `json:"assumeRoleExternalId"`
	BucketName           string `json:"bucketName"`
	ObjectKey            string `json:"objectKey"`
	RepositoryName       string `json:"repositoryName"`
	ImageTag             string `json:"imageTag"`
}

// environmentRE is the schema's environment format, aws://ACCOUNT/REGION.
var environmentRE = regexp.MustCompile(`^aws://([a-zA-Z0-9\-@._]+)/([a-z0-9-]+)$`)

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

type reader struct {
	root  string // the root assembly's folder
	fsys  fs.FS
	files *artifact.Set
	errs  Errors
	seen  map[string]bool // assembly folders read
}

func (r *reader) errorf(file, key, format string, args ...any) {
	r.errs = append(r.errs, Error{File: file, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// file returns the bundle path of name, relative to the folder dir, or false (reported)
// when it is absolute or leaves the bundle.
func (r *reader) file(file, key, dir, name string) (string, bool) {
	p := path.Join(dir, name)
	if name == "" || path.IsAbs(name) || p == ".." || strings.HasPrefix(p, "../") {
		r.errorf(file, key, "%q is not a path inside the bundle", name)
		return "", false
	}
	return p, true
}

// readJSON decodes a file of the bundle into v, reporting why it cannot.
func (r *reader) readJSON(file string, v any) bool {
	body, err := bundle.ReadFile(r.fsys, file)
	if err != nil {
		r.errorf(file, "", "cannot read it: %v", cause(err))
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		r.errorf(file, "", "not the JSON cdk synth writes: %v", err)
		return false
	}
	return true
}

// cause is an fs error without the path it repeats.
func cause(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// assembly reads the manifest of the assembly in dir; prefix is the display name of a
// nested assembly, for its stacks that name none.
func (r *reader) assembly(a *Assembly, dir, prefix string, depth int) {
	file := path.Join(dir, bundle.AssemblyManifest)
	if r.seen[dir] {
		return
	}
	r.seen[dir] = true
	var m manifest
	if !r.readJSON(file, &m) {
		return
	}
	if depth == 0 {
		a.Version = m.Version
	}
	if m.Version == "" {
		r.errorf(file, "version", "missing: is this the manifest.json of a cloud assembly (cdk.out)?")
	} else if _, err := strconv.Atoi(strings.SplitN(m.Version, ".", 2)[0]); err != nil {
		r.errorf(file, "version", "%q is not a cloud assembly schema version", m.Version)
	}
	for _, miss := range m.Missing {
		r.errorf(file, "missing", "the app looks up %s (context key %s) in AWS when it is synthesized, and the assembly lacks it: run cdk synth with credentials of the account, which records the value in cdk.context.json, commit that file, and synthesize again", miss.Provider, miss.Key)
	}
	ids := slices.Sorted(maps.Keys(m.Artifacts))
	stacks := map[string]*Stack{}
	for _, id := range ids {
		art := m.Artifacts[id]
		key := "artifacts." + id
		switch art.Type {
		case typeStack:
			if s := r.stack(file, dir, prefix, id, art); s != nil {
				stacks[id] = s
				a.Stacks = append(a.Stacks, s)
			}
		case typeAssembly:
			var p nestedProperties
			if err := json.Unmarshal(art.Properties, &p); err != nil || p.DirectoryName == "" {
				r.errorf(file, key+".properties.directoryName", "a nested assembly needs its folder")
				continue
			}
			sub, ok := r.file(file, key+".properties.directoryName", dir, p.DirectoryName)
			if !ok {
				continue
			}
			if depth+1 >= maxDepth {
				r.errorf(file, key, "nested assemblies more than %d deep", maxDepth)
				continue
			}
			name := p.DisplayName
			if name == "" {
				name = joinPath(prefix, id)
			}
			r.assembly(a, sub, name, depth+1)
		}
	}
	// Dependencies and assets, once every artifact of the manifest is known.
	for _, id := range ids {
		s := stacks[id]
		if s == nil {
			continue
		}
		art := m.Artifacts[id]
		var p stackProperties
		_ = json.Unmarshal(art.Properties, &p)
		deps := append(slices.Clone(art.Dependencies), p.AdditionalDependencies...)
		seen := map[string]bool{}
		for _, dep := range deps {
			if seen[dep] {
				continue
			}
			seen[dep] = true
			if other := stacks[dep]; other != nil {
				s.Requires = append(s.Requires, other.Path)
				continue
			}
			if da, ok := m.Artifacts[dep]; ok && da.Type == typeAssets {
				r.assets(s, file, dir, dep, da)
			}
		}
		slices.Sort(s.Requires)
	}
}

// names checks the names a stack artifact gives, which become the stack's name in cairn
// (displayName, else the nested assemblies' names and the artifact id joined with /) and
// its CloudFormation stack name (stackName, else the artifact id): each part of the first
// and the second whole obey CloudFormation's stack-name rule, so no name printed, logged
// or tagged carries a line break, an escape sequence or anything but letters, digits and
// hyphens. A name that does not is reported and the stack left out.
func (r *reader) names(file, key, displayName, stackName string, s *Stack) bool {
	ok := true
	refuse := func(at, what, name, rename string) {
		r.errorf(file, at, "%s %q is not a name cairn accepts: %s; %s and synthesize again", what, name, nameRule, rename)
		ok = false
	}
	if !StackNameOK(s.ID) {
		refuse(key, "artifact id", s.ID, "rename the stack's construct (its id in the CDK app)")
		return false
	}
	if displayName != "" && !pathOK(displayName) {
		refuse(key+".displayName", "displayName", displayName, "rename the stack's construct or its stage (their ids in the CDK app)")
	} else if !pathOK(s.Path) {
		refuse(key, "stack path", s.Path, "rename the stage holding the stack (its id in the CDK app)")
	}
	if stackName != "" && !StackNameOK(stackName) {
		refuse(key+".properties.stackName", "stackName", stackName, "give the stack a valid stackName in the CDK app")
	}
	return ok
}

// nameRule says what StackNameOK accepts.
const nameRule = "each part between slashes of a stack's path, and its CloudFormation stack name, must start with a letter and hold only letters, digits and hyphens, at most 128 characters"

// StackNameOK reports whether s is a CloudFormation stack name: [A-Za-z][-A-Za-z0-9]{0,127}.
func StackNameOK(s string) bool {
	if s == "" || len(s) > 128 || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !('0' <= c && c <= '9') && c != '-' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// pathOK reports whether p is a stack's path: stack names (StackNameOK) joined with /.
func pathOK(p string) bool {
	for part := range strings.SplitSeq(p, "/") {
		if !StackNameOK(part) {
			return false
		}
	}
	return true
}

func joinPath(prefix, id string) string {
	if prefix == "" {
		return id
	}
	return prefix + "/" + id
}

// stack reads one stack artifact.
func (r *reader) stack(file, dir, prefix, id string, art artifactManifest) *Stack {
	key := "artifacts." + id
	var p stackProperties
	if err := json.Unmarshal(art.Properties, &p); err != nil {
		r.errorf(file, key+".properties", "not a stack's properties: %v", err)
		return nil
	}
	s := &Stack{ID: id, Manifest: file, Dir: r.root, Path: art.DisplayName, StackName: p.StackName, Parameters: p.Parameters, Tags: p.Tags,
		NotificationARNs: p.NotificationARNs, TerminationProtection: p.TerminationProtection,
		DeployRole: p.AssumeRoleARN, DeployExternalID: p.AssumeRoleExternalID, ExecutionRole: p.CloudFormationExecutionRoleARN,
		Bootstrap: Bootstrap{Version: p.RequiresBootstrapStackVersion, Parameter: p.BootstrapStackVersionSSMParameter}, Bundle: r.files}
	if s.Path == "" {
		s.Path = joinPath(prefix, id)
	}
	if s.StackName == "" {
		s.StackName = id
	}
	if !r.names(file, key, art.DisplayName, p.StackName, s) {
		return nil
	}
	if p.TemplateFile == "" {
		r.errorf(file, key+".properties.templateFile", "missing: stack %s names no template", s.Path)
		return nil
	}
	t, ok := r.file(file, key+".properties.templateFile", dir, p.TemplateFile)
	if !ok {
		return nil
	}
	s.Template = t
	if st, err := fs.Stat(r.fsys, t); err != nil || !st.Mode().IsRegular() {
		r.errorf(file, key+".properties.templateFile", "stack %s: its template %s is not in the bundle", s.Path, t)
		return nil
	}
	if art.Environment != "" {
		m := environmentRE.FindStringSubmatch(art.Environment)
		if m == nil {
			r.errorf(file, key+".environment", "%q is not aws://ACCOUNT/REGION", art.Environment)
			return nil
		}
		if m[1] != unknownAccount {
			s.Account = m[1]
		}
		if m[2] != unknownRegion {
			s.Region = m[2]
		}
	}
	r.annotations(s, file, key, dir, art)
	s.NestedStacks = r.nestedStacks(t)
	return s
}

// annotations reports the error annotations of the stack's constructs (aws:cdk:error),
// which `cdk deploy` refuses too, from the manifest and the stack's additional metadata
// file when the bundle has it (the bundle cairn zips leaves metadata files out).
func (r *reader) annotations(s *Stack, file, key, dir string, art artifactManifest) {
	meta := art.Metadata
	if art.MetadataFile != "" {
		if p, ok := r.file(file, key+".additionalMetadataFile", dir, art.MetadataFile); ok {
			if body, err := bundle.ReadFile(r.fsys, p); err == nil {
				var more map[string][]metadataEntry
				if json.Unmarshal(body, &more) == nil {
					meta = mergeMetadata(meta, more)
				}
			}
		}
	}
	for _, at := range slices.Sorted(maps.Keys(meta)) {
		for _, e := range meta[at] {
			if e.Type != "aws:cdk:error" {
				continue
			}
			var msg string
			if json.Unmarshal(e.Data, &msg) != nil {
				msg = string(e.Data)
			}
			r.errorf(file, key, "stack %s: the app reported an error at %s: %s: fix the app and synthesize again", s.Path, at, msg)
		}
	}
}

func mergeMetadata(a, b map[string][]metadataEntry) map[string][]metadataEntry {
	out := map[string][]metadataEntry{}
	for k, v := range a {
		out[k] = append(out[k], v...)
	}
	for k, v := range b {
		out[k] = append(out[k], v...)
	}
	return out
}

// nestedStacks reports whether the template has AWS::CloudFormation::Stack resources; a
// template cairn cannot read is left for the config's checks to report.
func (r *reader) nestedStacks(template string) bool {
	body, err := bundle.ReadFile(r.fsys, template)
	if err != nil {
		return false
	}
	var t struct {
		Resources map[string]struct{ Type string }
	}
	if json.Unmarshal(body, &t) != nil {
		return false
	}
	for _, res := range t.Resources {
		if res.Type == "AWS::CloudFormation::Stack" {
			return true
		}
	}
	return false
}

// assets reads the asset manifest artifact id the stack depends on.
func (r *reader) assets(s *Stack, file, dir, id string, art artifactManifest) {
	key := "artifacts." + id + ".properties.file"
	var p assetManifestProperties
	if err := json.Unmarshal(art.Properties, &p); err != nil || p.File == "" {
		r.errorf(file, key, "an asset manifest needs its file")
		return
	}
	if p.RequiresBootstrapStackVersion > s.Bootstrap.Version {
		s.Bootstrap.Version = p.RequiresBootstrapStackVersion
	}
	if s.Bootstrap.Parameter == "" {
		s.Bootstrap.Parameter = p.BootstrapStackVersionSSMParameter
	}
	mf, ok := r.file(file, key, dir, p.File)
	if !ok {
		return
	}
	var m assetManifest
	if !r.readJSON(mf, &m) {
		return
	}
	mdir := path.Dir(mf)
	for _, aid := range slices.Sorted(maps.Keys(m.Files)) {
		f := m.Files[aid]
		fa := FileAsset{ID: aid, Name: f.DisplayName, Manifest: mf, Executable: f.Source.Executable}
		akey := "files." + aid
		switch {
		case len(f.Source.Executable) > 0:
		case f.Source.Path == "":
			r.errorf(mf, akey+".source", "names neither a path nor an executable")
			continue
		default:
			src, ok := r.file(mf, akey+".source.path", mdir, f.Source.Path)
			if !ok {
				continue
			}
			fa.Source = src
			switch f.Source.Packaging {
			case "", "file":
			case "zip":
				fa.Zip = true
			default:
				r.errorf(mf, akey+".source.packaging", "unknown packaging %q: cdk-assets knows file and zip", f.Source.Packaging)
				continue
			}
			st, err := fs.Stat(r.fsys, src)
			switch {
			case err != nil:
				r.errorf(mf, akey+".source.path", "asset %s: %s is not in the bundle", fa.Label(), src)
				continue
			case fa.Zip != st.IsDir():
				want := "a file"
				if fa.Zip {
					want = "a folder"
				}
				r.errorf(mf, akey+".source.path", "asset %s: %s is not %s, which packaging %q needs", fa.Label(), src, want, f.Source.Packaging)
				continue
			}
		}
		for _, did := range slices.Sorted(maps.Keys(f.Destinations)) {
			d := f.Destinations[did]
			if d.BucketName == "" || d.ObjectKey == "" {
				r.errorf(mf, akey+".destinations."+did, "a file destination needs bucketName and objectKey")
				continue
			}
			fa.Destinations = append(fa.Destinations, Destination{ID: did, Region: d.Region, RoleARN: d.AssumeRoleARN,
				ExternalID: d.AssumeRoleExternalID, Bucket: d.BucketName, Key: d.ObjectKey})
		}
		s.Files = append(s.Files, fa)
	}
	for _, aid := range slices.Sorted(maps.Keys(m.DockerImages)) {
		im := m.DockerImages[aid]
		ia := ImageAsset{ID: aid, Name: im.DisplayName, Manifest: mf}
		for _, did := range slices.Sorted(maps.Keys(im.Destinations)) {
			d := im.Destinations[did]
			if d.RepositoryName == "" || d.ImageTag == "" {
				r.errorf(mf, "dockerImages."+aid+".destinations."+did, "an image destination needs repositoryName and imageTag")
				continue
			}
			ia.Destinations = append(ia.Destinations, Destination{ID: did, Region: d.Region, RoleARN: d.AssumeRoleARN,
				ExternalID: d.AssumeRoleExternalID, Repository: d.RepositoryName, Tag: d.ImageTag})
		}
		s.Images = append(s.Images, ia)
	}
}
