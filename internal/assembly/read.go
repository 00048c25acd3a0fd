package assembly

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/bundle"
)

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
