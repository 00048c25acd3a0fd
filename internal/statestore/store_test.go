package statestore_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// session acquires the lock and reads the graph, as a deployer trigger does.
func session(t *testing.T, s *statestore.Store, ns, key, run string) (*statestore.Lock, *state.Graph) {
	t.Helper()
	l, err := s.Acquire(context.Background(), ns, key, run, ownerA)
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Read(context.Background(), l)
	if err != nil && !errors.Is(err, statestore.ErrNotFound) {
		t.Fatal(err)
	}
	return l, g
}

func TestWriteGenerationsAndShow(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(nil)

	l, g := session(t, s, "shop", "main", "run-1")
	if g != nil {
		t.Fatalf("fresh Read = %+v, want nil", g)
	}
	g = twoStacks()
	g.Stacks["app"].Requires = []string{"vpc", "vpc"}
	if err := s.Write(ctx, l, g); err != nil {
		t.Fatal(err)
	}
	if g.Generation != 1 || g.LockToken != l.Token || g.RunID != "run-1" || g.SchemaVersion != state.SchemaVersion ||
		g.Namespace != "shop" || g.Key != "main" || !g.UpdatedAt.Equal(t0) {
		t.Errorf("after first write: %+v", g)
	}
	e.clock.Advance(time.Minute)
	g.Stacks["vpc"].Status = "UPDATE_COMPLETE"
	if err := s.Write(ctx, l, g); err != nil {
		t.Fatalf("second write under the same lock: %v", err)
	}
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}

	l2, got := session(t, s, "shop", "main", "run-2")
	if got.Generation != 2 || got.Stacks["vpc"].Status != "UPDATE_COMPLETE" || got.LockToken != l.Token {
		t.Errorf("read back generation %d, vpc %q, token %q; want 2, UPDATE_COMPLETE, %s", got.Generation, got.Stacks["vpc"].Status, got.LockToken, l.Token)
	}
	if r := got.Stacks["app"].Requires; len(r) != 1 || r[0] != "vpc" {
		t.Errorf("requires = %q, want [vpc] (normalised)", r)
	}
	if err := s.Write(ctx, l2, got); err != nil {
		t.Fatal(err)
	}
	shown, err := s.Show(ctx, "shop", "main", "")
	if err != nil {
		t.Fatal(err)
	}
	if shown.Generation != 3 || shown.LockToken != l2.Token || shown.RunID != "run-2" {
		t.Errorf("Show = generation %d token %s run %s, want 3, %s, run-2", shown.Generation, shown.LockToken, shown.RunID, l2.Token)
	}
}

func TestWriteConflictNeverOverwrites(t *testing.T) {
	tests := []struct {
		name  string
		first bool // a graph exists before the session
	}{
		{"object appeared although it was missing", false},
		{"object changed since it was read", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			s := e.store(nil)
			if tc.first {
				l, _ := session(t, s, "shop", "main", "run-0")
				if err := s.Write(ctx, l, twoStacks()); err != nil {
					t.Fatal(err)
				}
				if err := s.Release(ctx, l); err != nil {
					t.Fatal(err)
				}
			}
			l, _ := session(t, s, "shop", "main", "run-1")
			// Someone writes the object behind the lock's back (an old tool, a person).
			intruder := `{"schema_version":1,"namespace":"shop","key":"main","generation":7,"stacks":{}}`
			if _, err := e.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("state/shop/main.json"), Body: strings.NewReader(intruder)}); err != nil {
				t.Fatal(err)
			}
			err := s.Write(ctx, l, twoStacks())
			var conflict *statestore.ConflictError
			if !errors.As(err, &conflict) {
				t.Fatalf("Write: err = %v, want *ConflictError", err)
			}
			if !strings.Contains(err.Error(), "shop/main") || !strings.Contains(err.Error(), "re-read") {
				t.Errorf("conflict message %q does not say what and what to do", err)
			}
			if got := e.getObject(t, "state/shop/main.json"); got != intruder {
				t.Errorf("conflicting write overwrote the object: %s", got)
			}
		})
	}
}

