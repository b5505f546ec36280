package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/breakglass"
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
policy. An expired break-glass is reported by every command until ended.`,
	}
	cmd.AddCommand(a.breakglassStartCommand(), a.breakglassStatusCommand(), a.breakglassEndCommand())
	return cmd
}

func (a *app) breakglassService(cmd *cobra.Command, command string) (*breakglass.Service, error) {
	p, err := a.loadProject()
	if err != nil {
		return nil, err
	}
	_, repo, err := a.decisionAdapters()
	if err != nil {
		return nil, err
	}
	svc, _, err := a.serviceWith(cmd.Context(), command, "", workflow.Deps{Convergence: a.argoCD(p), EnvRepo: repo, Forges: a.forges()})
	if err != nil {
		return nil, err
	}
	return breakglass.New(svc.Deps()), nil
}

func (a *app) breakglassStartCommand() *cobra.Command {
	var req breakglass.Request
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
			b, err := svc.Start(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.flags.json {
				return a.printJSON(b)
			}
			fmt.Fprintf(a.io.Out, "break-glass %s: reconciliation of %s paused until %s by a %s\n", b.ID, b.App, b.ExpiresAt.UTC().Format(time.RFC3339), b.Window)
			if b.Approver != "" {
				fmt.Fprintf(a.io.Out, "approved by %s\n", b.Approver)
			}
			fmt.Fprintf(a.io.Out, "argo cd resumes automated sync and self-heal by itself then (self-heal puts Git's state back);\nend it sooner, capturing the drift for review, with: relcap breakglass end --env %s\n", b.Env)
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
			st, err := svc.Status(cmd.Context(), env)
			if err != nil {
				return err
			}
			if a.flags.json {
				return a.printJSON(st)
			}
			left := "EXPIRED " + (-st.Left).Round(time.Second).String() + " ago"
			if st.Left > 0 {
				left = st.Left.Round(time.Second).String() + " left"
			}
			fmt.Fprintf(a.io.Out, "break-glass %s on %s by %s: %s\nreason: %s\n", st.ID, st.App, st.Actor, left, st.Reason)
			fmt.Fprintln(a.io.Out, pauseLine(st))
			if len(st.Drift) == 0 {
				fmt.Fprintln(a.io.Out, "no drift: the live state matches Git")
			}
			for _, d := range st.Drift {
				fmt.Fprintf(a.io.Out, "drifted: %s/%s %s/%s\n", d.Group, d.Kind, d.Namespace, d.Name)
			}
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
			st, change, err := svc.End(cmd.Context(), env)
			if err != nil {
				return err
			}
			if a.flags.json {
				return a.printJSON(map[string]any{"breakglass": st, "capture": change})
			}
			if change.Branch != "" {
				fmt.Fprintf(a.io.Out, "captured %d drifted resource(s) on branch %s (%s) for review\n", len(st.Drift), change.Branch, workflow.ShortHash(change.Commit))
			} else {
				fmt.Fprintln(a.io.Out, "no drift to capture")
			}
			if st.Window != nil {
				fmt.Fprintf(a.io.Out, "break-glass %s ended: its sync window is removed and argo cd reconciles %s again\n", st.ID, st.App)
			} else {
				fmt.Fprintf(a.io.Out, "break-glass %s ended: %s sync policy restored to %s\n", st.ID, st.App, st.SavedPolicy)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&env, "env", "", "environment")
	return cmd
}

// warnExpiredBreakGlass makes an expired break-glass loud in every command
// that has a project and a ledger, until it is ended.
func (a *app) warnExpiredBreakGlass(cmd *cobra.Command) {
	p, err := a.loadProject()
	if err != nil || len(p.Environments) == 0 {
		return
	}
	if !a.ledgerExists() {
		return // no ledger yet, so no break-glass either; do not create one
	}
	l, err := a.openLedger(cmd.Context())
	if err != nil {
		return
	}
	expired, err := breakglass.New(workflow.Deps{Project: p, Ledger: l, Clock: a.clock}).Expired(cmd.Context())
	if err != nil {
		return
	}
	for _, b := range expired {
		ago := a.clock.Now().Sub(b.ExpiresAt).Round(time.Second)
		if b.SelfEnding() {
			fmt.Fprintf(a.io.Err, "WARNING: break-glass %s in %s expired %s ago: argo cd resumed reconciling %s when its window closed; capture what drift is left and close the record with: relcap breakglass end --env %s\n",
				b.ID, b.Env, ago, b.App, b.Env)
			continue
		}
		fmt.Fprintf(a.io.Err, "WARNING: break-glass %s in %s expired %s ago and %s is still not reconciling: relcap breakglass end --env %s\n",
			b.ID, b.Env, ago, b.App, b.Env)
	}
}

// pauseLine says what holds a break-glass's pause now.
func pauseLine(st breakglass.Status) string {
	switch {
	case st.Window == nil:
		return fmt.Sprintf("paused: automated sync is off until end restores %s", st.SavedPolicy)
	case st.WindowRemoved:
		return "not paused: the sync window closed and relcap removed it; argo cd reconciles again"
	case st.Held == nil:
		return fmt.Sprintf("NOT PAUSED: the %s is gone from the project (removed by hand?); argo cd reconciles again", st.Window)
	case st.Held.Active:
		return fmt.Sprintf("paused by the %s, active", st.Held)
	}
	return fmt.Sprintf("not paused: the %s has closed; argo cd reconciles again", st.Held)
}
