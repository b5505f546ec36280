package terraform

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

// Apply applies exactly the saved plan req.PlanFile, with state locking on,
// after checking that the file's SHA-256 is still req.PlanHash and that the
// current inputs (revision, lock file, var files, workspace, state lineage
// and serial) are still req.Inputs; otherwise it returns an error wrapping
// fault.ErrStalePlan that says what moved. Terraform's own refusal of a
// stale plan wraps fault.ErrStalePlan too, and a held state lock returns
// a *StateLockError, which wraps fault.ErrLocked.
//
// Terraform runs detached (detached.go): relcap's death does not kill it,
// and its run directory keeps its output and exit status. Before anything
// else, Apply settles the earlier attempts at this plan (earlierApplies):
// it waits for one still running, returns AlreadyApplied (applying
// nothing) when one applied the plan by Terraform's own result, and
// refuses with fault.ErrApplyOutcomeUnknown when one's outcome cannot
// be established. A moved state is never taken as evidence: a plan file
// that is gone with no run that applied it is refused as stale. On
// success the plan file is deleted.
//
// When ctx is cancelled, Terraform gets SIGINT and relcap waits for it to
// exit (up to 60 s), so Terraform stops gracefully, writes its state and
// releases its lock; the error then satisfies errors.Is(err,
// context.Canceled). The plan is stale afterwards.
func (a *Adapter) Apply(ctx context.Context, req workflow.ApplyRequest) (workflow.ApplyResult, error) {
	t, err := a.target(req.Env)
	if err != nil {
		return workflow.ApplyResult{}, err
	}
	if req.PlanFile == "" || req.PlanHash == "" {
		return workflow.ApplyResult{}, fmt.Errorf("%w: apply of plan %s: no plan file or plan hash given", fault.ErrUsage, req.Fingerprint)
	}
	unlock, err := a.lockWorkdir(ctx, t, "apply")
	if err != nil {
		return workflow.ApplyResult{}, err
	}
	defer unlock()
	// An earlier run still going is waited for before anything else runs
	// Terraform in the root.
	ranBefore, err := a.earlierApplies(ctx, t, req)
	if err != nil {
		return workflow.ApplyResult{}, err
	}
	loud, quiet, err := a.terraforms(ctx, t)
	if err != nil {
		return workflow.ApplyResult{}, err
	}

	now, restore, err := a.inputsIn(ctx, t, loud, quiet)
	defer restore()
	if err != nil {
		return workflow.ApplyResult{}, err
	}
	if ranBefore {
		if err := os.Remove(req.PlanFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return workflow.ApplyResult{AlreadyApplied: true, StateSerial: now.StateSerial}, fmt.Errorf("plan %s applied, but deleting its plan file failed: %w", workflow.ShortHash(req.Fingerprint), err)
		}
		return workflow.ApplyResult{AlreadyApplied: true, StateSerial: now.StateSerial}, nil
	}

	planHash, err := hashFile(req.PlanFile)
	if errors.Is(err, fs.ErrNotExist) {
		return workflow.ApplyResult{}, fmt.Errorf("%w: plan file %s is gone (expired or purged) and no run of it on this machine applied it; run relcap plan again", fault.ErrStalePlan, req.PlanFile)
	}
	if err != nil {
		return workflow.ApplyResult{}, fmt.Errorf("hashing plan file: %w", err)
	}
	if planHash != req.PlanHash {
		return workflow.ApplyResult{}, fmt.Errorf("%w: plan file changed: %s has SHA-256 %s, the reviewed plan %s; run relcap plan again", fault.ErrStalePlan, req.PlanFile, planHash, req.PlanHash)
	}
	if reasons := tfplan.StaleReasons(req.Inputs, now); len(reasons) > 0 {
		return workflow.ApplyResult{}, fmt.Errorf("%w: plan %s for %s (%s): %s; run relcap plan again", fault.ErrStalePlan, workflow.ShortHash(req.Fingerprint), t.dir, t.workspace, strings.Join(reasons, "; "))
	}

	if err := a.learnSavedPlan(ctx, t, req.PlanFile); err != nil {
		return workflow.ApplyResult{}, err
	}
	// The saved plan carries its variables; passing var files or -var
	// here would be refused by Terraform.
	if err := a.applyDetached(ctx, t, req); err != nil {
		return workflow.ApplyResult{}, err
	}
	_, serial, err := stateIdentity(ctx, quiet, t, a.secrets)
	if err != nil {
		return workflow.ApplyResult{}, fmt.Errorf("plan %s applied, but reading the new state failed: %w", workflow.ShortHash(req.Fingerprint), err)
	}
	if err := os.Remove(req.PlanFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return workflow.ApplyResult{StateSerial: serial}, fmt.Errorf("plan %s applied, but deleting its plan file failed: %w", workflow.ShortHash(req.Fingerprint), err)
	}
	return workflow.ApplyResult{StateSerial: serial}, nil
}

// ForceUnlock releases the state lock lockID of env's workspace with
// terraform force-unlock. It does not check that the holder is gone: the
// caller demands that confirmation and journals it.
func (a *Adapter) ForceUnlock(ctx context.Context, env workflow.Environment, lockID string) error {
	if lockID == "" {
		return fmt.Errorf("%w: force-unlock needs a lock ID", fault.ErrUsage)
	}
	t, err := a.target(env)
	if err != nil {
		return err
	}
	unlock, err := a.lockWorkdir(ctx, t, "force-unlock")
	if err != nil {
		return err
	}
	defer unlock()
	loud, quiet, err := a.terraforms(ctx, t)
	if err != nil {
		return err
	}
	return a.withInit(ctx, t, loud, func() error {
		restore, err := selectWorkspace(ctx, quiet, t)
		if err != nil {
			return err
		}
		defer restore()
		if err := loud.ForceUnlock(ctx, lockID); err != nil {
			return fmt.Errorf("terraform force-unlock %s in %s (%s): %w", lockID, t.dir, t.workspace, err)
		}
		return nil
	})
}

