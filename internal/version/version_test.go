package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/cairn-dev/cairn", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.modified", Value: "true"},
			{Key: "vcs.time", Value: "2026-11-30T08:00:00Z"}, {Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"}}}
	unstamped := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/cairn-dev/cairn", Version: "(devel)"}}
	here := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name   string
		bi     *debug.BuildInfo
		commit string
		want   Info
		line   string
	}{
		{"a release built with VCS stamping", stamped, "", Info{Version: "v0.3.0", Commit: "1a2b3c4d5e6f7a8b9c0d", Modified: true, Time: "2026-11-30T08:00:00Z", Go: "go1.26.0", Platform: "linux/arm64"},
			"v0.3.0 (commit 1a2b3c4d5e6f, modified) go1.26.0 linux/arm64"},
		{"make: -buildvcs=false, the commit linked in", unstamped, "0123456789ab", Info{Version: "devel", Commit: "0123456789ab", Go: "go1.26.0", Platform: here},
			"devel (commit 0123456789ab) go1.26.0 " + here},
		{"make in a modified tree", unstamped, "0123456789ab-dirty", Info{Version: "devel", Commit: "0123456789ab", Modified: true, Go: "go1.26.0", Platform: here},
			"devel (commit 0123456789ab, modified) go1.26.0 " + here},
		{"the linked commit wins over the stamped one", stamped, "feedface", Info{Version: "v0.3.0", Commit: "feedface", Go: "go1.26.0", Platform: "linux/arm64"},
			"v0.3.0 (commit feedface) go1.26.0 linux/arm64"},
		{"go run without git", unstamped, "", Info{Version: "devel", Go: "go1.26.0", Platform: here}, "devel go1.26.0 " + here},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromBuild(tt.bi, tt.commit)
			if got != tt.want || got.String() != tt.line {
				t.Errorf("FromBuild = %+v %q\nwant %+v %q", got, got.String(), tt.want, tt.line)
			}
		})
	}
}
