package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/relcap/relcap/workflow/journal"
)

// ScreenFile is the name of a session's first screen recording; later
// cockpits of the same session write screen-2.cast, screen-3.cast, …
const ScreenFile = "screen.cast"

// Recording is a screen recording being written beside a session's
// journal. Finish closes it and journals its SHA-256, so journal verify
// covers the file as it covers the journal.
type Recording struct {
	j    *FileJournal
	f    *os.File
	name string
	sum  hash.Hash
	w    io.Writer
}

// StartRecording creates the session's next recording file, mode 0600.
func (j *FileJournal) StartRecording() (*Recording, error) {
	// A recording is something recorded: the session exists from now on.
	if err := j.Create(context.Background()); err != nil {
		return nil, err
	}
	dir := filepath.Dir(j.path)
	for n := 1; n < 100; n++ {
		name := ScreenFile
		if n > 1 {
			name = fmt.Sprintf("screen-%d.cast", n)
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("screen recording in %s: %w", dir, err)
		}
		sum := sha256.New()
		return &Recording{j: j, f: f, name: name, sum: sum, w: io.MultiWriter(f, sum)}, nil
	}
	return nil, fmt.Errorf("screen recording in %s: 99 recordings already", dir)
}

// Write records p.
func (r *Recording) Write(p []byte) (int, error) { return r.w.Write(p) }

// Name is the recording's file name inside the session's directory.
func (r *Recording) Name() string { return r.name }

// Finish makes the recording durable, closes it and journals its SHA-256
// against releaseID. A recording that could not be written whole is
// reported, never journaled as if it were.
func (r *Recording) Finish(ctx context.Context, releaseID string) error {
	if err := errors.Join(r.f.Sync(), r.f.Close()); err != nil {
		return fmt.Errorf("screen recording %s: %w", r.f.Name(), err)
	}
	_, err := r.j.Append(context.WithoutCancel(ctx), journal.ScreenRecorded{File: r.name, Release: releaseID, SHA256: hex.EncodeToString(r.sum.Sum(nil))})
	return err
}

// Recordings lists the screen recordings of session id in the order they
// were made (screen.cast, screen-2.cast, … screen-10.cast: numeric, not
// alphabetical order).
func (f SessionFiles) Recordings(id string) ([]string, error) {
	if err := checkSessionID(id); err != nil {
		return nil, err
	}
	casts, err := filepath.Glob(filepath.Join(f.Dir, filepath.Base(id), "screen*.cast"))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(casts, func(x, y string) int { return cmp.Compare(castNumber(x), castNumber(y)) })
	return casts, nil
}

// castNumber is N of screen-N.cast; screen.cast is the first, 1.
func castNumber(path string) int {
	var n int
	if _, err := fmt.Sscanf(filepath.Base(path), "screen-%d.cast", &n); err != nil {
		return 1
	}
	return n
}
