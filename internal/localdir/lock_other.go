//go:build !unix

package localdir

import (
	"errors"
	"os"
)

var errLocked = errors.New("locked by another process")

// errNoLocks says this platform has no flock: claims always succeed, and Find trusts what
// was published.
var errNoLocks = errors.New("advisory locks are not supported on this platform")

func tryLock(*os.File) error { return errNoLocks }
