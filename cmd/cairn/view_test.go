package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/follow"
	runstate "github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
)

// TestLogViewNamesTheSlowest: in a log (no terminal), a resource in progress has no line
// of its own; every 30 seconds while one is, a line names the slowest; a settled or
// failed resource gets its line, the failure with its reason.
func TestLogViewNamesTheSlowest(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	v := newTextView(&out)
	doc := &rundoc.Document{Run: &runstate.Run{ID: "r1", Deployment: "shop", Mode: runstate.ModeDeploy, Status: runstate.Running, StartedAt: t0,
		Stacks: map[string]*runstate.Stack{"cache": {Name: "cache", StackName: "shop-cache", Phase: runstate.Executing}}}}
	v.Found(doc)
	res := func(id, status, reason string, at time.Duration) follow.Resource {
		return follow.Resource{Stack: "cache", StackName: "shop-cache", LogicalID: id, Type: "AWS::ElastiCache::ReplicationGroup", Status: status, Reason: reason, At: t0.Add(at), Elapsed: at}
	}
	v.Changed(res("Cache", "UPDATE_IN_PROGRESS", "", 2*time.Second))
	v.Changed(res("Group", "UPDATE_IN_PROGRESS", "", 5*time.Second))
	for _, at := range []time.Duration{10, 25, 33, 40, 50, 64} {
		v.Polled(doc, t0.Add(at*time.Second))
	}
	v.Changed(res("Group", "UPDATE_FAILED", "Resource handler returned message: \"denied\"", 70*time.Second))
	v.close()
	want := `run r1 of deployment shop: push
  00:33  still in progress, slowest first: cache Cache (AWS::ElastiCache::ReplicationGroup, 31s), cache Group (AWS::ElastiCache::ReplicationGroup, 28s)
  01:04  still in progress, slowest first: cache Cache (AWS::ElastiCache::ReplicationGroup, 1m02s), cache Group (AWS::ElastiCache::ReplicationGroup, 59s)
  01:10  cache            Group  AWS::ElastiCache::ReplicationGroup  UPDATE_FAILED: Resource handler returned message: "denied"
`
	if got := out.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("a log holds terminal escapes")
	}
}
