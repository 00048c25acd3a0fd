package access

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	ststypes "github.com/aws/aws-sdk-go-v2/service/sts/types"
	"github.com/aws/smithy-go"

	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/target"
)

// fakeSTS issues one-hour credentials on clk, and records every AssumeRole.
type fakeSTS struct {
	mu    sync.Mutex
	clk   *clock.Fake
	calls []sts.AssumeRoleInput
	deny  map[string]bool
}

func (f *fakeSTS) AssumeRole(_ context.Context, in *sts.AssumeRoleInput, _ ...func(*sts.Options)) (*sts.AssumeRoleOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, *in)
	if f.deny[aws.ToString(in.RoleArn)] {
		return nil, &smithy.GenericAPIError{Code: "AccessDenied", Message: "User: arn:aws:sts::000000000000:assumed-role/cairn-deployer-us-east-1/x is not authorized to perform: sts:AssumeRole on resource: " + aws.ToString(in.RoleArn)}
	}
	n := len(f.calls)
	return &sts.AssumeRoleOutput{Credentials: &ststypes.Credentials{AccessKeyId: aws.String("ASIA" + strings.Repeat("X", n)), SecretAccessKey: aws.String("s"),
		SessionToken: aws.String("t"), Expiration: aws.Time(f.clk.Now().Add(time.Hour))}}, nil
}

func (f *fakeSTS) GetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	return &sts.GetCallerIdentityOutput{Account: aws.String("000000000000")}, nil
}

// TestCredentialsAreCachedPerRunAndRole: a run's credentials of a role are assumed once,
// with the run id in the session name and the external id, and kept until shortly before
// they expire; another run, or another role, assumes its own.
func TestCredentialsAreCachedPerRunAndRole(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC))
	f := &fakeSTS{clk: clk}
	r := &Reacher{Base: aws.Config{Region: "us-east-1"}, STS: f, Clock: clk}
	ctx := context.Background()
	spec := target.Spec{Region: "eu-west-1", RoleARN: "arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1", ExternalID: "cairn-shop"}
	cfg := r.Config("20260601-090000000-abcd1234", spec)
	if cfg.Region != "eu-west-1" {
		t.Fatalf("region %s", cfg.Region)
	}
	retrieve := func() aws.Credentials {
		t.Helper()
		c, err := cfg.Credentials.Retrieve(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := retrieve()
	for range 10 {
		clk.Advance(5 * time.Minute) // 50 minutes in all: 10 left, more than the window
		if c := retrieve(); c.AccessKeyID != first.AccessKeyID {
			t.Fatalf("credentials renewed after %s: %s, then %s", clk.Now().Sub(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)), first.AccessKeyID, c.AccessKeyID)
		}
	}
	if len(f.calls) != 1 {
		t.Fatalf("AssumeRole called %d times in 50 minutes, want once", len(f.calls))
	}
	in := f.calls[0]
	if aws.ToString(in.RoleSessionName) != "cairn-20260601-090000000-abcd1234" || aws.ToString(in.ExternalId) != "cairn-shop" || aws.ToString(in.RoleArn) != spec.RoleARN {
		t.Errorf("AssumeRole %s as %s with external id %s", aws.ToString(in.RoleArn), aws.ToString(in.RoleSessionName), aws.ToString(in.ExternalId))
	}
	clk.Advance(6 * time.Minute) // 4 minutes before they expire: inside the window
	if c := retrieve(); c.AccessKeyID == first.AccessKeyID || len(f.calls) != 2 {
		t.Errorf("credentials not renewed shortly before they expire (%d AssumeRole calls)", len(f.calls))
	}
	if _, err := r.Assume(ctx, "another-run", spec.RoleARN, spec.ExternalID); err != nil || len(f.calls) != 3 {
		t.Errorf("another run shares the credentials (%d calls, %v)", len(f.calls), err)
	}
	r.Forget("another-run")
	if _, err := r.Assume(ctx, "another-run", spec.RoleARN, spec.ExternalID); err != nil || len(f.calls) != 4 {
		t.Errorf("a forgotten run's credentials were kept (%d calls, %v)", len(f.calls), err)
	}
	if r.Config("x", target.Spec{Region: "us-west-2"}).Credentials != nil {
		t.Error("another region of the account got assumed credentials")
	}
}

func TestRefusalSaysWhoAndWhat(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC))
	role := "arn:aws:iam::222222222222:role/nobody-trusts-cairn"
	r := &Reacher{Base: aws.Config{Region: "us-east-1"}, STS: &fakeSTS{clk: clk, deny: map[string]bool{role: true}}, Clock: clk}
	_, err := r.Assume(context.Background(), "run-1", role, "")
	want := "cannot assume role " + role + ": AccessDenied: User: arn:aws:sts::000000000000:assumed-role/cairn-deployer-us-east-1/x is not authorized to perform: sts:AssumeRole on resource: " + role +
		" (its trust policy must admit cairn's deployer and drift roles: the target stack's deploy role does)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) || !awserr.Permanent(err) {
		t.Errorf("the refusal is not a permanent AWS error: %v", err)
	}
}

func TestSessionName(t *testing.T) {
	for in, want := range map[string]string{
		"20261201-095955123-2d57cd8f": "cairn-20261201-095955123-2d57cd8f",
		"sweep/2026:12":               "cairn-sweep-2026-12",
		strings.Repeat("a", 80):       "cairn-" + strings.Repeat("a", 58),
	} {
		if got := SessionName(in); got != want {
			t.Errorf("SessionName(%q) = %q, want %q", in, got, want)
		}
	}
}

// slowSTS holds every AssumeRole until release is closed, so callers meet in it.
type slowSTS struct {
	fakeSTS
	entered chan struct{}
	release chan struct{}
}

func (s *slowSTS) AssumeRole(ctx context.Context, in *sts.AssumeRoleInput, o ...func(*sts.Options)) (*sts.AssumeRoleOutput, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.fakeSTS.AssumeRole(ctx, in, o...)
}

// TestConcurrentMissesAssumeOnce: goroutines that miss the cache for one run and role at
// once (a run's stacks looked at in parallel, invocations of one run side by side) share
// one AssumeRole and its credentials.
func TestConcurrentMissesAssumeOnce(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC))
	f := &slowSTS{fakeSTS: fakeSTS{clk: clk}, entered: make(chan struct{}, 20), release: make(chan struct{})}
	r := &Reacher{Base: aws.Config{Region: "us-east-1"}, STS: f, Clock: clk}
	const callers = 8
	keys := make(chan string, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := r.Assume(context.Background(), "run-1", "arn:aws:iam::111111111111:role/deploy", "")
			if err != nil {
				t.Error(err)
			}
			keys <- c.AccessKeyID
		}()
	}
	<-f.entered                       // one caller is in AssumeRole ...
	time.Sleep(50 * time.Millisecond) // ... while the others arrive
	close(f.release)
	wg.Wait()
	close(keys)
	for k := range keys {
		if k != "ASIAX" {
			t.Errorf("a caller got credentials %q, want the one AssumeRole's ASIAX", k)
		}
	}
	if len(f.calls) != 1 {
		t.Errorf("AssumeRole called %d times by %d callers at once, want once", len(f.calls), callers)
	}
}
