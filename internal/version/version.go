// Package version says which cairn is running: its module version, the commit it was
// built from and the Go that built it, from what the build recorded (runtime/debug).
//
// The Makefile builds with -buildvcs=false (builds stay reproducible without git), so it
// records the commit itself, at link time, in Commit; a build with VCS stamping records
// it in the build info, which is used when Commit is empty.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Commit is the commit the binary was built from, set by the Makefile:
// -ldflags "-X github.com/cairn-dev/cairn/internal/version.Commit=SHA[-dirty]".
var Commit string

// Info is what a binary says about itself.
type Info struct {
	// Version is the module's version: a release tag, a pseudo-version, or "devel" for a
	// build of a work tree.
	Version string `json:"version"`
	// Commit is the VCS revision, "" when unknown; Modified says the work tree had
	// changes not committed.
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Time is the commit's time (RFC 3339), when recorded.
	Time string `json:"commit_time,omitempty"`
	// Go is the Go version, and Platform the OS and architecture, of the build.
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// Read is this binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return FromBuild(bi, Commit)
}

// FromBuild is the Info of build info bi (nil when the binary has none) and a commit set
// at link time ("" when none was; a "-dirty" suffix says the tree was modified).
func FromBuild(bi *debug.BuildInfo, commit string) Info {
	i := Info{Version: "devel", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		i.Commit, i.Modified = parseCommit(commit)
		return i
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		i.Version = v
	}
	if bi.GoVersion != "" {
		i.Go = bi.GoVersion
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Commit = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		case "vcs.time":
			i.Time = s.Value
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" && goarch != "" {
		i.Platform = goos + "/" + goarch
	}
	if commit != "" {
		i.Commit, i.Modified = parseCommit(commit)
		i.Time = ""
	}
	return i
}

func parseCommit(c string) (string, bool) {
	c = strings.TrimSpace(c)
	sha, dirty := strings.CutSuffix(c, "-dirty")
	return sha, dirty
}

// String is one line: "devel (commit 1a2b3c4d5e6f, modified) go1.26.0 linux/amd64".
func (i Info) String() string {
	s := i.Version
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if i.Modified {
			c += ", modified"
		}
		s += " (commit " + c + ")"
	}
	return fmt.Sprintf("%s %s %s", s, i.Go, i.Platform)
}
