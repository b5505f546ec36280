// Package demo drives `relcap demo`: a whole release, staging then prod,
// through relcap's own Service on the embedded sandbox, with a scripted
// second person. Headless it narrates each step and does what a person
// would at each stop (correct the ownership map, approve the plan, approve
// the promotion); in the cockpit the captain drives and an assistant plays
// the second person, reacting to the Service's events.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relcap/relcap/adapters/sandbox"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/journal"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Options are what a demo run needs, wired by the command.
type Options struct {
	Sandbox *sandbox.Sandbox
	// Project is the project the captain's Service runs; fixing the
	// ownership map updates it in place, as a resume after editing
	// ownership.yaml would.
	Project *workflow.Project
	// Captain and Approver act as the captain and as sandbox.Approver,
	// each with a session of its own.
	Captain, Approver *workflow.Service
	// Journal is the captain's session.
	Journal workflow.Journal
	// Out is the narration; Err gets what stopped a release.
	Out, Err io.Writer
	// Events prints a headless run's events, one line each.
	Events workflow.EventSink
	// PrintPlan prints a reviewed plan as relcap plan does.
	PrintPlan func(io.Writer, tfplan.Summary) error
	// Cockpit, when set, runs one release in the cockpit, showing notices
	// in its status bar; nil runs the scripted path headless.
	Cockpit func(ctx context.Context, releaseID string, notices <-chan string) error
	// Ledger is the ledger path the closing hints name.
	Ledger string
}

// Run releases the sandbox's image to every environment in order and
// returns the releases with the first error; it prints the effort of each
// release and how to inspect the record at the end either way. Later
// environments are released by the digest that converged, never by the
// tag, which could have moved since.
func Run(ctx context.Context, o Options) ([]*workflow.Release, error) {
	d := &driver{Options: o}
	if _, err := o.Journal.Append(ctx, journal.DemoSandbox{Dir: o.Sandbox.Dir, Registry: o.Sandbox.Registry, Image: o.Sandbox.Image,
		Digest: o.Sandbox.Digest, ArgoCDSimulator: o.Sandbox.ArgoCD, EnvRepo: o.Sandbox.EnvRepo}); err != nil {
		return nil, err
	}
	var releases []*workflow.Release
	image := o.Sandbox.Image
	for _, env := range sandbox.Environments {
		release := d.release
		if o.Cockpit != nil {
			release = d.cockpitRelease
		}
		r, err := release(ctx, env, image)
		if r != nil {
			releases = append(releases, r)
		}
		if err != nil {
			return releases, errors.Join(err, d.effortSummary(ctx, releases))
		}
		image = o.Sandbox.Registry + "/ci/" + sandbox.App + "@" + r.Checkpoints.Digest.String()
	}
	if err := d.effortSummary(ctx, releases); err != nil {
		return releases, err
	}
	for _, r := range releases {
		if r.Status != workflow.ReleaseConverged {
			return releases, fmt.Errorf("%w: release %s ended %s", fault.ErrNotConverged, r.ID, r.Status)
		}
	}
	return releases, nil
}

// driver is one demo run.
type driver struct{ Options }

// release runs one environment's release through the captain's Service,
// and does what a person would at each stop the script expects: correct
// the ownership map, approve the plan, approve the promotion. Any other
// stop, or the same stop twice, ends the demo with the release's error.
func (d *driver) release(ctx context.Context, env, image string) (*workflow.Release, error) {
	fmt.Fprintf(d.Out, "\n━━ Release to %s ━━\n", env)
	r, err := d.Captain.Start(ctx, workflow.StartRequest{Env: env, Image: image})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(d.Out, "release %s: %s to %s, captain %s\n\n", r.ID, image, env, d.Captain.Actor())
	handled := map[workflow.StepKind]bool{}
	for {
		final, err := d.Captain.Run(ctx, r.ID, d.Events)
		if final == nil {
			return r, err
		}
		if err == nil {
			d.converged(final)
			return final, nil
		}
		k, _ := final.Current()
		if !errors.Is(err, fault.ErrBlocked) || handled[k] {
			fmt.Fprintf(d.Err, "\nrelease %s stopped at %s: %s\n", final.ID, k.Title(), stepMessage(final))
			return final, err
		}
		handled[k] = true
		fmt.Fprintf(d.Out, "\n  ▸ stopped at %s: %s\n", k.Title(), stepMessage(final))
		switch {
		case k == workflow.StepOwnership && errors.Is(err, fault.ErrOwnershipConflict):
			err = d.fixOwnership(ctx, d.Out)
		case k == workflow.StepPlanReview && errors.Is(err, fault.ErrApprovalRequired):
			err = d.approvePlan(ctx, final)
		case k == workflow.StepPromotion && errors.Is(err, fault.ErrApprovalRequired):
			err = d.approvePromotion(ctx, final)
		default:
			return final, err
		}
		if err != nil {
			return final, err
		}
		fmt.Fprintf(d.Out, "  ▸ resuming release %s (as relcap resume %s would)\n\n", final.ID, final.ID)
	}
}

