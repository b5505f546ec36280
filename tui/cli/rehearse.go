package cli

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/tui/screen/rehearse"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/rehearsal"
	"github.com/relcap/relcap/workflow/tooloutput"
)

// rehearseOptions are relcap rehearse's flags: drills to run in an
// environment, or one rehearsal to resume or clean up.
type rehearseOptions struct {
	f                                  Factory
	Env, Drill, IKnow, Resume, Cleanup string
	All                                bool
	Timeout                            time.Duration
	// Drills are --drill's or --all's, parsed.
	Drills []rehearsal.Drill
}

func newCmdRehearse(f Factory, runF func(context.Context, *rehearseOptions) error) *cobra.Command {
	opts := &rehearseOptions{f: f}
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
  state-restore               back up the Terraform state (state pull), restore it into a scratch copy
                              of the root, and prove it with a plan that changes nothing

Each Argo CD drill starts from the release the environment last converged on
(it must be converged on it now) and ends with a rollback to that release.
failed-apply never writes the real state: it reads it (terraform state pull)
into $XDG_STATE_HOME/relcap/rehearsals/ID, plans and applies there through
relcap's plan and apply (approvals.plan applies to both of its plans), and is
refused when the plan would change anything but its own resource.
state-restore times the back-up, the restore and the proving plan; it is
refused when the root has no state yet or has pending changes (the plan would
prove nothing), and never writes the real state. Every drill
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
			drill, all := opts.Drill, opts.All
			switch {
			case !exactlyOne(drill != "" || all, opts.Resume != "", opts.Cleanup != ""):
				return UsageError{errors.New("rehearse wants one of --env ENV --drill NAME, --env ENV --all, --resume ID or --cleanup ID")}
			case drill != "" && all:
				return UsageError{errors.New("rehearse takes --drill NAME or --all, not both")}
			case (drill != "" || all) && opts.Env == "":
				return UsageError{errors.New("rehearse wants --env ENV")}
			case opts.Timeout < 0:
				return UsageError{errors.New("--timeout must be positive")}
			}
			drills, err := rehearsal.DrillsFor(drill, all)
			if err != nil {
				return err
			}
			opts.Drills = drills
			return runOr(runF, runRehearse)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Env, "env", "", "environment to drill")
	cmd.Flags().StringVar(&opts.Drill, "drill", "", "drill to run: "+rehearsal.DrillNames())
	cmd.Flags().BoolVar(&opts.All, "all", false, "run every drill, in order: "+rehearsal.DrillNames())
	cmd.Flags().StringVar(&opts.IKnow, "i-know", "", "the reason to drill a production environment (journaled and signed)")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 0, "how long each phase (detect, recover) may take (default: rehearsal.timeout, else 4m)")
	cmd.Flags().StringVar(&opts.Resume, "resume", "", "continue an interrupted rehearsal from its phase")
	cmd.Flags().StringVar(&opts.Cleanup, "cleanup", "", "undo an interrupted rehearsal: back to its baseline, then abandoned")
	cmd.AddCommand(newCmdRehearseList(f, nil))
	return cmd
}

// runRehearse runs the drills (at a terminal, on the rehearsal screen), or
// resumes or cleans up one rehearsal, and maps the records to the exit code.
func runRehearse(ctx context.Context, opts *rehearseOptions) error {
	a := opts.f
	p, err := a.LoadProject()
	if err != nil {
		return err
	}
	svc, journal, err := flowService(a, ctx, "rehearse", "", rehearsal.WatchTimeout(p, opts.Timeout))
	if err != nil {
		return err
	}
	drills, err := a.Rehearsals(svc)
	if err != nil {
		return err
	}
	if useCockpit(a) && opts.Cleanup == "" {
		// At a terminal the rehearsal screen guides the captain
		// through the same drills; --cleanup stays a command.
		o, err := rehearsalScreen(a, ctx, svc, drills, journal, rehearse.Request{Env: opts.Env, Drills: opts.Drills, IKnow: opts.IKnow, Timeout: opts.Timeout, Resume: opts.Resume})
		if err != nil {
			return err
		}
		return plain.PrintRehearsalOutcome(a.IO().Out, a.IO().Err, a.Flags().JSON, o.Records, o.RunErr, o.NotRun, false)
	}
	// Masked line by line: a secret split across two of a
	// tool's writes is still caught.
	toolOut, flushToolOut := tooloutput.Scrubbed(a.IO().Err, a.Secrets())
	defer flushToolOut()
	ctx = tooloutput.With(ctx, toolOut)
	sink := commandEvents(a)
	var records []*rehearsal.Rehearsal
	var runErr, notRun error
	switch {
	case opts.Resume != "":
		rh, err := drills.Resume(ctx, opts.Resume, sink)
		records, runErr = rehearsal.Append(records, rh), err
	case opts.Cleanup != "":
		rh, err := drills.Cleanup(ctx, opts.Cleanup, sink)
		records, runErr = rehearsal.Append(records, rh), err
	default:
		records, runErr, notRun = drills.RehearseDrills(ctx, rehearsal.DrillsRequest{Env: opts.Env, Drills: opts.Drills, All: opts.All, IKnow: opts.IKnow, Timeout: opts.Timeout,
			Skipped: func(s rehearsal.DrillSkipped) { plain.PrintDrillSkipped(a.IO().Err, s) }}, sink)
	}
	return plain.PrintRehearsalOutcome(a.IO().Out, a.IO().Err, a.Flags().JSON, records, runErr, notRun, opts.Cleanup != "")
}

// rehearsalScreen runs the rehearsal screen, recording it beside the
// session's journal as the cockpit is recorded.
func rehearsalScreen(a Factory, ctx context.Context, svc *workflow.Service, drills *rehearsal.Service, journal Session, req rehearse.Request) (tui.RehearsalOutcome, error) {
	rec, err := journal.StartRecording()
	if err != nil {
		return tui.RehearsalOutcome{}, err
	}
	// Under the screen no child process writes to the terminal: tools
	// reach the journal only.
	svc.SetToolOutput(nil)
	o, runErr := tui.RunRehearsal(ctx, tui.RehearsalOptions{Service: svc, Rehearsals: drills, Request: req, Input: a.IO().In, Output: a.Screen(), Env: a.IO().Env,
		Secrets: a.Secrets(), Record: rec})
	release := ""
	if len(o.Records) > 0 {
		release = o.Records[0].DrillRelease
	}
	return o, errors.Join(runErr, rec.Finish(ctx, release))
}

// rehearseListOptions are relcap rehearse list's flags.
type rehearseListOptions struct {
	f   Factory
	Env string
}

func newCmdRehearseList(f Factory, runF func(context.Context, *rehearseListOptions) error) *cobra.Command {
	opts := &rehearseListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list [--env ENV]",
		Short: "List rehearsals, newest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOr(runF, runRehearseList)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Env, "env", "", "only this environment's")
	return cmd
}

// runRehearseList lists the project's rehearsals, newest first.
func runRehearseList(ctx context.Context, opts *rehearseListOptions) error {
	a, env := opts.f, opts.Env
	p, err := a.LoadProject()
	if err != nil {
		return err
	}
	if env != "" {
		if _, err := p.Env(env); err != nil {
			return err
		}
	}
	l, err := a.Ledger(ctx)
	if err != nil {
		return err
	}
	rs, err := l.ListRehearsals(ctx, rehearsal.Filter{App: p.App, Env: env})
	if err != nil {
		return err
	}
	if a.Flags().JSON {
		return printJSON(a, rs)
	}
	plain.PrintRehearsalList(a.IO().Out, rs)
	return nil
}
