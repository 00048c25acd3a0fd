package state

import (
	"fmt"
	"sort"
)

// Tags cairn puts on every stack it creates. From them alone the persistent graph can be
// rebuilt if its object is lost, and anyone can tell which git ref is applied.
const (
	TagNamespace    = "cairn:namespace"
	TagGraphKey     = "cairn:graph-key"
	TagName         = "cairn:name"
	TagGitRef       = "cairn:git-ref"
	TagGitRemote    = "cairn:git-remote"
	TagBundleSHA256 = "cairn:bundle-sha256"
	// The tags below let Rebuild give back the graph exactly rather than approximately.
	TagBundleVersion  = "cairn:bundle-version"
	TagTemplateHash   = "cairn:template-sha256"
	TagParametersHash = "cairn:parameters-sha256"
	// TagRequires holds the comma-separated config names the stack requires; when that is
	// longer than a tag value allows it continues in cairn:requires-2, cairn:requires-3...
	TagRequires = "cairn:requires"
	// TagStackOptions is the hash of the stack options cairn applied (stack policy,
	// notification topics, rollback triggers...), so a change of them alone updates the
	// stack; absent when it has none.
	TagStackOptions = "cairn:stack-options"
)

// maxTagValue is CloudFormation's limit on a tag value's length.
const maxTagValue = 256

// StackTags returns the cairn:* tags of stack st in graph namespace/key applied from
// bundle. The deployer sets them on the stack; Rebuild reads them back. Empty values are
// left out, since CloudFormation refuses empty tag values.
func StackTags(namespace, key string, bundle BundleRef, st *Stack) map[string]string {
	tags := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			tags[k] = v
		}
	}
	set(TagNamespace, namespace)
	set(TagGraphKey, key)
	set(TagName, st.Name)
	set(TagGitRef, bundle.GitRef)
	set(TagGitRemote, bundle.GitRemote)
	set(TagBundleSHA256, bundle.SHA256)
	set(TagBundleVersion, bundle.VersionID)
	set(TagTemplateHash, st.TemplateHash)
	set(TagParametersHash, st.ParametersHash)
	reqs := append([]string(nil), st.Requires...)
	sort.Strings(reqs)
	var chunk string
	n := 1
	flush := func() {
		if chunk == "" {
			return
		}
		k := TagRequires
		if n > 1 {
			k = fmt.Sprintf("%s-%d", TagRequires, n)
		}
		tags[k] = chunk
		chunk = ""
		n++
	}
	for _, r := range reqs {
		if chunk != "" && len(chunk)+1+len(r) > maxTagValue {
			flush()
		}
		if chunk != "" {
			chunk += ","
		}
		chunk += r
	}
	flush()
	return tags
}
