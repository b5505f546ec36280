//go:build !unix

package store

import "os"

// flockTry refuses where flock(2) does not exist: an operation that
// cannot be serialized is refused rather than run unserialized.
func flockTry(*os.File) (bool, error) { return false, errNoFlock }

func flockRelease(*os.File) error { return nil }
