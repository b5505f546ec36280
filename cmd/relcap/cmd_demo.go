package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/registry"
	"github.com/relcap/relcap/adapters/sandbox"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/terraform"
	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/config"
)

func (a *app) demoCommand() *cobra.Command {
	var dir string
	var headless bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo [--headless] [--dir DIR]",
		Short: "A complete release, staging then prod, on an embedded sandbox (no setup)",
		Long: `demo builds a sandbox in a temporary directory (or --dir): an OCI registry
on 127.0.0.1 holding a signed multi-platform image, an environment Git
repository with staging and prod, a Terraform root per environment of
built-in terraform_data resources, the Argo CD API simulator, and the
relcap.yaml and ownership.yaml that name them. It then releases the image
through relcap's own flow, staging then prod:

  ownership check   stops on the sandbox's one ownership conflict, which
                    the demo resolves by correcting ownership.yaml
  plan review       a plan with a replacement, approved by a second
                    person, "demo-approver"; then applied
  promotion         the digest with its signature and attestation, pinned
                    in the environment repo (prod: approved by demo-approver)
  convergence       the simulator syncs the pinned digest and turns healthy

and ends with the effort of both releases. The ledger and the session
journals stay in the sandbox directory (unless --ledger is given), so a demo
never touches your own ledger. It exits 0 only if both releases converged.

At a terminal the release runs in the cockpit: the captain reviews and
approves the staging plan and continues with the keyboard (? shows the keys
of each screen), and a demo assistant plays the second person, announcing
in the status bar what it did (correcting the ownership map, approving for
demo-approver) so the captain can resume with r. --headless runs the
scripted path with plain line output; so does a run without a terminal.`,
		Example: `  relcap demo --headless
  relcap demo --headless --dir /tmp/relcap-demo`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runDemo(cmd.Context(), dir, headless, timeout)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "empty or new directory for the sandbox (default: a new temporary directory)")
	cmd.Flags().BoolVar(&headless, "headless", false, "run the scripted path with plain line output")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long each convergence may take")
	return cmd
}

// demo is one run of relcap demo: the sandbox, the captain's Service and
// the demo approver's.
type demo struct {
	a        *app
	out      io.Writer
	sb       *sandbox.Sandbox
	project  *workflow.Project
	captain  *workflow.Service
	approver *workflow.Service
	journal  workflow.Journal
	printer  *plain.Printer
}

func (a *app) runDemo(ctx context.Context, dir string, headless bool, timeout time.Duration) error {
	switch {
	case a.flags.config != "":
		return usageError{errors.New("demo writes and uses its own relcap.yaml in the sandbox; leave out -c/--config")}
	case a.flags.json:
		return usageError{errors.New("demo prints a narrated run; --json is not supported (relcap release --json streams NDJSON)")}
	case strings.TrimSpace(a.flags.actor) == sandbox.Approver:
		return usageError{fmt.Errorf("%s is the demo's second approver; act as someone else", sandbox.Approver)}
	}
	interactive := a.useCockpit() && !headless
	out := a.io.Out
	fmt.Fprintln(out, "Building the relcap sandbox: a local registry, an environment repo, Terraform roots and the Argo CD API simulator…")
	sb, err := sandbox.New(ctx, sandbox.Options{Dir: dir})
	if errors.Is(err, sandbox.ErrDirNotEmpty) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	defer sb.Close()
	a.flags.config = sb.Config
	if a.flags.ledger == "" {
		a.flags.ledger = filepath.Join(sb.Dir, sandbox.LedgerFile)
	}
	// relcap.yaml tells the Argo CD adapter to read the simulator's token
	// from sb.TokenEnv. Commands read the environment through a.io, so the
	// token goes there, for this process only, never into os.Environ.
	a.io.Env = append(a.io.Env, sb.TokenEnv+"="+sb.Token)
	printSandbox(out, sb)

	p, err := a.loadProject()
	if err != nil {
		return err
	}
	deps, err := a.demoDeps(p, sb, timeout)
	if err != nil {
		return err
	}
	captain, journal, err := a.serviceWith(ctx, "demo", "", deps)
	if err != nil {
		return err
	}
	approver, err := a.serviceAs(ctx, sandbox.Approver, "demo (approver)")
	if err != nil {
		return err
	}
	d := &demo{a: a, out: out, sb: sb, project: p, captain: captain, approver: approver, journal: journal, printer: plain.New(out, false)}
	if _, err := journal.Append(ctx, "demo.sandbox", map[string]any{"dir": sb.Dir, "registry": sb.Registry, "image": sb.Image, "digest": sb.Digest, "argocd_simulator": sb.ArgoCD, "env_repo": sb.EnvRepo}); err != nil {
		return err
	}

	var releases []*workflow.Release
	image := sb.Image
	for _, env := range sandbox.Environments {
		release := d.release
		if interactive {
			release = d.cockpitRelease
		}
		r, err := release(ctx, env, image)
		if r != nil {
			releases = append(releases, r)
		}
		if err != nil {
			d.effortSummary(ctx, releases)
			d.inspectHints()
			return err
		}
		// Later environments are released by the digest that converged,
		// never by the tag, which could have moved since.
		image = sb.Registry + "/ci/" + sandbox.App + "@" + r.Outputs[workflow.OutDigest]
	}
	if err := d.effortSummary(ctx, releases); err != nil {
		return err
	}
	d.inspectHints()
	for _, r := range releases {
		if r.Status != workflow.ReleaseConverged {
			return fmt.Errorf("%w: release %s ended %s", workflow.ErrNotConverged, r.ID, r.Status)
		}
	}
	fmt.Fprintf(out, "\nBoth releases converged: %s runs in staging and prod.\n", shortDigest(releases[len(releases)-1].Outputs[workflow.OutDigest]))
	return nil
}

