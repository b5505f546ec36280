package terraform

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

var _ workflow.ApplyRunPlacer = (*Adapter)(nil)

// applyComplete is what Terraform prints when an apply succeeded: with
// exit code 0, the evidence that a run applied its plan.
const applyComplete = "Apply complete!"

var (
	fingerprintPattern = regexp.MustCompile(`^[0-9a-f]{16,128}$`)
	runIDPattern       = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._-]{0,63}$`)
)

// applyRunsDir is where the runs of applies of plan fp are kept.
func (a *Adapter) applyRunsDir(fp string) string {
	return filepath.Join(a.planDir, "runs", fp)
}

// PlaceApplyRun says where the run of attempt id at applying plan fp is
// kept: this host, under the private plan store.
func (a *Adapter) PlaceApplyRun(fp, id string) workflow.ApplyRun {
	host, _ := os.Hostname() // no host name: the run is still found by its directory
	return workflow.ApplyRun{Fingerprint: fp, ID: id, Host: host, Dir: filepath.Join(a.applyRunsDir(fp), id)}
}

// earlierApplies settles the attempts at applying req's plan made before
// this one: the recorded ones (req.Earlier) and every run of the plan in
// this plan store. A run still going is waited for (its output followed)
// first. It reports whether one of them applied the plan (Terraform's
// exit 0 and "Apply complete!" for this plan file). A run whose outcome
// cannot be established, or that is on another host, makes it return an
// error wrapping fault.ErrApplyOutcomeUnknown: the plan must not be
// applied again. Runs that failed are Terraform's own refusal or failure,
// already reported; the plan's staleness checks decide whether it may
// run again.
func (a *Adapter) earlierApplies(ctx context.Context, t target, req workflow.ApplyRequest) (applied bool, err error) {
	if !fingerprintPattern.MatchString(req.Fingerprint) {
		return false, fmt.Errorf("%w: apply of plan %q: not a plan fingerprint", fault.ErrUsage, req.Fingerprint)
	}
	host, _ := os.Hostname() // compared only when both are known
	dirs := map[string]bool{}
	var unknown []string
	for _, r := range req.Earlier {
		if r.Fingerprint != "" && r.Fingerprint != req.Fingerprint {
			continue
		}
		if r.Host != "" && host != "" && r.Host != host {
			unknown = append(unknown, fmt.Sprintf("an apply started %s on host %s (run %s) cannot be seen from %s: run relcap resume there", r.StartedAt.UTC().Format("2006-01-02T15:04:05Z"), r.Host, r.Dir, host))
			continue
		}
		dir := r.Dir
		if dir == "" && runIDPattern.MatchString(r.ID) {
			dir = filepath.Join(a.applyRunsDir(req.Fingerprint), r.ID)
		}
		if dir != "" {
			dirs[filepath.Clean(dir)] = true
		}
	}
	entries, err := os.ReadDir(a.applyRunsDir(req.Fingerprint))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("reading the runs of plan %s: %w", workflow.ShortHash(req.Fingerprint), err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			dirs[filepath.Join(a.applyRunsDir(req.Fingerprint), e.Name())] = true
		}
	}
	ordered := make([]string, 0, len(dirs))
	for d := range dirs {
		ordered = append(ordered, d)
	}
	sort.Strings(ordered)
	for _, dir := range ordered {
		st, err := inspectRun(dir)
		if err != nil {
			return false, err
		}
		if st.State == runAlive {
			a.notify(ctx, "relcap: an earlier apply of plan %s is still running (run %s); waiting for it and following its output", workflow.ShortHash(req.Fingerprint), dir)
			stdout, stderr := a.writers(ctx)
			if st, err = followRun(ctx, dir, 0, stdout, stderr); err != nil {
				return false, err
			}
			if ctx.Err() != nil && st.State == runAlive {
				return false, a.terraformError(ctx, "apply", t, ctx.Err())
			}
		}
		outcome, why := applyOutcome(dir, st)
		if st.State != runAlive {
			a.maskRunOutput(dir)
		}
		switch outcome {
		case applyRan:
			return true, nil
		case applyUnknown:
			unknown = append(unknown, why)
		}
	}
	if len(unknown) > 0 {
		return false, &ApplyOutcomeUnknownError{Fingerprint: req.Fingerprint, Env: req.Env.Name, Dir: t.dir, Workspace: t.workspace, Why: unknown}
	}
	return false, nil
}

// applyResult is what a finished run says about its apply.
type applyResult int

const (
	applyNotRun  applyResult = iota // no run: it never started
	applyRan                        // exit 0 and Terraform's "Apply complete!"
	applyFailed                     // Terraform's own failure: an exit code, its stderr
	applyUnknown                    // killed, or no exit recorded: unknown
)

// applyOutcome classifies the run in dir, and says why an unknown one is.
func applyOutcome(dir string, st runStatus) (applyResult, string) {
	switch st.State {
	case runAbsent:
		return applyNotRun, ""
	case runAlive:
		return applyUnknown, fmt.Sprintf("run %s still runs", dir)
	case runLost:
		return applyUnknown, fmt.Sprintf("run %s ended with no exit status recorded (Terraform and its supervisor were killed)", dir)
	}
	switch {
	case st.Exit.StartError != "":
		return applyFailed, ""
	case st.Exit.Signal != "":
		return applyUnknown, fmt.Sprintf("Terraform of run %s was killed by %s", dir, st.Exit.Signal)
	case st.Exit.Code != 0:
		return applyFailed, ""
	}
	stdout, _ := runOutput(dir)
	if !strings.Contains(stdout, applyComplete) {
		return applyUnknown, fmt.Sprintf("Terraform of run %s exited 0 without saying %q", dir, applyComplete)
	}
	return applyRan, ""
}

// applyDetached applies the saved plan req.PlanFile (checked by the
// caller) in a detached run, following its output to the operation's
// writers, and returns Terraform's failure as terraform-exec would.
func (a *Adapter) applyDetached(ctx context.Context, t target, req workflow.ApplyRequest) error {
	id := req.Run.ID
	if id == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		id = a.clock.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	}
	if !runIDPattern.MatchString(id) {
		return fmt.Errorf("%w: apply run id %q", fault.ErrUsage, id)
	}
	dir := filepath.Join(a.applyRunsDir(req.Fingerprint), id)
	// The flags terraform-exec's Apply passes with DirOrPlan and Lock:
	// the saved plan carries its variables, and -lock=true is explicit
	// so no TF_CLI_ARGS can turn locking off.
	args := []string{"apply", "-no-color", "-auto-approve", "-input=false", "-lock=true", "-parallelism=10", "-refresh=true", req.PlanFile}
	run, err := a.startDetached(t, dir, args, runCommand{Op: "apply", Fingerprint: req.Fingerprint, PlanFile: req.PlanFile, PlanHash: req.PlanHash})
	if err != nil {
		return err
	}
	stdout, stderr := a.writers(ctx)
	st, err := followRun(ctx, run.dir, run.pid, stdout, stderr)
	if err != nil {
		return a.terraformError(ctx, "apply", t, err)
	}
	outcome, why := applyOutcome(run.dir, st)
	_, errOut := runOutput(run.dir)
	if st.State != runAlive {
		a.maskRunOutput(run.dir)
	}
	switch outcome {
	case applyRan:
		return nil
	case applyUnknown:
		return &ApplyOutcomeUnknownError{Fingerprint: req.Fingerprint, Env: req.Env.Name, Dir: t.dir, Workspace: t.workspace, Why: []string{why}}
	}
	return a.terraformError(ctx, "apply", t, exitError(st, errOut))
}

// ApplyOutcomeUnknownError is an apply of a plan that may have started
// and whose outcome cannot be established. It wraps
// fault.ErrApplyOutcomeUnknown and says what to do instead of applying.
type ApplyOutcomeUnknownError struct {
	Fingerprint    string
	Env            string
	Dir, Workspace string
	Why            []string
}

func (e *ApplyOutcomeUnknownError) Error() string {
	return fmt.Sprintf("%s: plan %s may have been applied already and relcap cannot tell whether it changed anything (%s); it will not apply it again. Next safe action: inspect the state (terraform state list, terraform show in %s, workspace %s), run terraform plan there to see what is left, then plan again in this release (relcap plan --env %s) and have the new plan approved",
		fault.ErrApplyOutcomeUnknown, workflow.ShortHash(e.Fingerprint), strings.Join(e.Why, "; "), e.Dir, e.Workspace, e.Env)
}

func (e *ApplyOutcomeUnknownError) Unwrap() error { return fault.ErrApplyOutcomeUnknown }

// purgeRuns deletes the run directories last modified more than expiry
// before now whose outcome is settled: an apply's that exited (its
// output may hold what Terraform printed of secrets, like a plan file),
// and any other command's. A run still going, and an apply whose
// outcome is unknown, are kept: the latter is what stops its plan from
// being applied again.
func (a *Adapter) purgeRuns(now time.Time, expiry time.Duration) ([]string, error) {
	root := filepath.Join(a.planDir, "runs")
	groups, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading terraform runs: %w", err)
	}
	var removed []string
	var errs []error
	for _, g := range groups {
		if !g.IsDir() {
			continue
		}
		runs, err := os.ReadDir(filepath.Join(root, g.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range runs {
			dir := filepath.Join(root, g.Name(), r.Name())
			info, err := r.Info()
			if err != nil || !r.IsDir() || now.Sub(info.ModTime()) <= expiry {
				continue
			}
			st, err := inspectRun(dir)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			settled := st.State == runExited || (g.Name() == "ops" && st.State == runLost) || strings.HasPrefix(r.Name(), ".prepare-")
			if !settled {
				continue
			}
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, dir)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("purging terraform runs: %w", err)
	}
	return removed, nil
}
