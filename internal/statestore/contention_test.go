package statestore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// contentionRounds is the number of lock-read-write-release rounds in each contention test.
const contentionRounds = 100

// invariants records, across goroutines or processes, who holds the lock and which
// generations were written; any overlap of two holders is a violation.
type invariants struct {
	mu         sync.Mutex
	holder     string
	violations []string
	gens       []int64
	rounds     map[string]int
}

func newInvariants() *invariants { return &invariants{rounds: map[string]int{}} }

func (iv *invariants) enter(worker, token string) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if iv.holder != "" {
		iv.violations = append(iv.violations, fmt.Sprintf("%s (token %s) entered while %s held the lock", worker, token, iv.holder))
	}
	iv.holder = token
}

func (iv *invariants) exit(worker, token string, gen int64) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if iv.holder != token {
		iv.violations = append(iv.violations, fmt.Sprintf("%s (token %s) left while the recorder saw %q as holder", worker, token, iv.holder))
	}
	iv.holder = ""
	iv.gens = append(iv.gens, gen)
	iv.rounds[worker]++
}

// check asserts: no overlap, every worker finished its rounds, generations 1..N each
// written exactly once, and the stored generation equals the number of writes.
func (iv *invariants) check(t *testing.T, s *statestore.Store, ns, key string, workers, perWorker int) {
	t.Helper()
	iv.mu.Lock()
	defer iv.mu.Unlock()
	for _, v := range iv.violations {
		t.Error("mutual exclusion violated: " + v)
	}
	for w := range workers {
		if got := iv.rounds[workerName(w)]; got != perWorker {
			t.Errorf("%s completed %d rounds, want %d", workerName(w), got, perWorker)
		}
	}
	gens := slices.Clone(iv.gens)
	slices.Sort(gens)
	for i, g := range gens {
		if g != int64(i+1) {
			t.Fatalf("generations written = %v, want each of 1..%d exactly once", gens, len(gens))
		}
	}
	g, err := s.Show(context.Background(), ns, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if g.Generation != int64(len(iv.gens)) || len(iv.gens) != workers*perWorker {
		t.Errorf("final generation %d, successful writes %d, rounds %d: want all equal", g.Generation, len(iv.gens), workers*perWorker)
	}
	if err := g.Validate(); err != nil {
		t.Errorf("final graph invalid: %v", err)
	}
}

func workerName(i int) string { return "worker-" + strconv.Itoa(i) }

// contend runs rounds of acquire, read, write, release, retrying while the lock is held.
// Any other failure (a conflict included) ends it with an error.
func contend(ctx context.Context, s *statestore.Store, ns, key string, worker, rounds int,
	enter func(token string) error, exit func(token string, gen int64) error) error {
	name := workerName(worker)
	for done, waits := 0, 0; done < rounds; {
		l, err := s.Acquire(ctx, ns, key, fmt.Sprintf("run-%d-%d", worker, done), statestore.Owner{Function: name, RequestID: strconv.Itoa(done)})
		var locked *statestore.LockedError
		if errors.As(err, &locked) {
			// Exponential backoff with jitter, as a deployer's retry would.
			backoff := time.Millisecond << min(waits, 5)
			waits++
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: round %d never got the lock: %w", name, done, ctx.Err())
			case <-time.After(time.Duration(rand.Int64N(int64(backoff)))):
			}
			continue
		}
		waits = 0
		if err != nil {
			return fmt.Errorf("%s: acquire: %w", name, err)
		}
		if err := enter(l.Token); err != nil {
			return err
		}
		g, err := s.Read(ctx, l)
		if errors.Is(err, statestore.ErrNotFound) {
			g = &state.Graph{Stacks: map[string]*state.Stack{}}
		} else if err != nil {
			return fmt.Errorf("%s: read: %w", name, err)
		}
		// Each worker keeps a stack that requires the previous writer's, so the graph's
		// dependencies change with every write.
		st := &state.Stack{Name: name, StackName: "contend-" + name, Status: strconv.Itoa(done)}
		if prev := g.RunID; prev != "" {
			var pw, pd int
			if _, err := fmt.Sscanf(prev, "run-%d-%d", &pw, &pd); err == nil && pw != worker {
				st.Requires = []string{workerName(pw)}
				if dep := g.Stacks[workerName(pw)]; dep != nil {
					dep.Requires = nil // keep it acyclic
				}
			}
		}
		g.Stacks[name] = st
		if err := s.Write(ctx, l, g); err != nil {
			return fmt.Errorf("%s: write: %w", name, err)
		}
		if err := exit(l.Token, g.Generation); err != nil {
			return err
		}
		if err := s.Release(ctx, l); err != nil {
			return fmt.Errorf("%s: release: %w", name, err)
		}
		done++
	}
	return nil
}

