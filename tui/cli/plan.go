package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/unlock"
)

// planOptions are relcap plan's flags.
type planOptions struct {
	f                        Factory
	Env, FromJSON, ReleaseID string
}

func newCmdPlan(f Factory, runF func(context.Context, *planOptions) error) *cobra.Command {
	opts := &planOptions{f: f}
	cmd := &cobra.Command{
		Use:   "plan --env ENV [--release ID] | --from-json FILE",
		Short: "Make a saved Terraform plan, review it and print its fingerprint",
		Long: `plan takes the environment's release (the one named with --release, the
open one, or a new one, as it says) through the ownership check, if that has
not run, and plan review: terraform init (with the committed dependency lock
file) and plan -out into relcap's private plan store, then the review of the
saved plan: counts, every change with its risk flags (destructive, identity,
data-service), the attributes forcing replacement, output changes. The
fingerprint binds approvals to exactly this plan file, revision, lock file,
var files, workspace and prior state. Terraform's own progress goes to
stderr.

With --from-json it reviews an existing "terraform show -json" document (what a
CI job uploads) without running Terraform, and belongs to no release.`,
		Example: `  relcap plan --env staging
  relcap plan --env staging --release web-staging-20261201-1a2b3c
  relcap plan --from-json plan.json --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (opts.Env == "") == (opts.FromJSON == "") {
				return UsageError{errors.New("plan wants exactly one of --env ENV or --from-json FILE")}
			}
			return runOr(runF, runPlan)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Env, "env", "", "environment to plan (from relcap.yaml)")
	cmd.Flags().StringVar(&opts.ReleaseID, "release", "", "release to plan for (default: the environment's open release, or a new one)")
	cmd.Flags().StringVar(&opts.FromJSON, "from-json", "", `review a "terraform show -json" document instead of planning`)
	return cmd
}

// runPlan plans and reviews the environment's release, or reviews a plan
// document (--from-json).
func runPlan(ctx context.Context, opts *planOptions) error {
	a, env, releaseID := opts.f, opts.Env, opts.ReleaseID
	if opts.FromJSON != "" {
		return reviewPlanDocument(a, opts.FromJSON, env)
	}
	p, err := a.LoadProject()
	if err != nil {
		return err
	}
	if removed, err := a.PurgeExpiredPlans(p); err != nil {
		fmt.Fprintln(a.IO().Err, "warning: "+err.Error())
	} else {
		plain.PrintPurged(a.IO().Err, removed, "")
	}
	svc, _, err := flowService(a, ctx, "plan", releaseID, 0)
	if err != nil {
		return err
	}
	a.Measure(svc, workflow.StepPlanReview.String(), effort.RoleCaptain)
	if err := purgeSharedPlans(a, ctx, p); err != nil {
		return err
	}
	out, err := svc.PlanRelease(ctx, workflow.OpenRequest{Env: env, ReleaseID: releaseID}, commandEvents(a))
	if out.Release != nil {
		fmt.Fprintln(a.IO().Err, out.Describe())
	}
	if err != nil && out.Refused == "" {
		return err
	}
	if a.Flags().JSON {
		return errors.Join(printJSON(a, planJSON{Summary: out.Plan, Release: out.Release.ID}), err)
	}
	if perr := plain.PrintPlan(a.IO().Out, out.Plan); perr != nil {
		return perr
	}
	if plain.PrintPlanOutcome(a.IO().Out, out) {
		return SilentError{ExitBlocked}
	}
	return nil
}

// purgeSharedPlans deletes the team store's expired plans, as expired
// plan files are deleted here, or warns that plans stay on this machine.
func purgeSharedPlans(a Factory, ctx context.Context, p *workflow.Project) error {
	v, notShared, err := a.SharedPlans(ctx, p, "plan")
	if notShared {
		fmt.Fprintln(a.IO().Err, "warning: plans are not shared in the team store: relcap.yaml names no people file (people:) whose keys they would be encrypted to, so only this machine can apply them")
		return nil
	}
	if err != nil || v == nil {
		return err
	}
	if gone, err := v.Purge(ctx); err != nil {
		fmt.Fprintln(a.IO().Err, "warning: "+err.Error())
	} else {
		plain.PrintPurged(a.IO().Err, len(gone), v.Where())
	}
	return nil
}

// planJSON is relcap plan --json: the reviewed plan and its release.
type planJSON struct {
	tfplan.Summary
	Release string `json:"release"`
}

// reviewPlanDocument reviews a plan JSON document; relcap.yaml is used for
// the classification rules when there is one.
func reviewPlanDocument(a Factory, path, env string) error {
	p, err := a.ProjectIfAny()
	if err != nil {
		return err
	}
	classify, own := p.PlanDocumentRules()
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", fault.ErrUsage, err)
	}
	defer f.Close()
	facts, err := a.ReadPlanDocument(f, env)
	if err != nil {
		return err
	}
	review := tfplan.ReviewPlan(facts, classify)
	refused := tfplan.ReviewDocument(&review, own)
	if a.Flags().JSON {
		return errors.Join(printJSON(a, review), refused)
	}
	return errors.Join(plain.PrintPlan(a.IO().Out, review), refused)
}

// approveOptions are relcap approve's flags: one plan, one release, or
// one break-glass.
type approveOptions struct {
	f                                            Factory
	Fingerprint, ReleaseID, Comment, Env, Reason string
	BreakGlass                                   bool
	TTL                                          time.Duration
}

func newCmdApprove(f Factory, runF func(context.Context, *approveOptions) error) *cobra.Command {
	opts := &approveOptions{f: f}
	cmd := &cobra.Command{
		Use:   "approve --plan FINGERPRINT | --release ID | --breakglass --env ENV --ttl DURATION --reason TEXT",
		Short: "Approve exactly one plan (by fingerprint), one release's promotion, or a break-glass in production",
		Long: `approve records who approved which exact plan fingerprint (or which release's
promotion) and when. An approval never counts for another fingerprint, and in
an environment with approvals.distinct_from_author the author cannot approve
their own plan (exit 3).

approve --breakglass signs your approval of a break-glass in a production
environment: its application may have reconciliation paused for up to --ttl,
for --reason. It lets someone else start one break-glass within ` + breakglass.ApprovalValidity.String() + `
(relcap breakglass start --env ENV --ttl D --approver YOU), checked against the
people file when it is used.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case !exactlyOne(opts.Fingerprint != "", opts.ReleaseID != "", opts.BreakGlass):
				return UsageError{errors.New("approve wants exactly one of --plan FINGERPRINT, --release ID or --breakglass")}
			case opts.BreakGlass && (opts.Env == "" || opts.TTL == 0):
				return UsageError{errors.New("approve --breakglass wants --env ENV, --ttl DURATION and --reason TEXT")}
			case !opts.BreakGlass && (opts.Env != "" || opts.TTL != 0 || opts.Reason != ""):
				return UsageError{errors.New("--env, --ttl and --reason go with approve --breakglass")}
			}
			return runOr(runF, runApprove)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Fingerprint, "plan", "", "fingerprint printed by relcap plan")
	cmd.Flags().StringVar(&opts.ReleaseID, "release", "", "release whose promotion to approve")
	cmd.Flags().StringVar(&opts.Comment, "comment", "", "what you checked")
	cmd.Flags().BoolVar(&opts.BreakGlass, "breakglass", false, "approve a break-glass of --env's application (production)")
	cmd.Flags().StringVar(&opts.Env, "env", "", "with --breakglass: the production environment")
	cmd.Flags().DurationVar(&opts.TTL, "ttl", 0, "with --breakglass: the longest pause you approve, e.g. 30m")
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "with --breakglass: what the pause is for (signed)")
	return cmd
}

