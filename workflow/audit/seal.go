package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
)

// SessionHead is a closed session's final journal head: which session,
// whose, of which command and release, its last entry, and when it was
// sealed. It is what the actor signs (Statement) and what is anchored
// outside the ledger, so a rewritten journal whose ledger head was
// rewritten with it still disagrees with both.
type SessionHead struct {
	Session string `json:"session"`
	Actor   string `json:"actor"`
	Command string `json:"command"`
	Release string `json:"release,omitempty"`
	// Ledger is the identity of the ledger that holds the session
	// (LedgerIdentity), signed with the rest: an anchor shared by several
	// ledgers (projects whose environment repository is the same, or a
	// team's store beside a captain's own) then tells a session of
	// another ledger from one whose row was deleted. Empty for heads
	// sealed before ledgers had one.
	Ledger string    `json:"ledger,omitempty"`
	Seq    int64     `json:"seq"`
	Hash   string    `json:"hash"`
	At     time.Time `json:"at"`
}

// OfAnotherLedger reports whether the head names a ledger other than
// self; a head that names none (sealed before ledgers had one) is taken
// to be self's.
func (h SessionHead) OfAnotherLedger(self string) bool { return h.Ledger != "" && h.Ledger != self }

// Statement is the exact text a head's signature covers, in namespace
// NamespaceJournal: what `ssh-keygen -Y verify -n relcap-journal` reads on
// its standard input. Free text is quoted, so no field can forge another.
// A head that names its ledger is a v2 statement, with the ledger's line;
// one that does not is v1, byte for byte as heads were signed before.
func (h SessionHead) Statement() []byte {
	var b strings.Builder
	if h.Ledger == "" {
		b.WriteString("relcap journal head v1\n")
	} else {
		b.WriteString("relcap journal head v2\n")
	}
	fmt.Fprintf(&b, "session: %s\nactor: %s\ncommand: %s\nrelease: %s\n",
		strconv.Quote(h.Session), strconv.Quote(h.Actor), strconv.Quote(h.Command), strconv.Quote(h.Release))
	if h.Ledger != "" {
		fmt.Fprintf(&b, "ledger: %s\n", strconv.Quote(h.Ledger))
	}
	fmt.Fprintf(&b, "seq: %d\nhash: %s\nat: %s\n", h.Seq, h.Hash, h.At.UTC().Format(time.RFC3339Nano))
	return []byte(b.String())
}

// SealedHead is a session's head with its actor's signature of
// Head.Statement(), or, when there is none, why (Unsigned).
type SealedHead struct {
	Head      SessionHead        `json:"head"`
	Signature approval.Signature `json:"signature,omitzero"`
	Unsigned  string             `json:"unsigned,omitempty"`
}

// Signed reports whether the head carries a signature.
func (s SealedHead) Signed() bool { return !s.Signature.IsZero() }

// SessionSeal is what the ledger keeps of a sealed session: the sealed
// head, and where it was anchored or why it was not. A session closed
// before relcap sealed heads (or whose process ended first) has none:
// Sealed() is false.
type SessionSeal struct {
	SealedHead
	Anchor     string `json:"anchor,omitempty"`
	Unanchored string `json:"unanchored,omitempty"`
	// Unprotected warns, when the head was just anchored, that the anchor
	// is where its keeper alone can rewind it (AnchorPlace.Unprotected).
	// The ledger does not keep it: journal verify reads it from the
	// anchor each time.
	Unprotected string `json:"-"`
}

// Sealed reports whether the session was sealed at all.
func (s SessionSeal) Sealed() bool { return !s.Head.At.IsZero() }

// AnchoredHead is a sealed head as an anchor keeps it, with the exact
// statement that was signed, so an auditor can check it with git and
// ssh-keygen alone.
type AnchoredHead struct {
	Version int `json:"version"`
	SealedHead
	// Statement is Head.Statement() as text.
	Statement string `json:"statement"`
}

// AnchorVersion is the version of AnchoredHead this relcap writes.
const AnchorVersion = 1

// NewAnchoredHead is s as an anchor keeps it.
func NewAnchoredHead(s SealedHead) AnchoredHead {
	return AnchoredHead{Version: AnchorVersion, SealedHead: s, Statement: string(s.Head.Statement())}
}

// HeadSealer seals closed sessions: it signs each one's final head with
// its actor's own key (namespace relcap-journal) and anchors it outside
// the ledger, and records in the ledger what it did, or why not. Nothing
// it does is journaled: the session's chain ended when it closed, and an
// entry written now would change the head being signed.
type HeadSealer struct {
	Ledger SealStore
	Clock  workflow.Clock
	// Signer signs as the session's actor; nil when the project names no
	// people file.
	Signer workflow.Signer
	// Anchor keeps the sealed head outside the ledger; nil when there is
	// nowhere to keep it, and NoAnchor says why.
	Anchor   JournalAnchor
	NoAnchor string
}

// Seal signs and anchors the final head of session id, which must be
// closed (its journal takes no more entries), and records the seal in the
// ledger. A head that cannot be signed or anchored is sealed all the same,
// with why in Unsigned or Unanchored: never silently. Sealing a session
// twice changes nothing and returns the first seal. The error is only for
// a seal the ledger could not read or record.
func (s HeadSealer) Seal(ctx context.Context, id string) (SessionSeal, error) {
	switch {
	case s.Ledger == nil:
		return SessionSeal{}, errors.New("audit: sealing a session needs the ledger")
	case s.Clock == nil:
		return SessionSeal{}, errors.New("audit: sealing a session needs a clock")
	}
	seal, err := s.Ledger.SessionSeal(ctx, id)
	if err != nil {
		return SessionSeal{}, err
	}
	if seal.Sealed() {
		return seal, nil
	}
	seal.Head.At = s.Clock.Now()
	if s.Signer == nil {
		seal.Unsigned = "the project names no people file (people: in relcap.yaml), so nobody's key signs"
	} else if sig, err := s.Signer.Sign(ctx, seal.Head.Actor, approval.NamespaceJournal, seal.Head.Statement()); err != nil {
		seal.Unsigned = fmt.Sprintf("%s could not sign: %v", seal.Head.Actor, err)
	} else {
		seal.Signature = sig
	}
	if s.Anchor == nil {
		seal.Unanchored = s.NoAnchor
		if seal.Unanchored == "" {
			seal.Unanchored = "no anchor is configured"
		}
	} else if where, err := s.Anchor.Anchor(ctx, seal.SealedHead); err != nil {
		seal.Unanchored = err.Error()
	} else {
		seal.Anchor = where.String()
		seal.Unprotected = where.Unprotected()
	}
	kept := seal
	kept.Unprotected = "" // said, not kept
	if err := s.Ledger.SealSession(ctx, kept); err != nil {
		return seal, fmt.Errorf("record the seal of session %s: %w", id, err)
	}
	return seal, nil
}
