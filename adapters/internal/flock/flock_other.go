//go:build !unix

package flock

import (
	"errors"
	"os"
)

// ErrUnsupported is TryLock's answer where flock(2) does not exist: work
// that cannot be serialised is refused rather than run unserialised.
var ErrUnsupported = errors.New("flock(2) is not available on this platform")

// TryLock refuses: see ErrUnsupported.
func TryLock(*os.File) (bool, error) { return false, ErrUnsupported }

// Unlock has nothing to release.
func Unlock(*os.File) error { return nil }
