// Package journal is the session journal's chain: entries that each carry
// the SHA-256 of the one before, sealed by Next and checked by Verify
// against the head the ledger holds. The chain knows nothing of what
// entries say; records.go catalogues the release core's records and their
// kinds (Record), kept here, apart from the core, so the ledger, audits and
// reports read them without it; each feature's records are in its
// package's records.go.
package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Kind names what an entry records, e.g. "step.finished".
type Kind string

// Entry is one line of a session journal. Every entry carries the
// SHA-256 of the previous one, so editing, removing or reordering an entry
// breaks the chain, and the head stored in the ledger catches truncation.
type Entry struct {
	Seq   int64           `json:"seq"`
	Time  time.Time       `json:"time"`
	Actor string          `json:"actor"`
	Kind  Kind            `json:"kind"`
	Data  json.RawMessage `json:"data,omitempty"`
	Prev  string          `json:"prev"`
	Hash  string          `json:"hash"`
}

// GenesisHash is the Prev of a session's first entry.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// hashedFields is the part of an entry its hash covers, in a fixed order.
type hashedFields struct {
	Seq   int64           `json:"seq"`
	Time  string          `json:"time"`
	Actor string          `json:"actor"`
	Kind  Kind            `json:"kind"`
	Data  json.RawMessage `json:"data,omitempty"`
	Prev  string          `json:"prev"`
}

// ComputeHash returns the SHA-256 of everything in the entry but Hash.
func (e Entry) ComputeHash() string {
	b, err := json.Marshal(hashedFields{e.Seq, e.Time.UTC().Format(time.RFC3339Nano), e.Actor, e.Kind, e.Data, e.Prev})
	if err != nil {
		// Data is RawMessage that failed to re-marshal: not valid JSON.
		// Hash the raw bytes instead so the chain still detects changes.
		b = append([]byte(fmt.Sprintf("%d|%s|%s|%s|%s|", e.Seq, e.Time.UTC().Format(time.RFC3339Nano), e.Actor, e.Kind, e.Prev)), e.Data...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Next seals a new entry after prev (nil for the first).
func Next(prev *Entry, at time.Time, actor string, kind Kind, data any) (Entry, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Entry{}, fmt.Errorf("journal %s: encode data: %w", kind, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return Entry{}, fmt.Errorf("journal %s: encode data: %w", kind, err)
	}
	e := Entry{Seq: 1, Time: at.UTC(), Actor: actor, Kind: kind, Data: compact.Bytes(), Prev: GenesisHash}
	if prev != nil {
		e.Seq = prev.Seq + 1
		e.Prev = prev.Hash
	}
	e.Hash = e.ComputeHash()
	return e, nil
}

// Head is the last entry of a session as the ledger remembers it.
type Head struct {
	SessionID string `json:"session_id"`
	Seq       int64  `json:"seq"`
	Hash      string `json:"hash"`
}

// Line is one raw line of a journal file, numbered from 1.
type Line struct {
	Number int
	Text   []byte
}

// Problem names the first entry that fails verification.
type Problem struct {
	Line   int    `json:"line"` // 0 when the problem is a missing tail
	Seq    int64  `json:"seq"`  // the entry expected at that position
	Reason string `json:"reason"`
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("entry %d: %s", p.Seq, p.Reason)
	}
	return fmt.Sprintf("line %d (entry %d): %s", p.Line, p.Seq, p.Reason)
}

// Verify checks a session's lines against the chain and the head the
// ledger holds. It returns the number of intact entries and the first
// problem, or nil when the journal is intact.
func Verify(lines []Line, head Head) (int64, *Problem) {
	seq, hash, p := Chain(lines)
	if p != nil {
		return seq, p
	}
	return seq, MatchHead(lines, seq, hash, head)
}

// Chain checks the lines' hash chain alone: every entry's sequence, link
// and hash. It returns the number of intact entries, the hash of the last
// one (GenesisHash for none) and the first problem, or nil.
func Chain(lines []Line) (seq int64, last string, p *Problem) {
	prevHash := GenesisHash
	for _, l := range lines {
		want := seq + 1
		var e Entry
		if err := json.Unmarshal(l.Text, &e); err != nil {
			return seq, prevHash, &Problem{Line: l.Number, Seq: want, Reason: "not a journal entry (damaged or truncated line): " + err.Error()}
		}
		switch {
		case e.Seq != want:
			reason := fmt.Sprintf("sequence %d where %d was expected: an entry was removed or reordered", e.Seq, want)
			if e.Seq < want {
				reason = fmt.Sprintf("sequence %d where %d was expected: an entry was duplicated or reordered", e.Seq, want)
			}
			return seq, prevHash, &Problem{Line: l.Number, Seq: want, Reason: reason}
		case e.Prev != prevHash:
			return seq, prevHash, &Problem{Line: l.Number, Seq: want, Reason: "previous-hash link broken: the entry before it was changed or removed"}
		case e.ComputeHash() != e.Hash:
			return seq, prevHash, &Problem{Line: l.Number, Seq: want, Reason: "content does not match its hash: the entry was edited"}
		}
		prevHash = e.Hash
		seq = e.Seq
	}
	return seq, prevHash, nil
}

// MatchHead compares an intact chain of lines, ending at entry seq with
// hash, with the head the ledger holds: a longer head means the file was
// truncated, a shorter one that entries were appended outside relcap, and
// another hash that the journal was rewritten. It returns nil when they
// agree.
func MatchHead(lines []Line, seq int64, hash string, head Head) *Problem {
	switch {
	case head.Seq > seq:
		return &Problem{Seq: seq + 1, Reason: fmt.Sprintf("missing: the ledger's head is entry %d, the file ends at entry %d (truncated)", head.Seq, seq)}
	case head.Seq < seq:
		return &Problem{Seq: head.Seq + 1, Line: lineOf(lines, head.Seq+1), Reason: fmt.Sprintf("not confirmed by the ledger, whose head is entry %d: appended outside relcap", head.Seq)}
	case seq > 0 && head.Hash != hash:
		return &Problem{Seq: seq, Line: lineOf(lines, seq), Reason: "differs from the head hash in the ledger: the journal was rewritten"}
	}
	return nil
}

func lineOf(lines []Line, seq int64) int {
	if seq >= 1 && int(seq) <= len(lines) {
		return lines[seq-1].Number
	}
	return 0
}
