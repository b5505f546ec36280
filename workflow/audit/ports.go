package audit

import (
	"context"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/journal"
)

// The ports journal verification and sealing need, besides the core's
// (workflow.SignatureVerifier, workflow.Signer, workflow.Clock). The
// store adapter implements Ledger beside workflow.Ledger; the
// environment repository adapter implements JournalAnchor.

// SealStore keeps the seal of each closed session's head.
type SealStore interface {
	// SessionSeal returns the session's head as the ledger holds it (its
	// actor, command, release and last entry) with the seal recorded for
	// it; Sealed() is false for a session never sealed. An unknown session
	// is ErrNotFound.
	SessionSeal(ctx context.Context, sessionID string) (SessionSeal, error)
	// SealSession records a session's seal once: a session already sealed,
	// or a seal of another head than the ledger's, is refused.
	SealSession(ctx context.Context, seal SessionSeal) error
}

// Ledger is what journal verification reads of the ledger: its sessions
// and identity, each session's seal, and its copy of each journal.
type Ledger interface {
	SealStore
	Sessions(ctx context.Context) ([]workflow.Session, error)
	// LedgerIdentity is the ledger's own name (workflow.SessionStore).
	LedgerIdentity(ctx context.Context) (string, error)
	// JournalCopy returns the ledger's copy of the session's journal. An
	// unknown session is ErrNotFound.
	JournalCopy(ctx context.Context, sessionID string) (JournalCopy, error)
}

// JournalCopy is the ledger's copy of a session's journal, read at once
// with the head it holds.
type JournalCopy struct {
	// Kept is false for a session opened before the ledger kept journal
	// entries (schema 8) and never migrated with its file (relcap ledger
	// migrate copies it in): its journal is in its file alone.
	Kept bool
	// Lines are the entries' lines as the journal file holds them,
	// numbered by their sequence, in order; a gap in the numbers is an
	// entry missing from the copy.
	Lines []journal.Line
	// Head is the ledger's head, read with the lines.
	Head journal.Head
}

// JournalAnchor keeps sealed session heads outside the ledger, where the
// captain alone cannot rewrite them unnoticed: refs/relcap/journal of the
// environment repository, a chain of commits that only moves forward.
type JournalAnchor interface {
	// Anchor records h and returns where (its String is for the ledger
	// and messages). It blocks until the anchor is durable where others
	// see it (pushed). Anchoring the same head again changes nothing;
	// another head for a session already anchored is refused with
	// ErrBlocked. The error says why it could not be anchored and never
	// carries credentials.
	Anchor(ctx context.Context, h SealedHead) (AnchorPlace, error)
	// History reads the anchor's whole history: the heads its tip holds,
	// every commit reachable from the tip, and every anchor file a commit
	// held that the tip no longer holds as first written. An anchor whose
	// history was rewritten or deleted since this machine last read it,
	// or a file that is not the head of the session it is named after, is
	// an error wrapping ErrTampered.
	History(ctx context.Context) (AnchorHistory, error)
	// Where names the anchor in messages, without credentials.
	Where() string
}

// SessionFiles reads what sessions left beside the ledger: their journal
// files and the screen recordings those journals vouch for.
type SessionFiles interface {
	// JournalLines returns a session's journal, line by line, or an error
	// wrapping ErrNotFound when the file is missing.
	JournalLines(ctx context.Context, sessionID string) ([]journal.Line, error)
	// RecordingSHA256 returns the hex SHA-256 of a file of the session's
	// directory (name as journaled), or an error when it cannot be read.
	RecordingSHA256(ctx context.Context, sessionID, name string) (string, error)
	// SessionIDs lists the sessions that left a directory here, whether
	// or not the ledger knows them, sorted.
	SessionIDs(ctx context.Context) ([]string, error)
}
