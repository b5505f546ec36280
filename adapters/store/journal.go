package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/secret"
)

// JournalFile is the name of a session's journal inside its directory.
const JournalFile = "journal.jsonl"

// FileJournal is a session's journal: one JSON entry per line in
// <dir>/<session id>/journal.jsonl, each chained to the previous one by
// hash, every line copied into the ledger with the head, so truncation is
// detectable and a teammate whose machine has no file can verify the
// session from the ledger. It is safe for concurrent use.
type FileJournal struct {
	ledger  workflow.SessionStore
	clock   workflow.Clock
	session workflow.Session
	path    string
	secrets *secret.Set // masked in every entry before it is sealed

	mu   sync.Mutex
	f    *os.File
	size int64
	prev *journal.Entry
	// unconfirmed are the lines written to the file that the ledger has
	// not confirmed keeping; the next Append sends them again first.
	unconfirmed []journal.Line
	broken      error // set when the file may end in a partial line
	closed      bool
	// deferred is set for a session prepared by PrepareSession and not
	// created yet: no file, no ledger row until something is recorded
	// (lazysession.go).
	deferred *deferredSession
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
func OpenSession(ctx context.Context, ledger workflow.SessionStore, dir string, s workflow.Session, clock workflow.Clock, opts ...Option) (*FileJournal, error) {
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
	return &FileJournal{ledger: ledger, clock: clock, session: s, path: path, f: f, secrets: applyOptions(opts).secrets}, nil
}

// checkSessionID refuses IDs that are not one plain path element, since
// the ID becomes a directory name.
func checkSessionID(id string) error {
	if id == "." || id == ".." || strings.ContainsAny(id, `/\`+"\x00") {
		return fmt.Errorf("%w: session ID %q is not usable as a directory name", fault.ErrUsage, id)
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
// fsyncs the file and then, in one ledger transaction, keeps the line in
// the ledger and moves the head to it. ctx is checked before writing; once
// the line is written the ledger is updated even if ctx ends, so file and
// ledger agree. If the line is written but the ledger's update fails,
// Append returns the error and the next Append sends that line again
// before its own, so the ledger's copy has no gap (the ledger skips a line
// it turns out to hold already). A failed write or fsync makes the journal
// refuse further entries, because the file may then end in a partial or
// lost line.
func (j *FileJournal) Append(ctx context.Context, rec journal.Record) (journal.Entry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.createDeferred(ctx); err != nil {
		return journal.Entry{}, err
	}
	return j.appendLocked(ctx, rec)
}

// appendLocked is Append with j.mu held and the session created.
func (j *FileJournal) appendLocked(ctx context.Context, rec journal.Record) (journal.Entry, error) {
	kind := rec.JournalKind()
	switch {
	case j.closed:
		return journal.Entry{}, fmt.Errorf("journal %s: session %s is closed", j.path, j.session.ID)
	case j.broken != nil:
		return journal.Entry{}, fmt.Errorf("journal %s can take no more entries: %w", j.path, j.broken)
	}
	if err := ctx.Err(); err != nil {
		return journal.Entry{}, fmt.Errorf("journal %s: %w", kind, err)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return journal.Entry{}, fmt.Errorf("journal %s: encode data: %w", kind, err)
	}
	// Masked before sealing, so the chain vouches for what is kept; the
	// masks keep JSON valid (escaped forms are masked whole).
	e, err := journal.Next(j.prev, j.clock.Now(), j.session.Actor, kind, json.RawMessage(j.secrets.ScrubBytes(data)))
	if err != nil {
		return journal.Entry{}, err
	}
	line, err := json.Marshal(e)
	if err != nil {
		return journal.Entry{}, fmt.Errorf("journal %s: encode entry: %w", kind, err)
	}
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		// Cut a partial line off so the chain stays readable; only if that
		// fails too is the journal unusable.
		if terr := j.f.Truncate(j.size); terr != nil {
			j.broken = fmt.Errorf("write failed (%w) and the partial line could not be removed (%w)", err, terr)
		}
		return journal.Entry{}, fmt.Errorf("write journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages
		// and a retry can report success without the data on disk, so the
		// line's durability is unknown for good.
		j.broken = fmt.Errorf("fsync failed: %w", err)
		return journal.Entry{}, fmt.Errorf("sync journal %s: %w", j.path, err)
	}
	j.size += int64(len(line)) + 1
	j.prev = &e
	j.unconfirmed = append(j.unconfirmed, journal.Line{Number: int(e.Seq), Text: line})
	if err := j.ledger.AppendJournal(context.WithoutCancel(ctx), j.session.ID, j.unconfirmed); err != nil {
		return e, fmt.Errorf("journal %s: entry %d is written but the ledger did not keep it nor move its head: %w", j.path, e.Seq, err)
	}
	j.unconfirmed = j.unconfirmed[:0]
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
	if j.deferred != nil {
		return nil // never created: nothing to close
	}
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
// 1, for journal.Verify. A last line without a newline (a write cut
// short) is still a line. A missing file is an error wrapping
// fault.ErrNotFound.
func ReadJournal(path string) ([]journal.Line, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("journal %s: %w", path, fault.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	var lines []journal.Line
	for n := 1; len(b) > 0; n++ {
		text, rest, _ := bytes.Cut(b, []byte{'\n'})
		lines = append(lines, journal.Line{Number: n, Text: text})
		b = rest
	}
	return lines, nil
}

// ReadEntries decodes the journal at path for display. It does not verify
// the chain (journal.Verify does). On a line that is not an entry
// it returns the entries before it and an error naming the line.
func ReadEntries(path string) ([]journal.Entry, error) {
	lines, err := ReadJournal(path)
	if err != nil {
		return nil, err
	}
	entries := make([]journal.Entry, 0, len(lines))
	for _, l := range lines {
		var e journal.Entry
		if err := json.Unmarshal(l.Text, &e); err != nil {
			return entries, fmt.Errorf("journal %s line %d is not a journal entry: %w", path, l.Number, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// SessionFiles reads the session directories under Dir: each session's
// journal and the recordings beside it. It is audit.SessionFiles.
type SessionFiles struct{ Dir string }

var _ audit.SessionFiles = SessionFiles{}

// JournalPath is where session id's journal is.
func (f SessionFiles) JournalPath(id string) string {
	return filepath.Join(f.Dir, filepath.Base(id), JournalFile)
}

// JournalLines reads session id's journal for verification.
func (f SessionFiles) JournalLines(_ context.Context, id string) ([]journal.Line, error) {
	if err := checkSessionID(id); err != nil {
		return nil, err
	}
	return ReadJournal(f.JournalPath(id))
}

// SessionIDs lists the session directories of Dir, sorted (ReadDir's
// order): every directory a session left, whether or not a ledger knows
// it. No directory yet is no sessions.
func (f SessionFiles) SessionIDs(context.Context) ([]string, error) {
	entries, err := os.ReadDir(f.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the sessions in %s: %w", f.Dir, err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && checkSessionID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// RecordingSHA256 hashes the file name (as a journal names it) of session
// id's directory; only a plain file name is accepted, never a path.
func (f SessionFiles) RecordingSHA256(_ context.Context, id, name string) (string, error) {
	if err := checkSessionID(id); err != nil {
		return "", err
	}
	file, err := os.Open(filepath.Join(f.Dir, filepath.Base(id), filepath.Base(name)))
	if err != nil {
		return "", err
	}
	defer file.Close()
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return "", fmt.Errorf("read %s: %w", file.Name(), err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