// demoDeps wires every stage's adapter like flowDeps, with everything the
// run writes (saved plans, clones) inside the sandbox directory and no
// registry credentials: the sandbox registry needs none, and the captain's
// Docker credentials have no business there.
func (a *app) demoDeps(p *workflow.Project, sb *sandbox.Sandbox, timeout time.Duration) (workflow.Deps, error) {
	tf, err := terraform.New(terraform.Options{
		PlanDir: filepath.Join(sb.Dir, "state", "plans"), Classify: p.Classify, Clock: a.clock,
		// Terraform's own progress would bury the narration; the demo
		// prints relcap's review of the plan instead.
	})
	if err != nil {
		return workflow.Deps{}, err
	}
	reg, err := registry.New(registry.Options{Keychain: authn.NewMultiKeychain()})
	if err != nil {
		return workflow.Deps{}, err
	}
	repo, err := gitrepo.New(gitrepo.Options{WorkDir: filepath.Join(sb.Dir, "cache", "envrepos"), Clock: a.clock})
	if err != nil {
		return workflow.Deps{}, err
	}
	argo := a.argoCD(p)
	return workflow.Deps{
		Ownership: a.ownershipSources(p, tf), Planner: tf, Applier: tf,
		Registry: reg, EnvRepo: repo, Convergence: argo, ConvergeTimeout: timeout,
	}, nil
}

// serviceAs is a Service (and a session of its own) acting as actor, for
// the demo's second person: their approvals are journaled under their name.
func (a *app) serviceAs(ctx context.Context, actor, command string) (*workflow.Service, error) {
	saved := a.flags.actor
	a.flags.actor = actor
	defer func() { a.flags.actor = saved }()
	svc, _, err := a.serviceWith(ctx, command, "", workflow.Deps{})
	return svc, err
}

func printSandbox(out io.Writer, sb *sandbox.Sandbox) {
	fmt.Fprintf(out, `
Sandbox in %s
  registry        %s (in process, loopback): %s
                  %s, platforms %s, demo signature and attestation
  environment     %s (bare Git repository; Argo CD follows main)
  terraform       infra/staging, infra/prod (terraform_data; applied once, next plan replaces the migration)
  argo cd         %s: the Argo CD API simulator, apps %s and %s
  configuration   %s, %s (with one ownership mistake on purpose)
`, sb.Dir, sb.Registry, sb.Image, shortDigest(sb.Digest), strings.Join(sb.Platforms, ", "), sb.EnvRepo,
		sb.ArgoCD, sb.Apps["staging"], sb.Apps["prod"], filepath.Base(sb.Config), filepath.Base(sb.OwnershipFile))
}

// release runs one environment's release through the captain's Service,
// and does what a person would at each stop the script expects: correct
// the ownership map, approve the plan, approve the promotion. Any other
// stop, or the same stop twice, ends the demo with the release's error.
func (d *demo) release(ctx context.Context, env, image string) (*workflow.Release, error) {
	fmt.Fprintf(d.out, "\n━━ Release to %s ━━\n", env)
	r, err := d.captain.Start(ctx, workflow.StartRequest{Env: env, Image: image})
	if err != nil {
		return nil, err
	}
	if _, err := d.journal.Append(ctx, "session.release", map[string]string{"release": r.ID}); err != nil {
		return r, err
	}
	fmt.Fprintf(d.out, "release %s: %s to %s, captain %s\n\n", r.ID, image, env, d.captain.Actor())
	handled := map[workflow.StepKind]bool{}
	for {
		final, err := d.captain.Run(ctx, r.ID, d.printer.Event)
		if final == nil {
			return r, err
		}
		if err == nil {
			d.converged(final)
			return final, nil
		}
		k, _ := final.Current()
		if !errors.Is(err, workflow.ErrBlocked) || handled[k] {
			fmt.Fprintf(d.a.io.Err, "\nrelease %s stopped at %s: %s\n", final.ID, k.Title(), stepMessage(final))
			return final, err
		}
		handled[k] = true
		fmt.Fprintf(d.out, "\n  ▸ stopped at %s: %s\n", k.Title(), stepMessage(final))
		switch {
		case k == workflow.StepOwnership && errors.Is(err, workflow.ErrOwnershipConflict):
			err = d.fixOwnership(ctx, d.out)
		case k == workflow.StepPlanReview && errors.Is(err, workflow.ErrApprovalRequired):
			err = d.approvePlan(ctx, final)
		case k == workflow.StepPromotion && errors.Is(err, workflow.ErrApprovalRequired):
			err = d.approvePromotion(ctx, final)
		default:
			return final, err
		}
		if err != nil {
			return final, err
		}
		fmt.Fprintf(d.out, "  ▸ resuming release %s (as relcap resume %s would)\n\n", final.ID, final.ID)
	}
}