// cockpitRelease runs one release in the cockpit, with the assistant
// acting for the second person in the background.
func (d *driver) cockpitRelease(ctx context.Context, env, image string) (*workflow.Release, error) {
	r, err := d.Captain.Start(ctx, workflow.StartRequest{Env: env, Image: image})
	if err != nil {
		return nil, err
	}
	notices := make(chan string, 8)
	actx, stop := context.WithCancel(ctx)
	events := d.Captain.Subscribe(actx)
	assisted := make(chan struct{})
	go func() {
		defer close(assisted)
		d.assist(actx, r.ID, events, notices)
	}()
	runErr := d.Cockpit(ctx, r.ID, notices)
	stop()
	<-assisted
	final, err := d.Captain.Records().Release(context.WithoutCancel(ctx), r.ID)
	if err != nil {
		return r, errors.Join(runErr, err)
	}
	if runErr == nil && final.Status != workflow.ReleaseConverged {
		// The captain closed the cockpit before the release converged.
		return final, fmt.Errorf("release %s is %s: continue it with relcap --ledger %s resume %s", final.ID, final.Status, d.Ledger, final.ID)
	}
	return final, runErr
}

// assist plays the demo's second person while the captain drives the
// cockpit: when a step of release id stops blocked, it corrects the
// sandbox's ownership map, or approves as demo-approver what needs someone
// other than the captain, each once, telling the captain through the
// status bar. It reacts to the Service's events; it never polls.
func (d *driver) assist(ctx context.Context, id string, events <-chan workflow.Event, notices chan<- string) {
	done := map[string]bool{}
	for e := range events {
		if e.ReleaseID != id || e.Kind != workflow.EventStepFinished || e.Status != workflow.Blocked || e.Release == nil {
			continue
		}
		r := e.Release
		env, _ := d.Project.Env(r.Env)
		fp := r.Checkpoints.Fingerprint
		var note string
		switch {
		case e.Step == workflow.StepOwnership && !done["ownership"]:
			done["ownership"] = true
			if err := d.fixOwnership(ctx, io.Discard); err != nil {
				note = "demo assistant: could not correct ownership.yaml: " + err.Error()
			} else {
				note = "demo assistant: corrected ownership.yaml (terraform_data.db_migration belongs to terraform) — press r to resume"
			}
		case e.Step == workflow.StepPlanReview && env.Approvals.DistinctFromAuthor && !done["plan:"+fp]:
			done["plan:"+fp] = true
			if _, _, err := d.Approver.ApprovePlan(ctx, fp, "sandbox demo: reviewed the plan"); err == nil {
				note = fmt.Sprintf("%s approved plan %s — press r to resume", sandbox.Approver, workflow.ShortHash(fp))
			} else {
				note = "demo assistant: could not approve the plan: " + err.Error()
			}
		case e.Step == workflow.StepPromotion && env.Approvals.Promotion > 0 && !done["promotion"]:
			done["promotion"] = true
			if _, _, err := d.Approver.ApproveRelease(ctx, id, "sandbox demo: checked the digest pin"); err == nil {
				note = fmt.Sprintf("%s approved the promotion — press r to resume", sandbox.Approver)
			} else {
				note = "demo assistant: could not approve the promotion: " + err.Error()
			}
		}
		if note != "" {
			select {
			case notices <- note:
			case <-ctx.Done():
				return
			}
		}
	}
}