// PurgeExpired deletes saved plans (and temporary files of interrupted
// plans) and settled Terraform runs (purgeRuns) last modified more than
// expiry before now, and returns the paths it deleted.
func (a *Adapter) PurgeExpired(now time.Time, expiry time.Duration) ([]string, error) {
	entries, err := os.ReadDir(a.planDir)
	if err != nil {
		return nil, fmt.Errorf("reading plan directory: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		isPlan := strings.HasSuffix(name, planSuffix)
		isTemp := strings.HasPrefix(name, ".plan-") && strings.HasSuffix(name, ".tmp")
		if e.IsDir() || (!isPlan && !isTemp) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if now.Sub(info.ModTime()) <= expiry {
			continue
		}
		p := filepath.Join(a.planDir, name)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	runs, err := a.purgeRuns(now, expiry)
	removed = append(removed, runs...)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("purging expired plans: %w", err)
	}
	return removed, nil
}

// StateLockError reports a Terraform state lock held by another writer. It
// wraps fault.ErrLocked and Terraform's own error (stderr intact).
type StateLockError struct {
	Dir       string
	Workspace string
	// ID is the lock ID to give force-unlock.
	ID string
	// Who is the holder, as user@host.
	Who string
	// Operation is Terraform's name for what the holder runs, e.g.
	// OperationTypeApply.
	Operation string
	// Path is the state the lock protects.
	Path    string
	Version string
	// Created is when the lock was taken; Age is how long it had been held
	// when relcap found it. Both are zero if Terraform did not say.
	Created time.Time
	Age     time.Duration
	// Err is Terraform's error.
	Err error
}

// Error names the holder and the lock ID, says what to do, and keeps
// Terraform's own message.
func (e *StateLockError) Error() string {
	held := ""
	if !e.Created.IsZero() {
		held = fmt.Sprintf(", held for %s since %s", e.Age.Round(time.Second), e.Created.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s: the Terraform state of %s (%s) is locked by %s (lock ID %s, operation %s%s); wait for it, or if that holder is gone force-unlock lock %s: %v",
		fault.ErrLocked, e.Dir, e.Workspace, orUnknown(e.Who), orUnknown(e.ID), orUnknown(e.Operation), held, e.ID, e.Err)
}

// Unwrap exposes fault.ErrLocked and Terraform's error to errors.Is/As.
func (e *StateLockError) Unwrap() []error { return []error{fault.ErrLocked, e.Err} }

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// terraformError maps a failed Terraform command to the workflow's
// sentinels, keeping Terraform's error (and so its stderr) wrapped.
func (a *Adapter) terraformError(ctx context.Context, op string, t target, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// terraform-exec's error already satisfies errors.Is for the
		// context's error; join it anyway for the steps it does not run.
		if !errors.Is(err, ctx.Err()) {
			err = errors.Join(err, ctx.Err())
		}
		return fmt.Errorf("terraform %s in %s (%s) interrupted: %w", op, t.dir, t.workspace, err)
	}
	msg := err.Error()
	if li, ok := parseLockInfo(msg); ok {
		li.Dir, li.Workspace, li.Err = t.dir, t.workspace, err
		if !li.Created.IsZero() {
			li.Age = a.clock.Now().Sub(li.Created)
		}
		return li
	}
	for _, s := range staleMarkers {
		if strings.Contains(msg, s) {
			return fmt.Errorf("%w: Terraform refused the saved plan for %s (%s) as stale; run relcap plan again: %w", fault.ErrStalePlan, t.dir, t.workspace, err)
		}
	}
	return fmt.Errorf("terraform %s in %s (%s): %w", op, t.dir, t.workspace, err)
}

// staleMarkers are the summaries Terraform prints when it refuses a saved
// plan because the state moved under it.
var staleMarkers = []string{
	"Saved plan is stale",
	"created from a different state lineage",
}

// parseLockInfo reads the "Lock Info:" block Terraform prints when it cannot
// acquire the state lock. This is the one place relcap parses Terraform's
// human output: terraform-exec dropped its typed lock error in v0.18.0 and
// Terraform has no machine-readable form of it, yet the captain needs the
// holder and the lock ID. The block's layout has been stable since
// Terraform 0.9 and is shared by every backend; OpenTofu prints the same.
func parseLockInfo(msg string) (*StateLockError, bool) {
	i := strings.Index(msg, "Lock Info:")
	if i < 0 {
		return nil, false
	}
	e := &StateLockError{}
	for _, line := range strings.Split(msg[i+len("Lock Info:"):], "\n") {
		// With colour on, diagnostics are framed by "│ "; strip it too.
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "│"))
		if line == "" {
			if e.ID != "" {
				break
			}
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			break
		}
		value = strings.TrimSpace(value)
		switch strings.TrimSpace(key) {
		case "ID":
			e.ID = value
		case "Path":
			e.Path = value
		case "Operation":
			e.Operation = value
		case "Who":
			e.Who = value
		case "Version":
			e.Version = value
		case "Created":
			// Terraform prints time.Time's String().
			if ts, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", value); err == nil {
				e.Created = ts
			}
		}
	}
	return e, e.ID != "" || e.Who != ""
}
