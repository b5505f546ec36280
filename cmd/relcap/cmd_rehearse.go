package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/tui"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/tui/screen/rehearse"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/rehearsal"
)

func (a *app) rehearseCommand() *cobra.Command {
	var env, drill, iKnow, resume, cleanup string
	var all bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "rehearse --env ENV (--drill NAME | --all) | --resume ID | --cleanup ID",
		Short: "Run recovery drills: inject a failure through relcap's own paths, detect it, recover",
		Long: `rehearse breaks an environment on purpose and recovers it, the way a real
incident would go, and keeps the record: what relcap showed for the intended
revision, the actual artifact, the controller status and the next safe
action, and how long detection and recovery took. Drills:

  unavailable-image           pin a digest that exists in no registry
  failed-readiness            promote rehearsal.unready_image, whose pods never become ready
  interrupted-reconciliation  stop reconciliation mid-rollout (rehearsal.interrupt, else break-glass), resume it
  failed-apply                apply a terraform_data whose local-exec provisioner exits 1, in a scratch
                              copy of the Terraform root seeded with a copy of its state, then destroy it

Each Argo CD drill starts from the release the environment last converged on
(it must be converged on it now) and ends with a rollback to that release.
failed-apply never writes the real state: it reads it (terraform state pull)
into $XDG_STATE_HOME/relcap/rehearsals/ID, plans and applies there through
relcap's plan and apply (approvals.plan applies to both of its plans), and is
refused when the plan would change anything but its own resource. Every drill
holds the environment's promotion lock. A production environment is refused unless
--i-know gives a reason (journaled and signed). A drill that was interrupted
(Ctrl-C, kill -9) is continued with --resume ID or undone with --cleanup ID.

Exit 0 only when every drill passed: detected, named correctly, recovered;
3 when refused or blocked (waiting for a plan approval: approve, then
--resume ID); 4 when a drill failed; 2 when a drill cannot run here (not
configured). --cleanup exits 0 once the environment is back where the drill
found it (the drill itself stays abandoned: it proves nothing).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			modes := 0
			for _, set := range []bool{drill != "" || all, resume != "", cleanup != ""} {
				if set {
					modes++
				}
			}
			switch {
			case modes != 1:
				return usageError{errors.New("rehearse wants one of --env ENV --drill NAME, --env ENV --all, --resume ID or --cleanup ID")}
			case drill != "" && all:
				return usageError{errors.New("rehearse takes --drill NAME or --all, not both")}
			case (drill != "" || all) && env == "":
				return usageError{errors.New("rehearse wants --env ENV")}
			case timeout < 0:
				return usageError{errors.New("--timeout must be positive")}
			}
			var drills []rehearsal.Drill
			if drill != "" {
				d, err := rehearsal.ParseDrill(drill)
				if err != nil {
					return err
				}
				drills = []rehearsal.Drill{d}
			} else if all {
				drills = rehearsal.AllDrills
			}
			p, err := a.loadProject()
			if err != nil {
				return err
			}
			// The watch's own timeout is the longest phase's, so that the
			// phase's bound is what ends a drill that is not detected.
			watchTimeout := timeout
			if watchTimeout == 0 {
				for _, e := range p.Environments {
					watchTimeout = max(watchTimeout, e.Rehearsal.PhaseTimeout())
				}
			}
			svc, journal, err := a.flowService(ctx, "rehearse", "", watchTimeout)
			if err != nil {
				return err
			}
			// The ledger keeps the rehearsals and the Terraform adapter
			// makes the scratch roots (rehearsal.New finds both in svc).
			rehearsals, err := rehearsal.New(rehearsal.Deps{Core: svc, Commands: execCommands{}, Pauser: breakglass.New(svc.Deps())})
			if err != nil {
				return err
			}
			if a.useCockpit() && cleanup == "" {
				// At a terminal the rehearsal screen guides the captain
				// through the same drills; --cleanup stays a command.
				o, err := a.rehearsalScreen(ctx, svc, rehearsals, journal, rehearse.Request{Env: env, Drills: drills, IKnow: iKnow, Timeout: timeout, Resume: resume})
				if err != nil {
					return err
				}
				return a.rehearseOutcome(o.Records, o.RunErr, o.NotRun, false)
			}
			// Masked line by line: a secret split across two of a
			// tool's writes is still caught.
			toolOut, flushToolOut := workflow.ScrubbedLines(a.io.Err, a.secrets)
			defer flushToolOut()
			ctx = workflow.WithToolOutput(ctx, toolOut)
			sink := a.rehearsalSink()
			var records []*rehearsal.Rehearsal
			var runErr, notRun error
			switch {
			case resume != "":
				rh, err := rehearsals.Resume(ctx, resume, sink)
				records, runErr = appendRecord(records, rh), err
			case cleanup != "":
				rh, err := rehearsals.Cleanup(ctx, cleanup, sink)
				records, runErr = appendRecord(records, rh), err
			default:
				for _, d := range drills {
					rh, err := rehearsals.Rehearse(ctx, rehearsal.Request{Env: env, Drill: d, IKnow: iKnow, Timeout: timeout}, sink)
					records = appendRecord(records, rh)
					if err != nil && all && rh == nil && errors.Is(err, workflow.ErrUsage) {
						// Not runnable here (not configured):
						// said, and counted against the run, but the
						// other drills still run.
						fmt.Fprintf(a.io.Err, "rehearse %s in %s: not run: %v\n", d, env, err)
						notRun = errors.Join(notRun, fmt.Errorf("%s not run: %w", d, err))
						continue
					}
					if err != nil && all && rh != nil && rh.State == rehearsal.StateAbandoned && errors.Is(err, workflow.ErrBlocked) {
						// Refused before it changed anything (failed-apply
						// on a root with pending changes): it left nothing
						// behind, so the other drills still run.
						fmt.Fprintf(a.io.Err, "rehearse %s in %s: refused: %v\n", d, env, err)
						notRun = errors.Join(notRun, fmt.Errorf("%s refused: %w", d, err))
						continue
					}
					if err != nil {
						runErr = errors.Join(runErr, err)
						break
					}
				}
			}
			return a.rehearseOutcome(records, runErr, notRun, cleanup != "")
		},
	}
	cmd.Flags().StringVar(&env, "env", "", "environment to drill")
	cmd.Flags().StringVar(&drill, "drill", "", "drill to run: "+drillNames())
	cmd.Flags().BoolVar(&all, "all", false, "run every drill, in order: "+drillNames())
	cmd.Flags().StringVar(&iKnow, "i-know", "", "the reason to drill a production environment (journaled and signed)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "how long each phase (detect, recover) may take (default: rehearsal.timeout, else 4m)")
	cmd.Flags().StringVar(&resume, "resume", "", "continue an interrupted rehearsal from its phase")
	cmd.Flags().StringVar(&cleanup, "cleanup", "", "undo an interrupted rehearsal: back to its baseline, then abandoned")
	cmd.AddCommand(a.rehearseListCommand())
	return cmd
}

// rehearseOutcome prints the records (the summary, or JSON) and maps the
// session to its exit code, the same after the screen as headless: an
// error that stopped a drill first, then a failed or abandoned drill,
// then drills that could not run here.
func (a *app) rehearseOutcome(records []*rehearsal.Rehearsal, runErr, notRun error, cleanedUp bool) error {
	if a.flags.json {
		if err := writeJSON(a.io.Out, records); err != nil {
			return err
		}
	} else {
		for _, rh := range records {
			printRehearsal(a.io.Out, rh)
		}
	}
	if runErr != nil {
		for _, rh := range records {
			if !rh.State.Done() {
				fmt.Fprintf(a.io.Err, "rehearsal %s stopped at phase %s; continue with: relcap rehearse --resume %s, or undo with: relcap rehearse --cleanup %s\n",
					rh.ID, rh.Phase, rh.ID, rh.ID)
			}
		}
		return runErr
	}
	if cleanedUp {
		// The cleanup did its job; the abandoned drill is said in the
		// record printed above, and counts as no pass.
		return nil
	}
	if err := rehearsalOutcome(records); err != nil {
		// A failed drill (4) says more than one that did not run.
		if notRun != nil {
			fmt.Fprintf(a.io.Err, "also: %v\n", notRun)
		}
		return err
	}
	return notRun
}

// rehearsalScreen runs the rehearsal screen, recording it beside the
// session's journal as the cockpit is recorded.
func (a *app) rehearsalScreen(ctx context.Context, svc *workflow.Service, drills *rehearsal.Service, journal *store.FileJournal, req rehearse.Request) (tui.RehearsalOutcome, error) {
	rec, err := journal.StartRecording()
	if err != nil {
		return tui.RehearsalOutcome{}, err
	}
	// Under the screen no child process writes to the terminal: tools
	// reach the journal only.
	svc.SetToolOutput(nil)
	o, runErr := tui.RunRehearsal(ctx, tui.RehearsalOptions{Service: svc, Rehearsals: drills, Request: req, Input: a.io.In, Output: a.screen, Env: a.io.Env,
		Secrets: a.secrets, Record: rec})
	release := ""
	if len(o.Records) > 0 {
		release = o.Records[0].DrillRelease
	}
	return o, errors.Join(runErr, rec.Finish(ctx, release))
}

func (a *app) rehearseListCommand() *cobra.Command {
	var env string
	cmd := &cobra.Command{
		Use:   "list [--env ENV]",
		Short: "List rehearsals, newest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			p, err := a.loadProject()
			if err != nil {
				return err
			}
			if env != "" {
				if _, err := p.Env(env); err != nil {
					return err
				}
			}
			l, err := a.openLedger(ctx)
			if err != nil {
				return err
			}
			rs, err := l.ListRehearsals(ctx, rehearsal.Filter{App: p.App, Env: env})
			if err != nil {
				return err
			}
			if a.flags.json {
				return writeJSON(a.io.Out, rs)
			}
			if len(rs) == 0 {
				fmt.Fprintln(a.io.Out, "no rehearsals yet: relcap rehearse --env ENV --all")
				return nil
			}
			for _, rh := range rs {
				ttd, ttr := "-", "-"
				if d, ok := rh.TimeToDetect(); ok {
					ttd = d.Round(time.Second).String()
				}
				if d, ok := rh.TimeToRecover(); ok {
					ttr = d.Round(time.Second).String()
				}
				fmt.Fprintf(a.io.Out, "%s  %-10s %-27s %-9s detect %-6s recover %-6s %s\n",
					rh.StartedAt.UTC().Format(time.RFC3339), rh.Env, rh.Drill, rh.State, ttd, ttr, rh.ID)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&env, "env", "", "only this environment's")
	return cmd
}

// rehearsalSink shows the drill's releases as they run: one line per
// event on stderr, so that stdout stays the record (--json) or the summary.
func (a *app) rehearsalSink() workflow.EventSink {
	return plain.New(a.io.Err, false).WithToolOutput(a.io.Err).Event
}

func appendRecord(rs []*rehearsal.Rehearsal, rh *rehearsal.Rehearsal) []*rehearsal.Rehearsal {
	if rh == nil {
		return rs
	}
	return append(rs, rh)
}

// rehearsalOutcome is nil when every drill passed, else an error for the
// exit code: a failed drill is "not converged" (4), an abandoned one
// blocked (3).
func rehearsalOutcome(rs []*rehearsal.Rehearsal) error {
	var failed, abandoned []string
	for _, rh := range rs {
		switch rh.State {
		case rehearsal.StateFailed:
			failed = append(failed, fmt.Sprintf("%s (%s): %s", rh.Drill, rh.ID, rh.Failure))
		case rehearsal.StateAbandoned:
			abandoned = append(abandoned, fmt.Sprintf("%s (%s)", rh.Drill, rh.ID))
		}
	}
	switch {
	case len(failed) > 0:
		return fmt.Errorf("%w: drill failed: %s", workflow.ErrNotConverged, strings.Join(failed, "; "))
	case len(abandoned) > 0:
		return fmt.Errorf("%w: rehearsal abandoned, so it proves nothing: %s", workflow.ErrBlocked, strings.Join(abandoned, ", "))
	}
	return nil
}

func printRehearsal(w io.Writer, rh *rehearsal.Rehearsal) {
	fmt.Fprintf(w, "\nrehearsal %s: %s in %s: %s\n", rh.ID, rh.Drill, rh.Env, strings.ToUpper(string(rh.State)))
	at := func(t time.Time) string { return t.UTC().Format("15:04:05") }
	failedApply := rh.Drill == rehearsal.DrillFailedApply
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

func drillNames() string {
	names := make([]string, len(rehearsal.AllDrills))
	for i, d := range rehearsal.AllDrills {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
