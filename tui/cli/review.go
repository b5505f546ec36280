package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// reviewOptions are relcap review's flags: one plan or one release.
type reviewOptions struct {
	f                      Factory
	Fingerprint, ReleaseID string
}

func newCmdReview(f Factory, runF func(context.Context, *reviewOptions) error) *cobra.Command {
	opts := &reviewOptions{f: f}
	cmd := &cobra.Command{
		Use:   "review --plan FINGERPRINT | --release ID",
		Short: "An approver's review screen: the plan or the pinned change, read-only; a approves (signed)",
		Long: `review opens, at your terminal, the screen the captain sees for one
release's plan (--plan, the fingerprint relcap plan printed) or its pinned
environment-repository change (--release): every change and its risks, the
approvals so far, the diff. Nothing runs from here. a approves as you, signed
with your key, exactly as relcap approve does; q closes. The captain's release
continues by itself once the approvals are in.

The time you spend reading is your effort on that release (the approver's,
on plan review or promotion), measured as in the cockpit: key presses, mouse
and terminal focus, within the idle threshold, nothing while the terminal is
unfocused. The screen is recorded in your session, like the cockpit.`,
		Example: `  relcap review --plan 3f1c…e9 --actor bob
  relcap review --release web-prod-20261201-1a2b3c`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (opts.Fingerprint == "") == (opts.ReleaseID == "") {
				return UsageError{errors.New("review wants exactly one of --plan FINGERPRINT or --release ID")}
			}
			if !useCockpit(f) {
				return UsageError{errors.New("review is a screen and needs a terminal; from a script, relcap approve --plan FP or --release ID records the same approval")}
			}
			return runOr(runF, runReview)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Fingerprint, "plan", "", "the fingerprint of the plan to review")
	cmd.Flags().StringVar(&opts.ReleaseID, "release", "", "the release whose pinned change to review")
	return cmd
}

// runReview opens the approver's review screen on the plan or the release,
// recorded in the reviewer's session.
func runReview(ctx context.Context, opts *reviewOptions) error {
	a, fingerprint, releaseID := opts.f, opts.Fingerprint, opts.ReleaseID
	if _, err := a.LoadProject(); err != nil {
		return err
	}
	svc, journal, err := a.Service(ctx, ServiceRequest{Command: "review", ReleaseID: releaseID})
	if err != nil {
		return err
	}
	target, id := tui.ReviewPromotion, releaseID
	if fingerprint != "" {
		target = tui.ReviewPlan
		r, err := workflow.ReleaseUnderReview(ctx, svc.Records(), fingerprint)
		if err != nil {
			return err
		}
		id = r.ID
	} else if _, err := svc.Records().Release(ctx, releaseID); errors.Is(err, fault.ErrNotFound) {
		return fmt.Errorf("%w: no release %s in the ledger", fault.ErrUsage, releaseID)
	} else if err != nil {
		return err
	}
	rec, err := journal.StartRecording()
	if err != nil {
		return err
	}
	runErr := tui.Run(ctx, tui.Options{Service: svc, ReleaseID: id, Review: target, Input: a.IO().In, Output: a.Screen(), Env: a.IO().Env, Secrets: a.Secrets(), Record: rec})
	return errors.Join(runErr, rec.Finish(ctx, id))
}
