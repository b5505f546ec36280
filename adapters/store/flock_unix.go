//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

// flockTry takes an exclusive flock(2) on f without blocking and reports
// whether it got it.
func flockTry(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}

func flockRelease(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
