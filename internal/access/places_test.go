package access

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/target"
)

// client stands for a CloudFormation client: the configuration it was built from.
type client struct {
	region string
	creds  bool
}

// TestPlacesGiveOneClientAndBudgetPerPlace: home is the function's own client; another
// region, or a role, gets a client built once per session and place, and each place its
// own budget; Forget drops them with the session's credentials.
func TestPlacesGiveOneClientAndBudgetPerPlace(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC))
	f := &fakeSTS{clk: clk}
	r := &Reacher{Base: aws.Config{Region: "us-east-1"}, STS: f, Clock: clk}
	own := &client{region: "us-east-1"}
	dials, budgets := 0, 0
	p := NewPlaces(PlacesConfig[*client]{Session: "run-1", Reacher: r, Home: own,
		Dial:   func(c aws.Config) *client { dials++; return &client{region: c.Region, creds: c.Credentials != nil} },
		Budget: func() *rate.Limiter { budgets++; return rate.NewLimiter(1, 1) }})
	ctx := context.Background()
	role := target.Spec{Region: "eu-west-1", RoleARN: "arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1"}
	for range 3 {
		for _, tc := range []struct {
			spec  target.Spec
			want  client
			home  bool
			place target.Target
		}{
			{spec: target.Spec{}, want: client{region: "us-east-1"}, home: true},
			{spec: target.Spec{Region: "us-east-1"}, want: client{region: "us-east-1"}, home: true},
			{spec: target.Spec{Region: "us-west-2"}, want: client{region: "us-west-2"}, place: target.Target{Region: "us-west-2"}},
			{spec: role, want: client{region: "eu-west-1", creds: true}, place: target.Target{Account: "111111111111", Region: "eu-west-1"}},
		} {
			c, b, err := p.At(ctx, tc.spec)
			if err != nil || *c != tc.want || (c == own) != tc.home || b != p.Budget(tc.place) {
				t.Fatalf("At(%+v) = %+v (own %v), budget of %v %v, %v; want %+v", tc.spec, *c, c == own, tc.place, b == p.Budget(tc.place), err, tc.want)
			}
		}
	}
	if dials != 2 || budgets != 3 || len(f.calls) != 1 {
		t.Errorf("%d clients built, %d budgets made, %d roles assumed; want 2, 3 (home, us-west-2, the role's place) and 1", dials, budgets, len(f.calls))
	}
	p.Forget()
	if _, _, err := p.At(ctx, role); err != nil || dials != 3 || len(f.calls) != 2 {
		t.Errorf("after Forget: %d clients built, %d roles assumed (%v); want the role assumed and its client built again", dials, len(f.calls), err)
	}

	homeOnly := NewPlaces(PlacesConfig[*client]{Session: "run-2", Home: own, Region: "us-east-1"})
	if h, err := homeOnly.Home(ctx, true); err != nil || h != (target.Target{Region: "us-east-1"}) {
		t.Errorf("Home without a reacher = %v, %v", h, err)
	}
	if _, _, err := homeOnly.At(ctx, target.Spec{Region: "us-west-2"}); err == nil {
		t.Error("a session without a reacher reached another region")
	}
}

// TestSurveyKeepsHomeFailingAndOtherPlacesUnreachable: a place that cannot be read is
// unreachable with the reason, in STS's words for a refused role; home failing fails the
// survey.
func TestSurveyKeepsHomeFailingAndOtherPlacesUnreachable(t *testing.T) {
	far := target.Target{Account: "222222222222", Region: "eu-central-1"}
	west := target.Target{Region: "us-west-2"}
	where := map[target.Target]target.Spec{{}: {}, far: {Region: "eu-central-1", RoleARN: "arn:aws:iam::222222222222:role/x"}, west: {Region: "us-west-2"}}
	throttled := &smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"}
	refused := &Refused{msg: "cannot assume role arn:aws:iam::222222222222:role/x: AccessDenied: no", err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "no"}}
	read := func(homeErr error) func(context.Context, target.Target, target.Spec) (map[string]int, error) {
		return func(_ context.Context, loc target.Target, _ target.Spec) (map[string]int, error) {
			switch loc {
			case far:
				return nil, refused
			case west:
				return nil, throttled
			}
			return map[string]int{"shop-app": 1}, homeErr
		}
	}
	live, unreachable, err := Survey(context.Background(), where, read(nil))
	if err != nil || live["shop-app"] != 1 || len(live) != 1 {
		t.Fatalf("Survey: %v, %v", live, err)
	}
	want := map[target.Target]string{
		far:  "cannot reach account 222222222222 in eu-central-1: cannot assume role arn:aws:iam::222222222222:role/x: AccessDenied: no",
		west: "cannot reach cairn's account in us-west-2: Throttling: Rate exceeded",
	}
	for loc, why := range want {
		if unreachable[loc] != why {
			t.Errorf("unreachable[%v] = %q, want %q", loc, unreachable[loc], why)
		}
	}
	if _, _, err := Survey(context.Background(), where, read(errors.New("home down"))); err == nil {
		t.Error("home failing did not fail the survey")
	}
}
