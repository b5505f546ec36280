package plain

import (
	"fmt"
	"io"
	"strings"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/effort"
)

// The one-line results of the commands that change something, and the
// notices beside them.

// PrintApplied says that relcap apply applied the plan.
func PrintApplied(w io.Writer, fingerprint, env string, res workflow.ApplyResult) {
	fmt.Fprintf(w, "applied plan %s to %s; state serial is now %d\n", fingerprint, env, res.StateSerial)
}

// PrintUnlocked says that relcap unlock released the state lock.
func PrintUnlocked(w io.Writer, lockID, env string) {
	fmt.Fprintf(w, "released state lock %s of %s\n", lockID, env)
}

// PrintReleaseStarted names the release relcap release started.
func PrintReleaseStarted(w io.Writer, id, image, env string) {
	fmt.Fprintf(w, "release %s: %s to %s\n", id, image, env)
}

// PrintRollbackStarted names the rollback release relcap rollback started.
func PrintRollbackStarted(w io.Writer, r *workflow.Release, env, to string) {
	fmt.Fprintf(w, "rollback %s: %s back to release %s (%s)\n", r.ID, env, to, r.Checkpoints.Digest)
}

// PrintRevisionConverged says that an environment converged on one
// revision (relcap converge --revision).
func PrintRevisionConverged(w io.Writer, revision string, res workflow.RevisionResult) {
	fmt.Fprintf(w, "%s converged: synced at %s, healthy, running %s\n", res.App.Name, workflow.ShortHash(revision), res.Pinned.Digest)
}

// PrintPaused says that the captain left the cockpit and how to go on.
func PrintPaused(w io.Writer, id string) {
	fmt.Fprintf(w, "release %s paused; nothing completed is lost: relcap resume %s\n", id, id)
}

// PrintNothingInProgress says what to run when no release of app is in
// progress; firstEnv is the first of the promotion order.
func PrintNothingInProgress(w io.Writer, app, firstEnv string) {
	fmt.Fprintf(w, "No release of %s is in progress. Start one with:\n  relcap release --env %s --image REGISTRY/REPO:TAG\nor try the whole flow on a sandbox: relcap demo\n", app, firstEnv)
}

// PrintEffortLogged says what relcap effort log recorded.
func PrintEffortLogged(out io.Writer, entry effort.Entry, session string) {
	fmt.Fprintf(out, "logged %s of off-tool coordination by %s against %s (session %s)\n",
		entry.Duration, entry.Person, entry.ReleaseID, session)
}

// PrintPurged says how many expired plans were removed: plan files on
// this machine, or with where set the shared plans of the team store.
func PrintPurged(w io.Writer, removed int, where string) {
	switch {
	case removed == 0:
	case where == "":
		fmt.Fprintf(w, "removed %d expired plan file(s)\n", removed)
	default:
		fmt.Fprintf(w, "removed %d expired shared plan(s) from %s\n", removed, where)
	}
}

// PrintSealWarnings warns about a closed session's head that could not be
// vouched for: unsigned though the project has a people file
// (signedByPeople), unanchored though it has an anchor (anchored), or
// anchored where nothing protects the ref.
func PrintSealWarnings(w io.Writer, session string, seal audit.SessionSeal, signedByPeople, anchored bool) {
	if seal.Unsigned != "" && signedByPeople {
		fmt.Fprintf(w, "relcap: warning: the journal head of session %s is not signed: %s\n", session, seal.Unsigned)
	}
	if seal.Unanchored != "" && anchored {
		fmt.Fprintf(w, "relcap: warning: the journal head of session %s is not anchored: %s\n", session, seal.Unanchored)
	}
	if seal.Unprotected != "" {
		fmt.Fprintf(w, "relcap: warning: the journal head of session %s is anchored, but %s\n", session, seal.Unprotected)
	}
}

// PrintMigrationFailed says what the verification of a migration found
// different.
func PrintMigrationFailed(w io.Writer, problems []string) {
	fmt.Fprintf(w, "relcap: the migration's verification failed: %s\n", strings.Join(problems, "; "))
}

// PrintEffortAtExit is the effort of a release as the ledger holds it when
// the cockpit closes: the figure its status bar showed (effort.Tally), and
// each step relcap could not measure, with why.
func PrintEffortAtExit(w io.Writer, id string, f effort.Figure) {
	fmt.Fprintf(w, "effort on %s: active %s, off-tool %s · machine wait %s (not staff time)\n",
		id, effort.Format(f.Active), effort.Format(f.OffTool), effort.Format(f.Wait))
	for _, u := range f.Unmeasured {
		fmt.Fprintf(w, "  unmeasured: %s on %s (%s)\n", u.Person, u.Step, u.Note)
	}
}
