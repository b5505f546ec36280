// Package audit checks what a release left behind, changing nothing: it
// verifies sessions' journals against the ledger, the screen recordings,
// the signed heads and their anchor outside the ledger (relcap journal
// verify), reads a journal back for display, compares a migrated ledger
// with the one it came from, and seals closed sessions' heads. It reads
// the one catalogue of journal records, the core's
// (workflow/journal/records.go), and imports the core; the core does not
// import it.
package audit

import (
	"errors"

	"github.com/relcap/relcap/workflow"
)

// Deps are the ports an Auditor reads. Project and Ledger are always
// needed; Sessions is needed to read journals (a missing one fails the
// query, naming it); Verifier and Anchor are nil where the project names
// no people file or environment repository, and what they would check is
// then said to be unchecked.
type Deps struct {
	Project *workflow.Project
	Ledger  Ledger
	// Sessions reads session files for journal verification.
	Sessions SessionFiles
	// Verifier checks signatures against the people file.
	Verifier workflow.SignatureVerifier
	// Anchor is where sealed session heads are kept outside the ledger.
	Anchor JournalAnchor
}

// Auditor answers what the journals, the ledger and the anchor say of
// the sessions, changing nothing and journaling nothing.
type Auditor struct {
	project  *workflow.Project
	ledger   Ledger
	sessions SessionFiles
	verifier workflow.SignatureVerifier
	anchor   JournalAnchor
}

// New checks the ports every query needs: Project and Ledger.
func New(d Deps) (*Auditor, error) {
	switch {
	case d.Project == nil:
		return nil, errors.New("audit: no project configuration")
	case d.Ledger == nil:
		return nil, errors.New("audit: no ledger")
	}
	return &Auditor{project: d.Project, ledger: d.Ledger, sessions: d.Sessions, verifier: d.Verifier, anchor: d.Anchor}, nil
}
