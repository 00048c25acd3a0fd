package template

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// peerCacheFile keeps what cfn-lint said of each template TestPeerCfnLint compares, by the
// template's SHA-256 and extension (never its path or text), so the test runs cfn-lint
// only on templates it has not seen: CAIRN_PEER_REFRESH=1 reruns cfn-lint on every
// template and rewrites the file (after upgrading cfn-lint, or to judge runtimes anew).
const peerCacheFile = "testdata/peer-cfnlint.json"

type peerError struct {
	Line int    `json:"line"`
	Rule string `json:"rule"`
	Msg  string `json:"message"`
}

type peerCache struct {
	CfnLint string                 `json:"cfn-lint"`
	Day     string                 `json:"day"` // the day cfn-lint judged runtimes on
	Errors  map[string][]peerError `json:"errors"`
}

func peerKey(f string) (string, error) {
	body, err := os.ReadFile(f)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:]) + filepath.Ext(f), nil
}

// peerLintErrors returns cfn-lint's errors (E rules) per file, and the day to judge
// runtimes on: from the cache for the templates it has, from cfn-lint for the others
// (skipping the test when cfn-lint is absent and the cache lacks some, or when the
// installed cfn-lint is another version than the cache's).
func peerLintErrors(t *testing.T, files []string) (map[string][]finding, string) {
	var cache peerCache
	if raw, err := os.ReadFile(peerCacheFile); err == nil {
		if err := json.Unmarshal(raw, &cache); err != nil {
			t.Fatalf("%s: %v (CAIRN_PEER_REFRESH=1 rewrites it)", peerCacheFile, err)
		}
	}
	refresh := os.Getenv("CAIRN_PEER_REFRESH") != ""
	if cache.Errors == nil || refresh {
		cache = peerCache{Day: Today(), Errors: map[string][]peerError{}}
	}
	keys := map[string]string{}
	var missing []string
	for _, f := range files {
		k, err := peerKey(f)
		if err != nil {
			t.Fatal(err)
		}
		keys[f] = k
		if _, ok := cache.Errors[k]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		lint, err := exec.LookPath("cfn-lint")
		if err != nil {
			t.Skipf("cfn-lint is not installed (pip install cfn-lint) and %d templates have no stored verdict in %s: the peer check is skipped", len(missing), peerCacheFile)
		}
		version, _ := exec.Command(lint, "--version").Output()
		installed := strings.TrimPrefix(strings.TrimSpace(string(version)), "cfn-lint ")
		if cache.CfnLint != "" && cache.CfnLint != installed {
			t.Skipf("%s holds cfn-lint %s's verdicts, cfn-lint %s is installed: CAIRN_PEER_REFRESH=1 go test -run TestPeerCfnLint rewrites it", peerCacheFile, cache.CfnLint, installed)
		}
		cache.CfnLint = installed
		for f, errs := range runPeerLint(t, lint, missing) {
			cache.Errors[keys[f]] = errs
		}
		for _, f := range missing {
			if _, ok := cache.Errors[keys[f]]; !ok {
				cache.Errors[keys[f]] = []peerError{}
			}
		}
		t.Logf("cfn-lint ran on %d templates the cache lacked (CAIRN_PEER_REFRESH=1 stores them)", len(missing))
		if refresh {
			writePeerCache(t, cache, keys)
		}
	}
	out := map[string][]finding{}
	for _, f := range files {
		for _, e := range cache.Errors[keys[f]] {
			out[f] = append(out[f], finding{f, e.Line, e.Rule, e.Msg})
		}
	}
	return out, cache.Day
}

// writePeerCache stores the verdicts of the templates compared now (and no others).
func writePeerCache(t *testing.T, cache peerCache, keys map[string]string) {
	kept := map[string][]peerError{}
	for _, k := range keys {
		kept[k] = cache.Errors[k]
	}
	cache.Errors = kept
	raw, err := json.MarshalIndent(cache, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(peerCacheFile, append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runPeerLint runs cfn-lint once over files and returns its errors (E rules) per file.
func runPeerLint(t *testing.T, lint string, files []string) map[string][]peerError {
	cmd := exec.Command(lint, append([]string{"--format", "parseable", "--"}, files...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("cfn-lint: %v", err)
		}
	}
	errs := map[string][]peerError{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// FILE:LINE:COL:ENDLINE:ENDCOL:RULE:MESSAGE
		parts := strings.SplitN(sc.Text(), ":", 7)
		if len(parts) < 7 || !strings.HasPrefix(parts[5], "E") {
			continue
		}
		line, _ := strconv.Atoi(parts[1])
		errs[parts[0]] = append(errs[parts[0]], peerError{line, parts[5], parts[6]})
	}
	for _, e := range errs {
		sort.SliceStable(e, func(i, j int) bool { return e[i].Line < e[j].Line })
	}
	return errs
}