// runApprove records the signed approval of one plan, release or
// break-glass.
func runApprove(ctx context.Context, opts *approveOptions) error {
	a := opts.f
	if _, err := a.LoadProject(); err != nil {
		return err
	}
	svc, _, err := a.Service(ctx, ServiceRequest{Command: "approve", ReleaseID: opts.ReleaseID})
	if err != nil {
		return err
	}
	if opts.ReleaseID != "" {
		a.Measure(svc, workflow.StepPromotion.String(), effort.RoleApprover)
	} else {
		a.Measure(svc, workflow.StepPlanReview.String(), effort.RoleApprover)
	}
	var approved approval.Approval
	var check approval.Check
	switch {
	case opts.Fingerprint != "":
		approved, check, err = svc.ApprovePlan(ctx, opts.Fingerprint, opts.Comment)
	case opts.ReleaseID != "":
		approved, check, err = svc.ApproveRelease(ctx, opts.ReleaseID, opts.Comment)
	default:
		reason := opts.Reason
		if reason == "" {
			reason = opts.Comment
		}
		approved, check, err = svc.ApproveBreakGlass(ctx, opts.Env, opts.TTL, reason)
	}
	if err != nil {
		return err
	}
	if a.Flags().JSON {
		return printJSON(a, plain.ApprovalDocument(approved, check))
	}
	plain.PrintApproval(a.IO().Out, a.IO().Err, approved, check)
	return nil
}

