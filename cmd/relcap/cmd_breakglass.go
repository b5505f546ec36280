package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
)

func (a *app) breakglassCommand() *cobra.Command {
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
	cmd.AddCommand(a.breakglassStartCommand(), a.breakglassStatusCommand(), a.breakglassEndCommand())
	return cmd
}

func (a *app) breakglassService(cmd *cobra.Command, command string) (*workflow.Service, error) {
	p, err := a.loadProject()
	if err != nil {
		return nil, err
	}
	_, repo, err := a.decisionAdapters()
	if err != nil {
		return nil, err
	}
	svc, _, err := a.serviceWith(cmd.Context(), command, "", workflow.Deps{Convergence: a.argoCD(p), EnvRepo: repo, Forges: a.forges()})
	return svc, err
}

func (a *app) breakglassStartCommand() *cobra.Command {
	var req workflow.BreakGlassRequest
	cmd := &cobra.Command{
		Use:   "start --env ENV --reason TEXT --ttl DURATION [--approver NAME]",
		Short: "Pause reconciliation of one application for a hotfix",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.Env == "" {
				return usageError{errors.New("breakglass start wants --env ENV, --reason TEXT and --ttl DURATION")}
			}
			svc, err := a.breakglassService(cmd, "breakglass start")
			if err != nil {
				return err
			}
			b, err := svc.StartBreakGlass(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.flags.json {
				return a.printJSON(b)
			}
			plain.PrintBreakGlassStarted(a.io.Out, b)
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Env, "env", "", "environment whose application to pause")
	cmd.Flags().StringVar(&req.Reason, "reason", "", "what is broken (journaled)")
	cmd.Flags().DurationVar(&req.TTL, "ttl", 0, "how long the pause may last, e.g. 30m")
	cmd.Flags().StringVar(&req.Approver, "approver", "", "who approved it; in production, whose signed break-glass approval (relcap approve --breakglass) counts")
	return cmd
}

func (a *app) breakglassStatusCommand() *cobra.Command {
	var env string
	cmd := &cobra.Command{
		Use:   "status --env ENV",
		Short: "Time left and the live drift of the active break-glass",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if env == "" {
				return usageError{errors.New("breakglass status wants --env ENV")}
			}
			svc, err := a.breakglassService(cmd, "breakglass status")
			if err != nil {
				return err
			}
			st, err := svc.StatusBreakGlass(cmd.Context(), env)
			if err != nil {
				return err
			}
			if a.flags.json {
				return a.printJSON(st)
			}
			plain.PrintBreakGlassStatus(a.io.Out, st)
			return nil
		},
	}
	cmd.Flags().StringVar(&env, "env", "", "environment")
	return cmd
}

func (a *app) breakglassEndCommand() *cobra.Command {
	var env string
	cmd := &cobra.Command{
		Use:   "end --env ENV",
		Short: "Capture the drift as an env-repo change and remove the pause's sync window",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if env == "" {
				return usageError{errors.New("breakglass end wants --env ENV")}
			}
			svc, err := a.breakglassService(cmd, "breakglass end")
			if err != nil {
				return err
			}
			st, change, err := svc.EndBreakGlass(cmd.Context(), env)
			if err != nil {
				return err
			}
			if a.flags.json {
				return a.printJSON(map[string]any{"breakglass": st, "capture": change})
			}
			plain.PrintBreakGlassEnded(a.io.Out, st, change)
			return nil
		},
	}
	cmd.Flags().StringVar(&env, "env", "", "environment")
	return cmd
}
