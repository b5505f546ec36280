//go:build !unix

package terraform

import (
	"errors"
	"os"
)

// tryLock fails where flock(2) does not exist: relcap applies are only
// serialized on Unix, and refusing is safer than not serializing.
func tryLock(*os.File) (bool, error) {
	return false, errors.New("relcap's working-directory lock needs flock(2), which this platform lacks")
}

func unlockFile(*os.File) error { return nil }