// applyOptions are relcap apply's flags.
type applyOptions struct {
	f           Factory
	Fingerprint string
}

func newCmdApply(f Factory, runF func(context.Context, *applyOptions) error) *cobra.Command {
	opts := &applyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "apply --plan FINGERPRINT",
		Short: "Apply exactly the saved plan with this fingerprint, if approved and not stale",
		Long: `apply runs terraform apply on exactly the saved plan file named by the
fingerprint, only when the file is unchanged, the required approvals exist,
and the revision, lock file, var files, workspace and state are the ones it
was planned from; otherwise it exits 3 saying what changed. State locking is
never disabled. Ctrl-C interrupts Terraform gracefully and waits for it.

With approvers.apply set for the environment, only those principals may apply.
With a PostgreSQL ledger, a plan made on another machine is fetched from the
team store and decrypted with your private key file (RELCAP_SIGNING_KEY or
git's user.signingkey; ssh-agent cannot decrypt; a protected key's passphrase
is asked at the terminal or read from RELCAP_SSH_PASSPHRASE), checked to be the
reviewed plan, and applied.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Fingerprint == "" {
				return UsageError{errors.New("apply wants --plan FINGERPRINT (printed by relcap plan)")}
			}
			return runOr(runF, runApply)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Fingerprint, "plan", "", "fingerprint printed by relcap plan")
	return cmd
}

// runApply applies exactly the saved plan with the fingerprint.
func runApply(ctx context.Context, opts *applyOptions) error {
	a, fingerprint := opts.f, opts.Fingerprint
	svc, _, err := flowService(a, ctx, "apply", "", 0)
	if err != nil {
		return err
	}
	a.Measure(svc, workflow.StepApply.String(), effort.RoleCaptain)
	res, plan, err := svc.ApplyPlan(ctx, fingerprint, commandEvents(a))
	if err != nil {
		return err
	}
	if a.Flags().JSON {
		return printJSON(a, map[string]any{"fingerprint": fingerprint, "env": plan.Env, "result": res})
	}
	plain.PrintApplied(a.IO().Out, fingerprint, plan.Env, res)
	return nil
}

// unlockOptions are relcap unlock's flags.
type unlockOptions struct {
	f   Factory
	Req unlock.Request
}

func newCmdUnlock(f Factory, runF func(context.Context, *unlockOptions) error) *cobra.Command {
	opts := &unlockOptions{f: f}
	cmd := &cobra.Command{
		Use:   "unlock --env ENV --lock-id ID --confirm-holder-gone --reason TEXT",
		Short: "Guided force-unlock of a Terraform state lock whose holder is gone",
		Long: `unlock releases a Terraform state lock with terraform force-unlock. Only do
this when the process that holds it is gone (crashed CI job, closed laptop):
unlocking a live writer's lock corrupts state. It requires
--confirm-holder-gone and a reason, and journals who did it and why.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Req.Validate(); err != nil {
				return err
			}
			return runOr(runF, runUnlock)(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Req.Env, "env", "", "environment whose state is locked")
	cmd.Flags().StringVar(&opts.Req.LockID, "lock-id", "", "ID of the held lock")
	cmd.Flags().BoolVar(&opts.Req.HolderGone, "confirm-holder-gone", false, "you checked that the lock's holder is no longer running")
	cmd.Flags().StringVar(&opts.Req.Reason, "reason", "", "why (journaled)")
	return cmd
}

// runUnlock force-unlocks the Terraform state lock, journaling who and why.
func runUnlock(ctx context.Context, opts *unlockOptions) error {
	a := opts.f
	if _, err := a.LoadProject(); err != nil {
		return err
	}
	svc, _, err := a.Service(ctx, ServiceRequest{Command: "unlock", Needs: NeedPlans})
	if err != nil {
		return err
	}
	if err := unlock.ForceUnlock(ctx, svc, opts.Req); err != nil {
		return err
	}
	plain.PrintUnlocked(a.IO().Out, opts.Req.LockID, opts.Req.Env)
	return nil
}
