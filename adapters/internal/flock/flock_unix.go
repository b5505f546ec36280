//go:build unix

// Package flock takes flock(2) locks for the adapters that serialise work
// on one machine: Terraform's working directories and runs, and the
// operation locks of an SQLite ledger. A flock belongs to the open file
// description, so two opens in one process exclude each other as two
// processes do, and the kernel releases it when its holder dies.
package flock

import (
	"errors"
	"os"
	"syscall"
)

// TryLock takes an exclusive flock(2) on f without blocking and reports
// whether it got it.
func TryLock(f *os.File) (bool, error) {
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

// Unlock releases f's lock (closing f releases it too).
func Unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
