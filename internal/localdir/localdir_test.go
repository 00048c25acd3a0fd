package localdir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestExportsQuoteForTheShell(t *testing.T) {
	got := Info{Env: []string{"A=plain-value_1.2:3/4", "B=two words", "C=it's", "D="}}.Exports()
	want := "export A=plain-value_1.2:3/4\nexport B='two words'\nexport C='it'\\''s'\nexport D=''\n"
	if got != want {
		t.Fatalf("Exports() = %q, want %q", got, want)
	}
}

func TestClaimLifecycle(t *testing.T) {
	dir := t.TempDir()
	if _, err := Find(dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Find on a fresh folder: %v, want ErrNotRunning", err)
	}
	c, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := Find(dir); err != nil || info.PID != os.Getpid() || info.Ready {
		t.Fatalf("Find while claimed: %+v %v", info, err)
	}
	var inUse *InUseError
	if _, err := Acquire(dir); !errors.As(err, &inUse) || inUse.PID != os.Getpid() {
		t.Fatalf("second Acquire: %v, want an InUseError naming pid %d", err, os.Getpid())
	}
	if err := c.Publish(Info{URL: "http://127.0.0.1:1", Ready: true, Env: []string{"K=v"}}); err != nil {
		t.Fatal(err)
	}
	if info, err := Find(dir); err != nil || !info.Ready || info.URL != "http://127.0.0.1:1" {
		t.Fatalf("Find after Publish: %+v %v", info, err)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Find after Release: %v, want ErrNotRunning", err)
	}
	c2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	c2.Release()
}

// TestAcquireWhileProbed: `cairn local up &` then `cairn local wait` at once: wait's Find
// takes the lock for an instant to probe it, and up's Acquire must not take that for a
// running instance. Here a prober calls Find as fast as it can while claims come and go.
func TestAcquireWhileProbed(t *testing.T) {
	dir := t.TempDir()
	if _, err := os.Create(filepath.Join(dir, lockFile)); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	probed := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				probed <- n
				return
			default:
				Find(dir)
				n++
			}
		}
	}()
	for i := 0; i < 200; i++ {
		c, err := Acquire(dir)
		if err != nil {
			close(stop)
			t.Fatalf("claim %d while probed: %v", i, err)
		}
		c.Release()
	}
	close(stop)
	if n := <-probed; n == 0 {
		t.Fatal("the prober never ran")
	}
}
