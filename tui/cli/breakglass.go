package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/breakglass"
)

func newCmdBreakGlass(a Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "breakglass",
		Short: "Audited, time-boxed pause of reconciliation for one application",
		Long: `breakglass pauses Argo CD's automated sync and self-heal for exactly one
environment's application, so an emergency hotfix survives: start adds a deny
sync window for that application alone to its Argo CD project, open from now
until the time box ends, when Argo CD resumes reconciliation by itself (and
self-heal puts Git's state back) even if nobody runs relcap again. Manual
syncs stay allowed. In a production environment start needs a second person's
signed approval (relcap approve --breakglass, then --approver NAME). It is
journaled with who, why, who approved and until when.

end captures the live drift as an environment-repo branch for review and
removes the window. status, start and end also remove relcap's windows whose
time box has ended (a window's schedule would open it again a year later).
A break-glass recorded before sync windows ends by restoring its saved sync
policy. An expired break-glass is reported by every command that records a session
until it is ended.`,
	}
	cmd.AddCommand(newCmdBreakGlassStart(a, nil), newCmdBreakGlassStatus(a, nil), newCmdBreakGlassEnd(a, nil))
	return cmd
}

// breakglassService wires the Argo CD pool, the environment repository and
// the forges for a break-glass command.
func breakglassService(a Factory, ctx context.Context, command string) (*breakglass.Service, error) {
	if _, err := a.LoadProject(); err != nil {
		return nil, err
	}
	svc, _, err := a.Service(ctx, ServiceRequest{Command: command, Needs: NeedConvergence | NeedEnvRepo | NeedForges})
	if err != nil {
		return nil, err
	}
	return breakglass.New(svc.Deps()), nil
}

// breakglassStartOptions are relcap breakglass start's flags.
type breakglassStartOptions struct {
	f   Factory
	Req breakglass.Request
}

func newCmdBreakGlassStart(f Factory, runF func(context.Context, *breakglassStartOptions) error) *cobra.Command {
	opts := &breakglassStartOptions{f: f}
	cmd := &cobra.Command{
		Use:   "start --env ENV --reason TEXT --ttl DURATION [--approver NAME]",
		Short: "Pause reconciliation of one application for a hotfix",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Req.Env == "" {
				return UsageError{errors.New("breakglass start wants --env ENV, --reason TEXT and --ttl DURATION")}
			}
			return runOr(runF, runBreakGlassStart)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Req.Env, "env", "", "environment whose application to pause")
	cmd.Flags().StringVar(&opts.Req.Reason, "reason", "", "what is broken (journaled)")
	cmd.Flags().DurationVar(&opts.Req.TTL, "ttl", 0, "how long the pause may last, e.g. 30m")
	cmd.Flags().StringVar(&opts.Req.Approver, "approver", "", "who approved it; in production, whose signed break-glass approval (relcap approve --breakglass) counts")
	return cmd
}

func runBreakGlassStart(ctx context.Context, opts *breakglassStartOptions) error {
	a := opts.f
	svc, err := breakglassService(a, ctx, "breakglass start")
	if err != nil {
		return err
	}
	b, err := svc.Start(ctx, opts.Req)
	if err != nil {
		return err
	}
	if a.Flags().JSON {
		return printJSON(a, b)
	}
	plain.PrintBreakGlassStarted(a.IO().Out, b)
	return nil
}

// breakglassEnvOptions are the flags of breakglass status and end.
type breakglassEnvOptions struct {
	f   Factory
	Env string
}

func newCmdBreakGlassStatus(f Factory, runF func(context.Context, *breakglassEnvOptions) error) *cobra.Command {
	opts := &breakglassEnvOptions{f: f}
	cmd := &cobra.Command{
		Use:   "status --env ENV",
		Short: "Time left and the live drift of the active break-glass",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Env == "" {
				return UsageError{errors.New("breakglass status wants --env ENV")}
			}
			return runOr(runF, runBreakGlassStatus)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Env, "env", "", "environment")
	return cmd
}

func runBreakGlassStatus(ctx context.Context, opts *breakglassEnvOptions) error {
	a := opts.f
	svc, err := breakglassService(a, ctx, "breakglass status")
	if err != nil {
		return err
	}
	st, err := svc.Status(ctx, opts.Env)
	if err != nil {
		return err
	}
	if a.Flags().JSON {
		return printJSON(a, st)
	}
	plain.PrintBreakGlassStatus(a.IO().Out, st)
	return nil
}

func newCmdBreakGlassEnd(f Factory, runF func(context.Context, *breakglassEnvOptions) error) *cobra.Command {
	opts := &breakglassEnvOptions{f: f}
	cmd := &cobra.Command{
		Use:   "end --env ENV",
		Short: "Capture the drift as an env-repo change and remove the pause's sync window",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Env == "" {
				return UsageError{errors.New("breakglass end wants --env ENV")}
			}
			return runOr(runF, runBreakGlassEnd)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Env, "env", "", "environment")
	return cmd
}

func runBreakGlassEnd(ctx context.Context, opts *breakglassEnvOptions) error {
	a := opts.f
	svc, err := breakglassService(a, ctx, "breakglass end")
	if err != nil {
		return err
	}
	st, change, err := svc.End(ctx, opts.Env)
	if err != nil {
		return err
	}
	if a.Flags().JSON {
		return printJSON(a, map[string]any{"breakglass": st, "capture": change})
	}
	plain.PrintBreakGlassEnded(a.IO().Out, st, change)
	return nil
}
