package plain

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
)

// PrintSessions prints the session table, oldest first.
func PrintSessions(w io.Writer, sessions []workflow.Session) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTARTED (UTC)\tACTOR\tCOMMAND\tRELEASE\tENTRIES")
	for _, s := range sessions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", s.ID, s.StartedAt.UTC().Format("2006-01-02 15:04:05"), s.Actor, s.Command, dash(s.ReleaseID), s.Entries)
	}
	return tw.Flush()
}

// PrintJournalEntries prints a journal's entries one per line, or as
// NDJSON.
func PrintJournalEntries(w io.Writer, entries []journal.Entry, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, e := range entries {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	for _, e := range entries {
		fmt.Fprintf(w, "%4d  %s  %-10s %-20s %s\n", e.Seq, e.Time.UTC().Format(time.RFC3339), e.Actor, e.Kind, e.Data)
	}
	return nil
}

// VerifiedSession is one session's verification with where its journal
// is, as journal verify --json prints it.
type VerifiedSession struct {
	audit.SessionVerification
	Path string `json:"path"`
}

// PrintVerification prints one line per session on out (ok or TAMPERED,
// with each failed check) and the warnings on errw, but for once, which is
// said once for all.
func PrintVerification(out, errw io.Writer, results []VerifiedSession, once string) {
	for _, r := range results {
		where, from := r.Path, ""
		if r.Journal == audit.JournalFromLedger {
			where, from = "the ledger's copy", "  (from the ledger's copy: the journal file is not on this machine)"
		}
		if r.Intact {
			fmt.Fprintf(out, "ok       %s  %d entries%s\n", r.Session, r.Entries, from)
		} else {
			fmt.Fprintf(out, "TAMPERED %s  %s: %s\n", r.Session, where, r.Problem)
			for _, f := range r.Failed {
				// The headline already says the first problem.
				if _, detail, _ := strings.Cut(f, ": "); r.Problem != nil && (f == r.Problem.Reason || detail == r.Problem.String()) {
					continue
				}
				fmt.Fprintf(out, "         failed %s\n", f)
			}
		}
		v := r.SessionVerification
		v.Warnings = slices.DeleteFunc(slices.Clone(v.Warnings), func(w string) bool { return w == once }) // said once, below
		if w := verifyWarning(v); w != "" {
			fmt.Fprintf(errw, "warning  %s  %s\n", r.Session, w)
		}
	}
	if len(results) == 0 {
		fmt.Fprintln(errw, "no sessions to verify")
	}
}

// PrintVerificationNotes prints what a verification of the journals says
// beyond each session: other ledgers' sessions, what could not be checked,
// and tampering of the anchor itself (on tampered: stdout, or stderr when
// stdout is a JSON document).
func PrintVerificationNotes(errw, tampered io.Writer, checked audit.JournalVerification, sessionsDir string) {
	if checked.OtherLedgers > 0 {
		fmt.Fprintf(errw, "note: %s also anchors %d session(s) of other ledgers (their signed heads say which); verify them with those ledgers (--ledger), or one by ID here\n",
			checked.Anchor, checked.OtherLedgers)
	}
	if checked.OtherLedgerJournals > 0 {
		fmt.Fprintf(errw, "note: %s also holds the journals of %d session(s) of other ledgers (their journals say which); verify them with those ledgers (--ledger)\n",
			sessionsDir, checked.OtherLedgerJournals)
	}
	for _, u := range checked.Unchecked {
		fmt.Fprintf(errw, "warning  %s\n", u)
	}
	if checked.Unprotected != "" {
		fmt.Fprintf(errw, "warning  %s\n", checked.Unprotected)
	}
	for _, t := range checked.AnchorTampered {
		fmt.Fprintf(tampered, "TAMPERED %s: %s\n", checked.Anchor, t)
	}
	if err := checked.AnchorError; err != nil && errors.Is(err, fault.ErrTampered) {
		fmt.Fprintf(tampered, "TAMPERED %s: %v\n", checked.Anchor, err)
	}
}

// verifyWarning is one line of what could not be vouched for: unsigned,
// unanchored, unchecked; "" for nothing.
func verifyWarning(v audit.SessionVerification) string {
	if v.Unsigned != "" && v.Unsigned == v.Unanchored {
		// Never sealed: one reason for both.
		w := "unsigned and not anchored: " + v.Unsigned
		for _, x := range v.Warnings {
			if !strings.HasPrefix(x, "unsigned: ") && !strings.HasPrefix(x, "not anchored: ") {
				w += "; " + x
			}
		}
		return w
	}
	return strings.Join(v.Warnings, "; ")
}

// SessionVerdict is a session verification in a word or a problem.
func SessionVerdict(v audit.SessionVerification) string {
	switch {
	case v.Session == "":
		return "not found"
	case v.Intact:
		return "intact"
	case len(v.Failed) > 0:
		return "failed " + strings.Join(v.Failed, ", ")
	}
	return "failed"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// MovedProblems says what differs after a ledger moved: sessions that
// verify differently, and the effort report when it is not the same.
func MovedProblems(journals []audit.MovedSession, effortSame bool) []string {
	var problems []string
	for _, s := range journals {
		if !s.Same {
			problems = append(problems, fmt.Sprintf("session %s verifies differently (before: %s, after: %s)", s.Session, SessionVerdict(s.Before), SessionVerdict(s.After)))
		}
	}
	if !effortSame {
		problems = append(problems, "the effort report over the migrated releases differs between the two ledgers")
	}
	return problems
}

// PrintJournalsVerified prints journal verify's results (one line per
// session, or one JSON document on out) and its notes, and says whether a
// session or the anchor itself was tampered with; journalPath is where a
// session's journal file is.
func PrintJournalsVerified(out, errw io.Writer, asJSON bool, checked audit.JournalVerification, sessionsDir string, journalPath func(session string) string) (tampered bool, err error) {
	results := make([]VerifiedSession, 0, len(checked.Sessions))
	var bad []string
	for _, v := range checked.Sessions {
		if !v.Intact {
			bad = append(bad, v.Session)
		}
		results = append(results, VerifiedSession{SessionVerification: v, Path: journalPath(v.Session)})
	}
	tamperedOut := out
	if asJSON {
		if err := WriteJSON(out, results); err != nil {
			return false, err
		}
		tamperedOut = errw // stdout stays one JSON document
	} else {
		PrintVerification(out, errw, results, checked.Unprotected)
	}
	PrintVerificationNotes(errw, tamperedOut, checked, sessionsDir)
	if len(bad) > 0 {
		fmt.Fprintf(errw, "%d of %d journal(s) failed verification: %s\n", len(bad), len(results), strings.Join(bad, ", "))
		return true, nil
	}
	return checked.Tampered(), nil
}

// PrintSessionList is journal list: the session table, one JSON array on
// out (asJSON), or on errw that there is none yet.
func PrintSessionList(out, errw io.Writer, sessions []workflow.Session, asJSON bool) error {
	if asJSON {
		if sessions == nil {
			sessions = []workflow.Session{}
		}
		return WriteJSON(out, sessions)
	}
	if len(sessions) == 0 {
		fmt.Fprintln(errw, "no sessions yet: state-changing commands (effort log, plan, approve, release…) open one")
		return nil
	}
	return PrintSessions(out, sessions)
}

// PrintJournalFromLedger says that a session's journal is shown from the
// ledger's copy, its file (path) not being on this machine.
func PrintJournalFromLedger(w io.Writer, session, path string) {
	fmt.Fprintf(w, "relcap: session %s was recorded on another machine (no %s here): showing the ledger's copy of its journal\n", session, path)
}