func TestWriteRefusals(t *testing.T) {
	cycle := twoStacks()
	cycle.Stacks["vpc"].Requires = []string{"app"}
	missing := twoStacks()
	missing.Stacks["app"].Requires = []string{"db"}
	dupName := twoStacks()
	dupName.Stacks["app"].StackName = "shop-vpc"
	other := twoStacks()
	other.Namespace = "bank"
	tests := []struct {
		name    string
		read    bool
		g       *state.Graph
		wantErr string
	}{
		{"write before read", false, twoStacks(), "call Read first"},
		{"cycle", true, cycle, "dependency cycle"},
		{"missing dependency", true, missing, `requires "db", which is not in the graph`},
		{"duplicate stack name", true, dupName, `both use stack name "shop-vpc"`},
		{"another namespace", true, other, "graph is for bank/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			s := e.store(nil)
			l, err := s.Acquire(ctx, "shop", "main", "run-1", ownerA)
			if err != nil {
				t.Fatal(err)
			}
			if tc.read {
				if _, err := s.Read(ctx, l); !errors.Is(err, statestore.ErrNotFound) {
					t.Fatal(err)
				}
			}
			err = s.Write(ctx, l, tc.g)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if e.objectExists(t, "state/shop/main.json") {
				t.Error("a refused write stored the state")
			}
		})
	}
}

func TestHistoryAndShowVersion(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(nil)
	for i, status := range []string{"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE"} {
		l, g := session(t, s, "shop", "main", "run")
		if g == nil {
			g = twoStacks()
		}
		g.Stacks["vpc"].Status = status
		if err := s.Write(ctx, l, g); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if err := s.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	versions, err := s.History(ctx, "shop", "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 3 || !versions[0].IsLatest {
		t.Fatalf("History = %+v, want 3 versions, newest first", versions)
	}
	for i, want := range []struct {
		gen    int64
		status string
	}{{3, "UPDATE_ROLLBACK_COMPLETE"}, {2, "UPDATE_COMPLETE"}, {1, "CREATE_COMPLETE"}} {
		g, err := s.Show(ctx, "shop", "main", versions[i].VersionID)
		if err != nil {
			t.Fatalf("Show version %s: %v", versions[i].VersionID, err)
		}
		if g.Generation != want.gen || g.Stacks["vpc"].Status != want.status {
			t.Errorf("version %d: generation %d vpc %s, want %d %s", i, g.Generation, g.Stacks["vpc"].Status, want.gen, want.status)
		}
	}
	if _, err := s.Show(ctx, "shop", "main", "no-such-version"); err == nil {
		t.Error("Show of an unknown version succeeded")
	}
	if _, err := s.Show(ctx, "shop", "absent", ""); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("Show of a missing graph: err = %v, want ErrNotFound", err)
	}
}

func TestVersioningWarning(t *testing.T) {
	for _, versioned := range []bool{true, false} {
		ctx := context.Background()
		c := newClient(t, startS3(t))
		makeBucket(t, c, versioned)
		logs := &logBuffer{}
		e := &env{s3: c, logs: logs, clock: clock.NewFake(t0)}
		s := e.store(nil)
		warning, err := s.VersioningWarning(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if versioned && warning != "" {
			t.Errorf("versioned bucket: warning %q", warning)
		}
		if !versioned && (!strings.Contains(warning, "versioning") || !strings.Contains(warning, "put-bucket-versioning --bucket "+bucket) ||
			!strings.Contains(logs.String(), "versioning is off")) {
			t.Errorf("unversioned bucket: warning %q, logs %q", warning, logs)
		}
	}
}

func TestDecodeRefusesNewerSchema(t *testing.T) {
	body, err := os.ReadFile("../state/testdata/state-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := state.Decode(body); err == nil || !strings.Contains(err.Error(), "upgrade cairn") {
		t.Fatalf("err = %v, want a refusal saying to upgrade", err)
	}
	body, err = os.ReadFile("../state/testdata/state-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	g, err := state.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err != nil || g.Generation != 4 || g.Stacks["app"].StackName != "shop-app" {
		t.Fatalf("decoded %+v, validate %v", g, err)
	}
}
