// Package localdir is the folder a local emulator (`cairn local up --dir D`) keeps its
// state in, seen from outside the emulator: one running instance at a time holds it
// (an advisory lock, released by the kernel when the process dies, so a crash leaves no
// stale claim), and it publishes where it listens, whether it is ready and the
// environment a shell needs, so `cairn local wait` and `cairn local env` can find it.
package localdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// File names inside the folder.
const (
	lockFile = "local.lock"
	infoFile = "local.json"
	// LogFile is where `cairn local up` writes its log unless told otherwise.
	LogFile = "local.log"
)

// Info is what a running instance publishes.
type Info struct {
	PID   int      `json:"pid"`
	URL   string   `json:"url"`
	Ready bool     `json:"ready"`
	Env   []string `json:"env,omitempty"` // KEY=value, once ready
	Log   string   `json:"log,omitempty"`
}

// Exports renders Env as the lines a shell evaluates.
func (i Info) Exports() string {
	var b strings.Builder
	for _, kv := range i.Env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	return b.String()
}

// shellQuote leaves plain values alone and single-quotes the rest.
func shellQuote(v string) string {
	if v != "" && strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r))
	}) < 0 {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// InUseError says another process holds the folder.
type InUseError struct {
	Dir string
	PID int // 0 when it could not be read
}

func (e *InUseError) Error() string {
	who := "another cairn local up"
	if e.PID > 0 {
		who = "cairn local up (pid " + strconv.Itoa(e.PID) + ")"
	}
	return fmt.Sprintf("%s is in use by %s: stop it first, or pick another --dir", e.Dir, who)
}

// probeGrace is how long Acquire retries a folder whose lock is held, in case the holder
// is a Find probing it rather than a running instance.
const probeGrace = 500 * time.Millisecond

// Claim is the hold of one instance on its folder; Release ends it.
type Claim struct {
	dir  string
	lock *os.File
}

// Acquire claims dir (creating it) for this process, or returns an *InUseError naming the
// process that holds it.
func Acquire(dir string) (*Claim, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("local state folder %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("local state folder %s: %w", dir, err)
	}
	err = tryLock(f)
	// Find probes by taking the lock for an instant: a `cairn local wait` started together
	// with this `local up` may hold it right now. Only a holder that stays is one.
	for deadline := time.Now().Add(probeGrace); errors.Is(err, errLocked) && time.Now().Before(deadline); {
		if info, _ := read(dir); info.PID == os.Getpid() {
			break
		}
		time.Sleep(10 * time.Millisecond)
		err = tryLock(f)
	}
	if err != nil && !errors.Is(err, errNoLocks) {
		f.Close()
		if errors.Is(err, errLocked) {
			info, _ := read(dir)
			return nil, &InUseError{Dir: dir, PID: info.PID}
		}
		return nil, fmt.Errorf("lock local state folder %s: %w", dir, err)
	}
	c := &Claim{dir: dir, lock: f}
	if err := c.Publish(Info{PID: os.Getpid()}); err != nil {
		c.Release()
		return nil, err
	}
	return c, nil
}

// Publish writes what the instance tells others (PID is always this process's).
func (c *Claim) Publish(info Info) error {
	info.PID = os.Getpid()
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(c.dir, infoFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("publish local instance in %s: %w", c.dir, err)
	}
	return os.Rename(tmp, path)
}

// Release withdraws what was published and frees the folder.
func (c *Claim) Release() error {
	if c == nil || c.lock == nil {
		return nil
	}
	err := os.Remove(filepath.Join(c.dir, infoFile))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	err = errors.Join(err, c.lock.Close())
	c.lock = nil
	return err
}

// ErrNotRunning says no instance holds the folder.
var ErrNotRunning = errors.New("no cairn local up is running there")

// Find returns what the instance holding dir published, or ErrNotRunning (wrapped, naming
// dir) when no process holds it.
func Find(dir string) (Info, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%s: %w", dir, ErrNotRunning)
	}
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	if err := tryLock(f); err == nil {
		// Nobody holds it: whatever was published is stale. Our lock goes with f.
		return Info{}, fmt.Errorf("%s: %w", dir, ErrNotRunning)
	} else if !errors.Is(err, errLocked) && !errors.Is(err, errNoLocks) {
		return Info{}, err
	}
	info, err := read(dir)
	if errors.Is(err, fs.ErrNotExist) {
		// Held, but not published yet: the instance is starting.
		return Info{}, nil
	}
	return info, err
}

func read(dir string) (Info, error) {
	var info Info
	b, err := os.ReadFile(filepath.Join(dir, infoFile))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s is not what cairn local up writes (%v): stop the instance and delete the file", filepath.Join(dir, infoFile), err)
	}
	return info, nil
}