// fixOwnership corrects ownership.yaml, says so on out, and has the running
// Service see the corrected map, as relcap resume would after reloading
// relcap.yaml.
func (d *driver) fixOwnership(ctx context.Context, out io.Writer) error {
	fix, err := d.Sandbox.FixOwnership()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  ▸ resolving the conflict in %s: %s\n", filepath.Base(fix.File), fix.Reason)
	for _, l := range fix.Removed {
		fmt.Fprintf(out, "      - %s\n", l)
	}
	for _, l := range fix.Added {
		fmt.Fprintf(out, "      + %s\n", l)
	}
	fresh, err := config.Load(d.Sandbox.Config)
	if err != nil {
		return fmt.Errorf("reload the corrected ownership map: %w", err)
	}
	d.Project.Ownership = fresh.Ownership
	_, err = d.Journal.Append(ctx, journal.DemoOwnershipFixed{File: fix.File, Reason: fix.Reason, Removed: fix.Removed, Added: fix.Added})
	return err
}

// approvePlan shows the reviewed plan and records demo-approver's approval
// of exactly its fingerprint, with the effort of reviewing it.
func (d *driver) approvePlan(ctx context.Context, r *workflow.Release) error {
	fp := r.Checkpoints.Fingerprint
	plan, err := d.Captain.Records().Plan(ctx, fp)
	if err != nil {
		return err
	}
	fmt.Fprintln(d.Out)
	if err := d.PrintPlan(&indent{w: d.Out}, plan); err != nil {
		return err
	}
	fmt.Fprintln(d.Out)
	d.Approver.Tracker().Touch(r.ID, effort.RoleApprover, workflow.StepPlanReview.String())
	approval, check, err := d.Approver.ApprovePlan(ctx, fp, "sandbox demo: reviewed the changes, including the replacement")
	if err != nil {
		return err
	}
	d.Approver.Tracker().Touch(r.ID, effort.RoleApprover, workflow.StepPlanReview.String())
	if err := d.Approver.FlushEffort(ctx, r.ID); err != nil {
		return err
	}
	fmt.Fprintf(d.Out, "  ▸ %s approved plan %s%s (%d of %d required)\n", approval.Approver, workflow.ShortHash(fp), signedWith(approval), len(check.Counted), check.Required)
	return nil
}

// approvePromotion shows the pinned change and records demo-approver's
// approval of the release's promotion.
func (d *driver) approvePromotion(ctx context.Context, r *workflow.Release) error {
	if diff := strings.TrimRight(r.Checkpoints.EnvDiff, "\n"); diff != "" {
		fmt.Fprintf(d.Out, "  ▸ the pinned change on %s:\n", r.Checkpoints.EnvBranch)
		for _, l := range strings.Split(diff, "\n") {
			fmt.Fprintf(d.Out, "      %s\n", l)
		}
	}
	d.Approver.Tracker().Touch(r.ID, effort.RoleApprover, workflow.StepPromotion.String())
	approval, check, err := d.Approver.ApproveRelease(ctx, r.ID, "sandbox demo: checked the digest pin")
	if err != nil {
		return err
	}
	d.Approver.Tracker().Touch(r.ID, effort.RoleApprover, workflow.StepPromotion.String())
	if err := d.Approver.FlushEffort(ctx, r.ID); err != nil {
		return err
	}
	fmt.Fprintf(d.Out, "  ▸ %s approved the promotion of %s at %s%s (%d of %d required)\n", approval.Approver, r.ID, workflow.ShortHash(approval.Commit), signedWith(approval), len(check.Counted), check.Required)
	return nil
}

// converged summarises what the release established.
func (d *driver) converged(r *workflow.Release) {
	fmt.Fprintf(d.Out, "\nrelease %s converged in %s\n", r.ID, r.Env)
	for _, e := range r.Step(workflow.StepPromotion).Evidence {
		switch v := e.Detail.(type) {
		case evidence.DigestResolved:
			fmt.Fprintf(d.Out, "  digest     %s (%s)\n", e.Subject, v.Platforms)
		case evidence.DigestVerified:
			fmt.Fprintf(d.Out, "  copied     into %s: verified, signed %t, %d referrer(s)\n", v.Repository, v.Signed, v.Referrers)
		case evidence.EnvLanded:
			fmt.Fprintf(d.Out, "  landed     on %s at %s\n", v.Branch, workflow.ShortHash(e.Subject))
		}
	}
}

