package history_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
)

// TestPage: the page of a plan's id is the plan's, of a run's the run's, with why it is
// not in the bucket yet for a run that started no stack yet or was quiet (a running run
// that did has one); no id is the newest run; an unknown id or a deployment without runs
// is ErrNotFound or ErrNothingDeployed.
func TestPage(t *testing.T) {
	c := bucket(t)
	ctx := context.Background()
	s := &history.Store{S3: c, Bucket: "cairn"}
	if _, err := s.Page(ctx, "shop", ""); !errors.Is(err, history.ErrNothingDeployed) {
		t.Fatalf("no runs: %v", err)
	}
	quiet := doc("20261130-070000-qqqq", run.ModeDeploy, "", run.Succeeded, run.Unchanged)
	quiet.Quiet = true
	put(t, c, layout.RunKey("shop", quiet.Run.ID), quiet)
	put(t, c, layout.RunKey("shop", "20261130-080000-aaaa"), doc("20261130-080000-aaaa", run.ModeDeploy, "", run.Succeeded, run.Done))
	put(t, c, layout.RunKey("shop", "20261130-090000-bbbb"), doc("20261130-090000-bbbb", run.ModePlan, "", run.Succeeded, run.Ready))
	put(t, c, layout.PlanKey("shop", "20261130-090000-bbbb"), &plan.Document{ID: "20261130-090000-bbbb", Deployment: "shop", Status: plan.Planned, Run: doc("20261130-090000-bbbb", run.ModePlan, "", run.Succeeded, run.Ready).Run})
	put(t, c, layout.RunKey("shop", "20261130-100000-cccc"), doc("20261130-100000-cccc", run.ModeDeploy, "", run.Running, run.Executing))
	live := doc("20261130-110000-dddd", run.ModeDeploy, "", run.Running, run.Executing)
	live.PageAt = live.Run.StartedAt
	put(t, c, layout.RunKey("shop", live.Run.ID), live)
	for _, tc := range []struct {
		id, key, unwritten string
		plan               bool
	}{
		{"20261130-080000-aaaa", "runs/shop/20261130-080000-aaaa.html", "", false},
		{"20261130-090000-bbbb", "plans/shop/20261130-090000-bbbb.html", "", true},
		{"20261130-070000-qqqq", "runs/shop/20261130-070000-qqqq.html", "found nothing to change", false},
		{"20261130-100000-cccc", "runs/shop/20261130-100000-cccc.html", "has started no stack yet: its page is written once it does; follow it meanwhile with `cairn follow shop`", false},
		{"", "runs/shop/20261130-110000-dddd.html", "", false},
		{"20261130-110000-dddd", "runs/shop/20261130-110000-dddd.html", "", false},
	} {
		p, err := s.Page(ctx, "shop", tc.id)
		if err != nil || p.Key != tc.key || p.Plan != tc.plan || (tc.unwritten == "") != (p.Unwritten == "") || !strings.Contains(p.Unwritten, tc.unwritten) {
			t.Errorf("Page(%q) = %+v, %v; want key %s, plan %v, unwritten %q", tc.id, p, err, tc.key, tc.plan, tc.unwritten)
		}
	}
	if _, err := s.Page(ctx, "shop", "nope"); !errors.Is(err, history.ErrNotFound) || !strings.Contains(err.Error(), "deployment shop has no run or plan nope") {
		t.Errorf("an unknown id: %v", err)
	}
}