// cockpitRelease runs one release in the cockpit, with the demo assistant
// acting for the second person in the background.
func (d *demo) cockpitRelease(ctx context.Context, env, image string) (*workflow.Release, error) {
	r, err := d.captain.Start(ctx, workflow.StartRequest{Env: env, Image: image})
	if err != nil {
		return nil, err
	}
	if _, err := d.journal.Append(ctx, "session.release", map[string]string{"release": r.ID}); err != nil {
		return r, err
	}
	notices := make(chan string, 8)
	actx, stop := context.WithCancel(ctx)
	assistantDone := make(chan struct{})
	go func() {
		defer close(assistantDone)
		d.assist(actx, r.ID, notices)
	}()
	fj, ok := d.journal.(*store.FileJournal)
	if !ok {
		stop()
		return r, errors.New("demo: the captain's journal is not a session journal")
	}
	runErr := d.a.cockpit(ctx, d.captain, r.ID, fj, notices)
	stop()
	<-assistantDone
	final, err := d.captain.Release(context.WithoutCancel(ctx), r.ID)
	if err != nil {
		return r, errors.Join(runErr, err)
	}
	if runErr == nil && final.Status != workflow.ReleaseConverged {
		// The captain closed the cockpit before the release converged.
		return final, fmt.Errorf("release %s is %s: continue it with relcap --ledger %s resume %s", final.ID, final.Status, d.a.flags.ledger, final.ID)
	}
	return final, runErr
}

