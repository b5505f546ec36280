package plain

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// PrintRehearsal prints one rehearsal's record: its baseline, what was
// injected, detected and recovered when, and the answers relcap showed.
func PrintRehearsal(w io.Writer, rh *rehearsal.Rehearsal) {
	fmt.Fprintf(w, "\nrehearsal %s: %s in %s: %s\n", rh.ID, rh.Drill, rh.Env, strings.ToUpper(string(rh.State)))
	at := func(t time.Time) string { return t.UTC().Format("15:04:05") }
	failedApply := rh.Drill == rehearsal.DrillFailedApply
	if rh.Drill == rehearsal.DrillStateRestore {
		printStateRestore(w, rh)
		return
	}
	switch {
	case failedApply:
		fmt.Fprintf(w, "  baseline    %s  Terraform root at revision %s, %d resource(s) in its state; scratch copy %s\n", at(rh.StartedAt), orNone(workflow.ShortHash(rh.Baseline.Revision)), len(rh.Baseline.Resources), orNone(rh.ScratchDir))
	default:
		fmt.Fprintf(w, "  baseline    %s  release %s running %s at %s\n", at(rh.StartedAt), rh.Baseline.ReleaseID, rh.Baseline.Digest.Short(), workflow.ShortHash(rh.Baseline.EnvCommit))
	}
	switch {
	case rh.InjectedAt.IsZero():
	case failedApply:
		fmt.Fprintf(w, "  injected    %s  applying plan %s in the scratch copy\n", at(rh.InjectedAt), workflow.ShortHash(rh.DrillPlan))
	default:
		fmt.Fprintf(w, "  injected    %s  release %s\n", at(rh.InjectedAt), rh.DrillRelease)
	}
	if d, ok := rh.TimeToDetect(); ok {
		named := string(rh.Detected)
		if named == "" {
			named = "nothing"
		}
		fmt.Fprintf(w, "  detected    %s  %s after %s (expected %s)\n", at(rh.DetectedAt), named, d.Round(time.Second), rh.Expected)
	}
	if d, ok := rh.TimeToRecover(); ok && failedApply {
		fmt.Fprintf(w, "  recovered   %s  plan %s applied: the scratch state holds its %d baseline resource(s) again, after %s\n", at(rh.RecoveredAt), workflow.ShortHash(rh.RecoveryPlan), len(rh.Baseline.Resources), d.Round(time.Second))
	} else if ok {
		fmt.Fprintf(w, "  recovered   %s  release %s back on %s after %s\n", at(rh.RecoveredAt), rh.RecoveryRelease, rh.Baseline.Digest.Short(), d.Round(time.Second))
	} else if rh.RecoveryPlan != "" {
		fmt.Fprintf(w, "  recovering  plan %s\n", workflow.ShortHash(rh.RecoveryPlan))
	} else if rh.RecoveryRelease != "" {
		fmt.Fprintf(w, "  recovering  release %s\n", rh.RecoveryRelease)
	}
	printAnswersAndWhy(w, rh)
}

// printStateRestore prints a state-restore drill's record: its three
// times and what proved the restore.
func printStateRestore(w io.Writer, rh *rehearsal.Rehearsal) {
	at := func(t time.Time) string { return t.UTC().Format("15:04:05") }
	fmt.Fprintf(w, "  started     %s  Terraform root at revision %s\n", at(rh.StartedAt), orNone(workflow.ShortHash(rh.Baseline.Revision)))
	if p := rh.Restore; p != nil {
		fmt.Fprintf(w, "  backed up   %s  state %s serial %d, %d resource(s), in %s (terraform state pull)\n", at(rh.StartedAt), workflow.ShortHash(p.Lineage), p.Serial, p.Resources, p.BackupTook.Round(10*time.Millisecond))
		fmt.Fprintf(w, "  restored    %s  into the scratch copy %s, in %s\n", at(rh.InjectedAt), orNone(rh.ScratchDir), p.RestoreTook.Round(10*time.Millisecond))
		if p.Plan != "" {
			fmt.Fprintf(w, "  proved      %s  plan %s against the real resources, in %s: %s\n", at(rh.DetectedAt), workflow.ShortHash(p.Plan), p.ProveTook.Round(10*time.Millisecond), orNone(string(rh.Detected)))
		}
	}
	printAnswersAndWhy(w, rh)
}

