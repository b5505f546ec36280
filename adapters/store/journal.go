package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow"
)

// JournalFile is the name of a session's journal inside its directory.
const JournalFile = "journal.jsonl"

// FileJournal is a session's journal: one JSON entry per line in
// <dir>/<session id>/journal.jsonl, each chained to the previous one by
// hash, with the head mirrored in the ledger so truncation is detectable.
// It is safe for concurrent use.
type FileJournal struct {
	ledger  workflow.SessionStore
	clock   workflow.Clock
	session workflow.Session
	path    string

	mu     sync.Mutex
	f      *os.File
	size   int64
	prev   *workflow.JournalEntry
	broken error // set when the file may end in a partial line
	closed bool
}

var _ workflow.Journal = (*FileJournal)(nil)

// NewSessionID returns a readable ID that sorts by start time, such as
// 20261130T135527Z-3f9a1c. The random suffix keeps two sessions started in
// the same second apart.
func NewSessionID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// OpenSession creates the journal of a new session under dir and registers
// the session in ledger. An empty s.ID gets NewSessionID and a zero
// s.StartedAt gets clock.Now(). It refuses to reuse an existing journal
// file, so one session can never append to another's chain.
func OpenSession(ctx context.Context, ledger workflow.SessionStore, dir string, s workflow.Session, clock workflow.Clock) (*FileJournal, error) {
	if s.StartedAt.IsZero() {
		s.StartedAt = clock.Now()
	}
	if s.ID == "" {
		s.ID = NewSessionID(s.StartedAt)
	}
	if err := checkSessionID(s.ID); err != nil {
		return nil, err
	}
	sessionDir := filepath.Join(dir, s.ID)
	if err := os.MkdirAll(sessionDir, 0o700); err != nil {
		return nil, fmt.Errorf("create session directory %s: %w; pass a writable data directory or fix permissions", sessionDir, err)
	}
	path := filepath.Join(sessionDir, JournalFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("journal %s already exists: session %s was opened before", path, s.ID)
		}
		return nil, fmt.Errorf("create journal %s: %w", path, err)
	}
	// The new directory entries must survive a crash as well as the lines
	// written later; fsync of a directory is best effort because some file
	// systems do not support it.
	syncDir(sessionDir)
	syncDir(dir)

	if err := ledger.OpenSession(ctx, s); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		_ = os.Remove(sessionDir) // only if empty
		return nil, fmt.Errorf("register session %s: %w", s.ID, err)
	}
	return &FileJournal{ledger: ledger, clock: clock, session: s, path: path, f: f}, nil
}

// checkSessionID refuses IDs that are not one plain path element, since
// the ID becomes a directory name.
func checkSessionID(id string) error {
	if id == "." || id == ".." || strings.ContainsAny(id, `/\`+"\x00") {
		return fmt.Errorf("%w: session ID %q is not usable as a directory name", workflow.ErrUsage, id)
	}
	return nil
}

func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// SessionID is the ID of the journal's session.
func (j *FileJournal) SessionID() string { return j.session.ID }

// Session is the session as registered.
func (j *FileJournal) Session() workflow.Session { return j.session }

// Path is the journal file.
func (j *FileJournal) Path() string { return j.path }

// Append seals an entry after the previous one, writes it as one line,
// fsyncs the file and then moves the ledger's head to it. ctx is checked
// before writing; once the line is written the head is updated even if ctx
// ends, so file and ledger agree. If the line is written but the head
// update fails, Append returns the error and the next Append moves the head
// past it. A failed write or fsync makes the journal refuse further entries,
// because the file may then end in a partial or lost line.
func (j *FileJournal) Append(ctx context.Context, kind string, data any) (workflow.JournalEntry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.closed:
		return workflow.JournalEntry{}, fmt.Errorf("journal %s: session %s is closed", j.path, j.session.ID)
	case j.broken != nil:
		return workflow.JournalEntry{}, fmt.Errorf("journal %s can take no more entries: %w", j.path, j.broken)
	}
	if err := ctx.Err(); err != nil {
		return workflow.JournalEntry{}, fmt.Errorf("journal %s: %w", kind, err)
	}
	e, err := workflow.NextEntry(j.prev, j.clock.Now(), j.session.Actor, kind, data)
	if err != nil {
		return workflow.JournalEntry{}, err
	}
	line, err := json.Marshal(e)
	if err != nil {
		return workflow.JournalEntry{}, fmt.Errorf("journal %s: encode entry: %w", kind, err)
	}
	line = append(line, '\n')
	if _, err := j.f.Write(line); err != nil {
		// Cut a partial line off so the chain stays readable; only if that
		// fails too is the journal unusable.
		if terr := j.f.Truncate(j.size); terr != nil {
			j.broken = fmt.Errorf("write failed (%w) and the partial line could not be removed (%w)", err, terr)
		}
		return workflow.JournalEntry{}, fmt.Errorf("write journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages
		// and a retry can report success without the data on disk, so the
		// line's durability is unknown for good.
		j.broken = fmt.Errorf("fsync failed: %w", err)
		return workflow.JournalEntry{}, fmt.Errorf("sync journal %s: %w", j.path, err)
	}
	j.size += int64(len(line))
	j.prev = &e
	head := workflow.JournalHead{SessionID: j.session.ID, Seq: e.Seq, Hash: e.Hash}
	if err := j.ledger.SetJournalHead(context.WithoutCancel(ctx), head); err != nil {
		return e, fmt.Errorf("journal %s: entry %d is written but the ledger head was not updated: %w", j.path, e.Seq, err)
	}
	return e, nil
}

// Close closes the file and records the session's end in the ledger. It is
// idempotent.
func (j *FileJournal) Close(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	var errs []error
	if err := j.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close journal %s: %w", j.path, err))
	}
	if err := j.ledger.CloseSession(ctx, j.session.ID, j.clock.Now()); err != nil {
		errs = append(errs, fmt.Errorf("close session %s: %w", j.session.ID, err))
	}
	return errors.Join(errs...)
}

// ReadJournal returns the raw lines of the journal at path, numbered from
// 1, for workflow.VerifyJournal. A last line without a newline (a write cut
// short) is still a line. A missing file is an error wrapping
// workflow.ErrNotFound.
func ReadJournal(path string) ([]workflow.JournalLine, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("journal %s: %w", path, workflow.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	var lines []workflow.JournalLine
	for n := 1; len(b) > 0; n++ {
		text, rest, _ := bytes.Cut(b, []byte{'\n'})
		lines = append(lines, workflow.JournalLine{Number: n, Text: text})
		b = rest
	}
	return lines, nil
}

// ReadEntries decodes the journal at path for display. It does not verify
// the chain (workflow.VerifyJournal does). On a line that is not an entry
// it returns the entries before it and an error naming the line.
func ReadEntries(path string) ([]workflow.JournalEntry, error) {
	lines, err := ReadJournal(path)
	if err != nil {
		return nil, err
	}
	entries := make([]workflow.JournalEntry, 0, len(lines))
	for _, l := range lines {
		var e workflow.JournalEntry
		if err := json.Unmarshal(l.Text, &e); err != nil {
			return entries, fmt.Errorf("journal %s line %d is not a journal entry: %w", path, l.Number, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}
