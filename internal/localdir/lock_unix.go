//go:build unix

package localdir

import (
	"errors"
	"os"
	"syscall"
)

var errLocked = errors.New("locked by another process")

// errNoLocks is never returned where flock exists.
var errNoLocks = errors.New("advisory locks are not supported on this platform")

// tryLock takes an exclusive flock on f without waiting. flock locks belong to the open
// file, so a second open in the same process conflicts too, and the kernel drops the lock
// when the process ends.
func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}
