package config

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/template"
)

// needsBuilding says why the folder src of function or layer code a names must be built
// before it deploys, as `sam build` builds it, or "" when it deploys as it is: a resource
// with Metadata.BuildMethod that `sam build` did not build, a package.json listing
// dependencies with no node_modules beside it, a requirements.txt listing packages with
// none installed beside it (pip, as sam build, leaves a NAME.dist-info folder for each),
// a TypeScript handler with no JavaScript built from it. Deployed as source, such code
// fails when it is first called.
func needsBuilding(fsys fs.FS, a template.Artifact, b template.Build, src string) string {
	if b.Method != "" && !b.Built {
		return fmt.Sprintf("Metadata BuildMethod %s, which sam build runs", b.Method)
	}
	if a.Kind != artifact.FunctionCode {
		return ""
	}
	entries, err := fs.ReadDir(fsys, src)
	if err != nil {
		return ""
	}
	has := map[string]bool{}
	installed := false
	for _, e := range entries {
		has[e.Name()] = true
		if e.IsDir() && (strings.HasSuffix(e.Name(), ".dist-info") || strings.HasSuffix(e.Name(), ".egg-info")) {
			installed = true
		}
	}
	if has["package.json"] && !has["node_modules"] {
		if body, err := fs.ReadFile(fsys, path.Join(src, "package.json")); err == nil {
			var p struct {
				Dependencies map[string]any `json:"dependencies"`
			}
			if json.Unmarshal(body, &p) == nil && len(p.Dependencies) > 0 {
				return "package.json lists dependencies not installed there: no node_modules"
			}
		}
	}
	if has["requirements.txt"] && !installed {
		if body, err := fs.ReadFile(fsys, path.Join(src, "requirements.txt")); err == nil && listsPackages(string(body)) {
			return "requirements.txt lists packages not installed there"
		}
	}
	if i := strings.LastIndex(b.Handler, "."); i > 0 {
		module := path.Join(src, b.Handler[:i])
		if exists(fsys, module+".ts") && !exists(fsys, module+".js") && !exists(fsys, module+".mjs") && !exists(fsys, module+".cjs") {
			return fmt.Sprintf("its handler %s.ts is TypeScript, with no %s.js built from it", b.Handler[:i], b.Handler[:i])
		}
	}
	return ""
}

// listsPackages reports whether a requirements file names a package: a line that is not
// blank, a comment, or an option (-r, --index-url, ...).
func listsPackages(body string) bool {
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "-") {
			return true
		}
	}
	return false
}

func exists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}
