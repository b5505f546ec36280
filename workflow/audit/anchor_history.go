package audit

import (
	"fmt"
	"strings"
	"time"
)

// AnchorPlace is where a sealed head was anchored: a commit of a ref of a
// repository. Its String is what the ledger keeps (SessionSeal.Anchor),
// "refs/relcap/journal <commit, 12 digits> of <repository>", and
// ParseAnchorPlace reads it back, so verify can ask whether the commit a
// session was anchored at is still in the ref's history.
type AnchorPlace struct {
	Ref    string // refs/relcap/journal
	Commit string // the anchor commit, in hex (full, or abbreviated when parsed)
	Repo   string // the repository, without credentials
	// InPlace: the ref was written in place, in a repository without an
	// origin: whoever keeps that repository can rewind the ref alone, and
	// nothing local tells.
	InPlace bool
}

// anchorCommitDigits is how much of the commit the ledger keeps.
const anchorCommitDigits = 12

func (p AnchorPlace) String() string {
	c := p.Commit
	if len(c) > anchorCommitDigits {
		c = c[:anchorCommitDigits]
	}
	s := p.Ref + " " + c
	if p.Repo != "" {
		s += " of " + p.Repo
	}
	return s
}

// ParseAnchorPlace reads a SessionSeal.Anchor back; ok is false for text
// that is not an AnchorPlace (a ledger edited by hand, or a fake's).
func ParseAnchorPlace(s string) (AnchorPlace, bool) {
	refCommit, repo, _ := strings.Cut(s, " of ")
	ref, commit, ok := strings.Cut(refCommit, " ")
	if !ok || ref == "" || len(commit) < 7 || strings.Trim(commit, "0123456789abcdef") != "" {
		return AnchorPlace{}, false
	}
	return AnchorPlace{Ref: ref, Commit: commit, Repo: repo}, true
}

// Unprotected is the warning an anchor written in place deserves, "" for
// one pushed to an origin.
func (p AnchorPlace) Unprotected() string {
	if !p.InPlace {
		return ""
	}
	return fmt.Sprintf("anchor not protected: %s has no origin; rewinds cannot be detected (give it an origin whose %s only fast-forwards: see docs/SECURITY.md)", p.Repo, p.Ref)
}

// AnchorHistory is everything an anchor's ref ever held: the heads its tip
// holds, and what any commit of its history held that the tip no longer
// holds as it was first written. relcap only ever adds anchor files, so
// an erased one is tampering, even when it was erased by a fast-forward
// that a server's protection allows.
type AnchorHistory struct {
	// Place is the repository and its tip commit ("" for an empty ref).
	Place AnchorPlace
	// Heads are the heads the tip holds, by session.
	Heads []AnchoredHead
	// Erased are the anchor files some commit held that the tip does not
	// hold as first written: removed, or changed.
	Erased []ErasedAnchor
	// Commits are the IDs (full hex) of every commit reachable from the
	// tip, by ID: an anchor commit the ledger recorded that is not among
	// them was rewound or rewritten away.
	Commits map[string]bool
}

// Contains reports whether commit, full or abbreviated, is one of the
// history's.
func (h AnchorHistory) Contains(commit string) bool {
	if h.Commits[commit] {
		return true
	}
	for c := range h.Commits {
		if strings.HasPrefix(c, commit) {
			return true
		}
	}
	return false
}

// ErasedAnchor is an anchor file that a commit of the history held and
// the tip no longer holds as first written.
type ErasedAnchor struct {
	File string
	// Head is the head as first anchored.
	Head AnchoredHead
	// AddedIn is the commit that first held it.
	AddedIn string
	// By is the commit that removed it, or changed it (Changed).
	By      string
	Author  string
	At      time.Time
	Changed bool
	Subject string // the commit message's first line
}

// what says what happened to the file, naming the commits.
func (e ErasedAnchor) what() string {
	verb := "removed"
	if e.Changed {
		verb = "changed"
	}
	return fmt.Sprintf("%s (anchored at commit %s) was %s by commit %s (%s, %s, %q)",
		e.File, short(e.AddedIn), verb, short(e.By), e.Author, e.At.UTC().Format(time.RFC3339), e.Subject)
}

func short(commit string) string {
	if len(commit) > anchorCommitDigits {
		return commit[:anchorCommitDigits]
	}
	return commit
}