// assist plays the demo's second person while the captain drives the
// cockpit: it corrects the sandbox's ownership map when the check stops on
// it, and approves as demo-approver what needs someone other than the
// captain, each once, telling the captain through the status bar.
func (d *demo) assist(ctx context.Context, id string, notices chan<- string) {
	done := map[string]bool{}
	tick := time.NewTicker(400 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r, err := d.captain.Release(ctx, id)
		if err != nil {
			continue
		}
		k, ok := r.Current()
		if !ok || r.Step(k).Status != workflow.Blocked {
			continue
		}
		env, _ := d.project.Env(r.Env)
		var note string
		switch {
		case k == workflow.StepOwnership && !done["ownership"]:
			done["ownership"] = true
			if err := d.fixOwnership(ctx, io.Discard); err != nil {
				note = "demo assistant: could not correct ownership.yaml: " + err.Error()
			} else {
				note = "demo assistant: corrected ownership.yaml (terraform_data.db_migration belongs to terraform) — press r to resume"
			}
		case k == workflow.StepPlanReview && env.Approvals.DistinctFromAuthor && !done["plan:"+r.Outputs[workflow.OutFingerprint]]:
			done["plan:"+r.Outputs[workflow.OutFingerprint]] = true
			if _, _, err := d.approver.ApprovePlan(ctx, r.Outputs[workflow.OutFingerprint], "sandbox demo: reviewed the plan"); err == nil {
				note = fmt.Sprintf("%s approved plan %s — press r to resume", sandbox.Approver, short(r.Outputs[workflow.OutFingerprint]))
			}
		case k == workflow.StepPromotion && env.Approvals.Promotion > 0 && !done["promotion"]:
			done["promotion"] = true
			if _, _, err := d.approver.ApproveRelease(ctx, id, "sandbox demo: checked the digest pin"); err == nil {
				note = fmt.Sprintf("%s approved the promotion — press r to resume", sandbox.Approver)
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
func (d *demo) fixOwnership(ctx context.Context, out io.Writer) error {
	fix, err := d.sb.FixOwnership()
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
	fresh, err := config.Load(d.sb.Config)
	if err != nil {
		return fmt.Errorf("reload the corrected ownership map: %w", err)
	}
	d.project.Ownership = fresh.Ownership
	_, err = d.journal.Append(ctx, "demo.ownership-fixed", map[string]any{"file": fix.File, "reason": fix.Reason, "removed": fix.Removed, "added": fix.Added})
	return err
}

// approvePlan shows the reviewed plan and records demo-approver's approval
// of exactly its fingerprint.
func (d *demo) approvePlan(ctx context.Context, r *workflow.Release) error {
	fp := r.Outputs[workflow.OutFingerprint]
	plan, err := d.captain.Plan(ctx, fp)
	if err != nil {
		return err
	}
	fmt.Fprintln(d.out)
	if err := plain.PrintPlan(&indent{w: d.out}, plan); err != nil {
		return err
	}
	fmt.Fprintln(d.out)
	d.approver.Touch(r.ID, workflow.RoleApprover, workflow.StepPlanReview)
	comment := "sandbox demo: reviewed the changes, including the replacement"
	approval, check, err := d.approver.ApprovePlan(ctx, fp, comment)
	if err != nil {
		return err
	}
	d.approver.Touch(r.ID, workflow.RoleApprover, workflow.StepPlanReview)
	if err := d.approver.FlushEffort(ctx, r.ID); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  ▸ %s approved plan %s (%d of %d required)\n", approval.Approver, short(fp), len(check.Counted), check.Required)
	return nil
}

// approvePromotion shows the pinned change and records demo-approver's
// approval of the release's promotion.
func (d *demo) approvePromotion(ctx context.Context, r *workflow.Release) error {
	if diff := strings.TrimRight(r.Outputs["envrepo.diff"], "\n"); diff != "" {
		fmt.Fprintf(d.out, "  ▸ the pinned change on %s:\n", r.Outputs[workflow.OutEnvBranch])
		for _, l := range strings.Split(diff, "\n") {
			fmt.Fprintf(d.out, "      %s\n", l)
		}
	}
	d.approver.Touch(r.ID, workflow.RoleApprover, workflow.StepPromotion)
	approval, check, err := d.approver.ApproveRelease(ctx, r.ID, "sandbox demo: checked the digest pin")
	if err != nil {
		return err
	}
	d.approver.Touch(r.ID, workflow.RoleApprover, workflow.StepPromotion)
	if err := d.approver.FlushEffort(ctx, r.ID); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  ▸ %s approved the promotion of %s (%d of %d required)\n", approval.Approver, r.ID, len(check.Counted), check.Required)
	return nil
}

// converged summarises what the release established.
func (d *demo) converged(r *workflow.Release) {
	fmt.Fprintf(d.out, "\nrelease %s converged in %s\n", r.ID, r.Env)
	for _, e := range r.Step(workflow.StepPromotion).Evidence {
		switch e.Kind {
		case "digest.resolved":
			fmt.Fprintf(d.out, "  digest     %s (%s)\n", e.Subject, e.Detail["platforms"])
		case "digest.verified":
			fmt.Fprintf(d.out, "  copied     into %s: verified, signed %s, %s referrer(s)\n", e.Detail["repository"], e.Detail["signed"], e.Detail["referrers"])
		case "envrepo.commit":
			fmt.Fprintf(d.out, "  landed     on %s at %s\n", e.Detail["branch"], short(e.Subject))
		}
	}
}

// effortSummary prints each release's effort: staff active time, machine
// wait and off-tool time, three numbers that are never added together.
func (d *demo) effortSummary(ctx context.Context, releases []*workflow.Release) error {
	if len(releases) == 0 {
		return nil
	}
	fmt.Fprintf(d.out, "\n━━ Effort ━━\n")
	tw := tabwriter.NewWriter(d.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  RELEASE\tENV\tSTATUS\tSTAFF ACTIVE\tMACHINE WAIT\tOFF-TOOL")
	for _, r := range releases {
		entries, err := d.captain.Effort(ctx, r.ID)
		if err != nil {
			return err
		}
		t := workflow.SumEffort(entries)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Env, r.Status, round(t.Active), round(t.Wait), round(t.OffTool))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "  Staff time (people engaged with relcap: here the scripted captain and demo-approver) and")
	fmt.Fprintln(d.out, "  machine wait (Terraform, copies, reconciliation) are separate numbers, never added together.")
	fmt.Fprintln(d.out, "  Off-tool time is what people log with relcap effort log --release ID (meetings, chat).")
	return nil
}

// shortDigest is a digest's first 12 hex digits, as relcap prints them.
func shortDigest(d string) string {
	_, hex, _ := strings.Cut(d, ":")
	return short(hex)
}

func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

func (d *demo) inspectHints() {
	ledger := d.a.flags.ledger
	fmt.Fprintf(d.out, `
The sandbox stays in %s (its registry and simulator stopped with this command).
Inspect what the demo recorded:
  relcap --ledger %s journal list
  relcap --ledger %s journal verify
  git -C %s log --oneline main
`, d.sb.Dir, ledger, ledger, d.sb.EnvRepo)
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