func contentionStore(t testing.TB, url string) *statestore.Store {
	return &statestore.Store{S3: newClient(t, url), Bucket: bucket, Clock: clock.Real, Logger: quietLogger()}
}

func TestContentionGoroutines(t *testing.T) {
	const workers = 20
	url := startS3(t)
	makeBucket(t, newClient(t, url), true)
	s := contentionStore(t, url)
	iv := newInvariants()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			name := workerName(w)
			err := contend(ctx, s, "shop", "contended", w, contentionRounds/workers,
				func(token string) error { iv.enter(name, token); return nil },
				func(token string, gen int64) error { iv.exit(name, token, gen); return nil })
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	iv.check(t, s, "shop", "contended", workers, contentionRounds/workers)
}

// Environment of a contention child process.
const (
	envChildS3       = "CAIRN_STATE_CONTENTION_S3"
	envChildRecorder = "CAIRN_STATE_CONTENTION_RECORDER"
	envChildWorker   = "CAIRN_STATE_CONTENTION_WORKER"
	envChildRounds   = "CAIRN_STATE_CONTENTION_ROUNDS"
)

func TestContentionProcesses(t *testing.T) {
	const workers = 5
	url := startS3(t)
	makeBucket(t, newClient(t, url), true)
	iv := newInvariants()
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch r.URL.Path {
		case "/enter":
			iv.enter(q.Get("worker"), q.Get("token"))
		case "/exit":
			gen, err := strconv.ParseInt(q.Get("gen"), 10, 64)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			iv.exit(q.Get("worker"), q.Get("token"), gen)
		default:
			http.NotFound(w, r)
		}
	}))
	defer rec.Close()

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		cmd := exec.CommandContext(ctx, exe, "-test.run=^TestContentionChild$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			envChildS3+"="+url, envChildRecorder+"="+rec.URL,
			envChildWorker+"="+strconv.Itoa(w), envChildRounds+"="+strconv.Itoa(contentionRounds/workers))
		wg.Go(func() {
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("process %d: %v\n%s", w, err, out)
			}
		})
	}
	wg.Wait()
	iv.check(t, contentionStore(t, url), "shop", "contended", workers, contentionRounds/workers)
}

// TestContentionChild is one process of TestContentionProcesses; run on its own it skips.
func TestContentionChild(t *testing.T) {
	s3URL, recURL := os.Getenv(envChildS3), os.Getenv(envChildRecorder)
	if s3URL == "" || recURL == "" {
		t.Skip("runs only as a child of TestContentionProcesses")
	}
	worker, err := strconv.Atoi(os.Getenv(envChildWorker))
	if err != nil {
		t.Fatal(err)
	}
	rounds, err := strconv.Atoi(os.Getenv(envChildRounds))
	if err != nil {
		t.Fatal(err)
	}
	report := func(path string, v url.Values) error {
		v.Set("worker", workerName(worker))
		resp, err := http.Get(recURL + path + "?" + v.Encode())
		if err != nil {
			return fmt.Errorf("report %s to the recorder: %w", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("report %s to the recorder: %s", path, resp.Status)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	err = contend(ctx, contentionStore(t, s3URL), "shop", "contended", worker, rounds,
		func(token string) error { return report("/enter", url.Values{"token": {token}}) },
		func(token string, gen int64) error {
			return report("/exit", url.Values{"token": {token}, "gen": {strconv.FormatInt(gen, 10)}})
		})
	if err != nil {
		t.Fatal(err)
	}
}