// effortSummary prints each release's effort as relcap report effort
// counts it: coverage by the report's rule (report.ReleaseCoverage), staff
// active time and machine wait from effort.Tally, written by effort.Format,
// and the work relcap could not measure with why. Staff time and machine
// wait are separate numbers, never added together.
func (d *driver) effortSummary(ctx context.Context, releases []*workflow.Release) error {
	if len(releases) == 0 {
		return nil
	}
	fmt.Fprintf(d.Out, "\n━━ Effort ━━\n")
	tw := tabwriter.NewWriter(d.Out, 0, 4, 2, ' ', 0)
	// 80 columns at most: a terminal wraps a wider table mid-word. The
	// environment is in the release's name.
	fmt.Fprintln(tw, "  RELEASE\tSTATUS\tCOVERAGE\tACTIVE\tWAIT")
	var notes []string
	var offTool time.Duration
	for _, r := range releases {
		entries, err := d.Captain.Effort(ctx, r.ID)
		if err != nil {
			return err
		}
		f := effort.Tally(entries)
		cov, missing := report.ReleaseCoverage(r.Captain, entries)
		active := effort.Format(f.Active)
		if cov == report.CoverageUnmeasured {
			active = "unmeasured"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, cov, active, effort.Format(f.Wait))
		offTool += f.OffTool
		for _, w := range missing {
			notes = append(notes, fmt.Sprintf("%s: %s on %s not measured: %s", r.ID, w.Person, w.Step, w.Reason))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		printWrapped(d.Out, n)
	}
	printWrapped(d.Out, fmt.Sprintf("ACTIVE is staff time (the captain and %s engaged with relcap); "+
		"WAIT is machine time (Terraform, copies, reconciliation): two numbers, never added. "+
		"Off-tool time logged with relcap effort log: %s.", sandbox.Approver, effort.Format(offTool)))
	printWrapped(d.Out, "These are sandbox releases (sandbox: true in relcap.yaml): "+
		"relcap report effort never counts them as releases, saved hours or deployments.")
	return nil
}

// printWrapped prints text two spaces in, wrapped at word boundaries to
// fit an 80-column terminal.
func printWrapped(w io.Writer, text string) {
	const width = 80 - 2
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len([]rune(line))+1+len([]rune(word)) > width {
			fmt.Fprintln(w, "  "+line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		fmt.Fprintln(w, "  "+line)
	}
}

// Hints prints how to inspect what a demo recorded.
func Hints(out io.Writer, sb *sandbox.Sandbox, ledger string) {
	fmt.Fprintf(out, `
The sandbox stays in %s (its registry and simulator stopped with this command).
Inspect what the demo recorded:
  relcap --ledger %s journal list
  relcap -c %s --ledger %s journal verify
  git -C %s log --oneline main refs/relcap/journal
`, sb.Dir, ledger, sb.Config, ledger, sb.EnvRepo)
}

// Describe prints what the sandbox holds.
func Describe(out io.Writer, sb *sandbox.Sandbox) {
	fmt.Fprintf(out, `
Sandbox in %s
  registry        %s (in process, loopback): %s
                  %s, platforms %s, demo signature and attestation
  environment     %s (bare Git repository; Argo CD follows main)
  terraform       infra/staging, infra/prod (terraform_data; applied once, next plan replaces the migration)
  argo cd         %s: the Argo CD API simulator, apps %s and %s
  configuration   %s, %s (with one ownership mistake on purpose)
`, sb.Dir, sb.Registry, sb.Image, workflow.ShortHash(strings.TrimPrefix(sb.Digest, "sha256:")), strings.Join(sb.Platforms, ", "), sb.EnvRepo,
		sb.ArgoCD, sb.Apps["staging"], sb.Apps["prod"], filepath.Base(sb.Config), filepath.Base(sb.OwnershipFile))
}

func stepMessage(r *workflow.Release) string {
	if k, ok := r.Current(); ok {
		return r.Step(k).Message
	}
	return ""
}

// indent writes every line two spaces in, so the plan review sits inside
// the narration. It remembers whether the last write ended a line, since
// the plan is written in pieces.
type indent struct {
	w   io.Writer
	mid bool // inside a line
}

func (i *indent) Write(p []byte) (int, error) {
	b := make([]byte, 0, len(p)+16)
	for _, c := range p {
		if !i.mid && c != '\n' {
			b = append(b, ' ', ' ')
			i.mid = true
		}
		b = append(b, c)
		if c == '\n' {
			i.mid = false
		}
	}
	if _, err := i.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// signedWith says which key signed an approval, for the narration.
func signedWith(a approval.Approval) string {
	if a.Signature.IsZero() {
		return ", unsigned"
	}
	return ", signed with " + a.Signature.Key
}