// printAnswersAndWhy ends a rehearsal's record: the four answers as
// relcap showed them, a production override, and why it did not pass.
func printAnswersAndWhy(w io.Writer, rh *rehearsal.Rehearsal) {
	for _, ans := range []workflow.Answer{rh.IntendedRevision, rh.ActualArtifact, rh.ControllerStatus, rh.NextSafeAction} {
		if ans.Shown != "" {
			fmt.Fprintf(w, "  %s\n", ans.Shown)
		}
	}
	if rh.ProductionOverride != "" {
		fmt.Fprintf(w, "  production, with --i-know: %s\n", rh.ProductionOverride)
	}
	if rh.Failure != "" {
		fmt.Fprintf(w, "  why: %s\n", rh.Failure)
	}
}

// PrintRehearsalList prints one line per rehearsal: when, where, which
// drill, its state and how long detection and recovery took.
func PrintRehearsalList(w io.Writer, rs []*rehearsal.Rehearsal) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "no rehearsals yet: relcap rehearse --env ENV --all")
		return
	}
	for _, rh := range rs {
		ttd, ttr := "-", "-"
		if d, ok := rh.TimeToDetect(); ok {
			ttd = d.Round(time.Second).String()
		}
		if d, ok := rh.TimeToRecover(); ok {
			ttr = d.Round(time.Second).String()
		}
		if p := rh.Restore; p != nil {
			fmt.Fprintf(w, "%s  %-10s %-27s %-9s backup %s restore %s prove %s  %s\n",
				rh.StartedAt.UTC().Format(time.RFC3339), rh.Env, rh.Drill, rh.State, p.BackupTook.Round(10*time.Millisecond), p.RestoreTook.Round(10*time.Millisecond), p.ProveTook.Round(10*time.Millisecond), rh.ID)
			continue
		}
		fmt.Fprintf(w, "%s  %-10s %-27s %-9s detect %-6s recover %-6s %s\n",
			rh.StartedAt.UTC().Format(time.RFC3339), rh.Env, rh.Drill, rh.State, ttd, ttr, rh.ID)
	}
}

// PrintRehearsalsStopped says how to continue or undo each rehearsal an
// error stopped before it was done.
func PrintRehearsalsStopped(w io.Writer, records []*rehearsal.Rehearsal) {
	for _, rh := range records {
		if !rh.State.Done() {
			fmt.Fprintf(w, "rehearsal %s stopped at phase %s; continue with: relcap rehearse --resume %s, or undo with: relcap rehearse --cleanup %s\n",
				rh.ID, rh.Phase, rh.ID, rh.ID)
		}
	}
}

// PrintDrillSkipped says that a drill of a --all run did not run, and why.
func PrintDrillSkipped(w io.Writer, s rehearsal.DrillSkipped) {
	fmt.Fprintf(w, "rehearse %s in %s: %s: %v\n", s.Drill, s.Env, s.How, s.Err)
}

// PrintRehearsalOutcome prints the records (the summary, or JSON) and
// maps the session to its error, the same after the screen as headless:
// an error that stopped a drill first, then a failed or abandoned drill,
// then drills that could not run (notRun). After a cleanup (cleanedUp)
// the abandoned drill is said in its record and the session succeeds.
func PrintRehearsalOutcome(out, errw io.Writer, asJSON bool, records []*rehearsal.Rehearsal, runErr, notRun error, cleanedUp bool) error {
	if asJSON {
		if err := WriteJSON(out, records); err != nil {
			return err
		}
	} else {
		for _, rh := range records {
			PrintRehearsal(out, rh)
		}
	}
	if runErr != nil {
		PrintRehearsalsStopped(errw, records)
		return runErr
	}
	if cleanedUp {
		return nil
	}
	if err := rehearsal.Outcome(records); err != nil {
		// A failed drill (4) says more than one that did not run.
		if notRun != nil {
			fmt.Fprintf(errw, "also: %v\n", notRun)
		}
		return err
	}
	return notRun
}
