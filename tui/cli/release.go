package cli

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/effort"
)

// releaseOptions are relcap release's flags.
type releaseOptions struct {
	f                            Factory
	Env, Image                   string
	Schema, MinSchema, MaxSchema int
	// SchemaGiven: one of the schema flags was given.
	SchemaGiven bool
	Timeout     time.Duration
}

func newCmdRelease(f Factory, runF func(context.Context, *releaseOptions) error) *cobra.Command {
	opts := &releaseOptions{f: f}
	cmd := &cobra.Command{
		Use:   "release --env ENV --image REF",
		Short: "The guided flow: ownership → plan review → promotion → convergence (resumable)",
		Long: `release walks one environment's release through the four stages: the
ownership check, the plan review (apply only when approved and current), the
digest promotion and the convergence watch. Every step is persisted, so a
release stopped for an approval, interrupted or killed continues with
relcap resume ID without repeating anything it already did.

--schema records the data-schema version this release writes (and
--min-schema/--max-schema the range it can run against), so a later rollback
to an incompatible release is refused.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Env == "" || opts.Image == "" {
				return UsageError{errors.New("release wants --env ENV and --image REF")}
			}
			opts.SchemaGiven = cmd.Flags().Changed("schema") || cmd.Flags().Changed("min-schema") || cmd.Flags().Changed("max-schema")
			if opts.SchemaGiven && (opts.Schema < 0 || opts.MinSchema < 0 || opts.MaxSchema < 0 || (opts.MaxSchema > 0 && opts.MinSchema > opts.MaxSchema)) {
				return UsageError{errors.New("--schema, --min-schema and --max-schema want versions ≥ 0 with min ≤ max")}
			}
			return runOr(runF, runRelease)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Env, "env", "", "environment to release to")
	cmd.Flags().StringVar(&opts.Image, "image", "", "image reference (tag or digest)")
	cmd.Flags().IntVar(&opts.Schema, "schema", 0, "data-schema version this release writes")
	cmd.Flags().IntVar(&opts.MinSchema, "min-schema", 0, "lowest data-schema version it can run against")
	cmd.Flags().IntVar(&opts.MaxSchema, "max-schema", 0, "highest data-schema version it can run against")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 10*time.Minute, "how long to wait for convergence")
	cmd.AddCommand(newCmdReleaseAbandon(f, nil))
	return cmd
}

// runRelease starts a release and drives it.
func runRelease(ctx context.Context, opts *releaseOptions) error {
	a := opts.f
	svc, session, err := flowService(a, ctx, "release", "", opts.Timeout)
	if err != nil {
		return err
	}
	measureRelease(a, svc)
	req := workflow.StartRequest{Env: opts.Env, Image: opts.Image}
	if opts.SchemaGiven {
		req.Compatibility = &workflow.Compatibility{Schema: opts.Schema, MinSchema: opts.MinSchema, MaxSchema: opts.MaxSchema}
	}
	r, err := svc.Start(ctx, req)
	if err != nil {
		return err
	}
	// The cockpit names the release on its own screen; a line printed
	// before it would only flash under it.
	if !a.Flags().JSON && !useCockpit(a) {
		plain.PrintReleaseStarted(a.IO().Out, r.ID, opts.Image, opts.Env)
	}
	return driveRelease(a, ctx, svc, session, r.ID)
}

// resumeOptions are relcap resume's argument and flags.
type resumeOptions struct {
	f         Factory
	ReleaseID string
	Timeout   time.Duration
}

func newCmdResume(f Factory, runF func(context.Context, *resumeOptions) error) *cobra.Command {
	opts := &resumeOptions{f: f}
	cmd := &cobra.Command{
		Use:   "resume RELEASE",
		Short: "Continue a release where it stopped (approval, interruption, crash)",
		Args:  exactArgs(1, "one release ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ReleaseID = args[0]
			return runOr(runF, runResume)(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 10*time.Minute, "how long to wait for convergence")
	return cmd
}

// runResume continues a release where it stopped.
func runResume(ctx context.Context, opts *resumeOptions) error {
	a, id := opts.f, opts.ReleaseID
	// What the release still needs from a person is said before a session
	// opens, and the release stays as it was. (That it exists was checked
	// with every release a command line names: checkReferences.)
	if q, err := a.Records(ctx); err != nil {
		return err
	} else if r, err := q.Release(ctx, id); err != nil {
		return err
	} else if cur, ok := r.Current(); ok && !r.Status.Done() {
		if err := r.MissingInput(cur); err != nil {
			return err
		}
	}
	svc, session, err := flowService(a, ctx, "resume", id, opts.Timeout)
	if err != nil {
		return err
	}
	measureRelease(a, svc)
	return driveRelease(a, ctx, svc, session, id)
}

// convergeOptions are relcap converge's flags.
type convergeOptions struct {
	f                        Factory
	Env, ReleaseID, Revision string
	Timeout                  time.Duration
}

func newCmdConverge(f Factory, runF func(context.Context, *convergeOptions) error) *cobra.Command {
	opts := &convergeOptions{f: f}
	cmd := &cobra.Command{
		Use:   "converge --env ENV [--release ID] [--revision SHA] [--timeout D]",
		Short: "Watch Argo CD until the promoted digest is synced, healthy and running (exit 4 if not)",
		Long: `converge waits until Argo CD reports the application Synced at the intended
revision, the last operation Succeeded, the application Healthy and the live
images equal to the promoted digest. Sync and health are judged separately;
a failed sync, a Degraded application, an image that cannot be pulled or a
Pod that never becomes ready stops the watch at once with the next safe
action. Without --release it takes the latest promotion into ENV; with
--revision it checks that commit and the digest the environment repo pins.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Env == "" {
				return UsageError{errors.New("converge wants --env ENV")}
			}
			return runOr(runF, runConverge)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Env, "env", "", "environment to watch")
	cmd.Flags().StringVar(&opts.ReleaseID, "release", "", "release to converge (default: the latest promotion into ENV)")
	cmd.Flags().StringVar(&opts.Revision, "revision", "", "environment-repo commit Argo CD must be synced at")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 10*time.Minute, "how long to wait")
	return cmd
}

// runConverge watches the release's convergence, or one revision's.
func runConverge(ctx context.Context, opts *convergeOptions) error {
	a, releaseID := opts.f, opts.ReleaseID
	if opts.Revision != "" {
		return convergeRevision(a, ctx, opts.Env, opts.Revision, opts.Timeout)
	}
	svc, session, err := flowService(a, ctx, "converge", releaseID, opts.Timeout)
	if err != nil {
		return err
	}
	a.Measure(svc, workflow.StepConvergence.String(), effort.RoleCaptain)
	if releaseID == "" {
		r, err := svc.Records().AwaitingConvergence(ctx, opts.Env)
		if err != nil {
			return err
		}
		releaseID = r.ID
	}
	return driveRelease(a, ctx, svc, session, releaseID)
}

// convergeRevision watches env's application for one revision outside any
// release, with the digest the environment repo pins now.
func convergeRevision(a Factory, ctx context.Context, env, revision string, timeout time.Duration) error {
	if _, err := a.LoadProject(); err != nil {
		return err
	}
	svc, _, err := a.Service(ctx, ServiceRequest{Command: "converge", Needs: NeedEnvRepo | NeedConvergence, ConvergeTimeout: timeout})
	if err != nil {
		return err
	}
	printer := plain.New(a.IO().Out, a.Flags().JSON)
	res, err := svc.ConvergeRevision(ctx, env, revision, func(s appstate.AppState) {
		printer.Event(workflow.Event{Time: a.Clock().Now(), Kind: workflow.EventAppState, Step: workflow.StepConvergence, App: &s})
	})
	if err != nil {
		return err
	}
	plain.PrintRevisionConverged(a.IO().Out, revision, res)
	return nil
}
