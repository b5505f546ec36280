package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/tui"
	"github.com/relcap/relcap/workflow"
)

// screenFile is the asciicast v2 recording of what the captain saw, beside
// the session's journal.
const screenFile = "screen.cast"

// useCockpit is true when relcap talks to a person at a terminal: both
// stdin and stdout are TTYs, and neither --no-tui nor --json was given.
func (a *app) useCockpit() bool {
	return a.io.IsTTY && !a.flags.noTUI && !a.flags.json
}

// runCockpit drives the release in the Bubble Tea cockpit, recording the
// screen beside the session's journal.
func (a *app) runCockpit(ctx context.Context, svc *workflow.Service, id string) error {
	if len(a.sessions) == 0 {
		return errors.New("cockpit: no session to record into")
	}
	return a.cockpit(ctx, svc, id, a.sessions[len(a.sessions)-1], nil)
}

// cockpit runs the cockpit on one release and records what the captain saw
// as an asciicast beside journal's file (screen.cast, then screen-2.cast…
// for later cockpits of the same session). The recording's SHA-256 is
// journaled when the cockpit closes, so journal verify covers it; it records
// the rendered screen, in which secrets are already masked.
func (a *app) cockpit(ctx context.Context, svc *workflow.Service, id string, journal *store.FileJournal, notices <-chan string) error {
	dir := filepath.Dir(journal.Path())
	name := screenFile
	var cast *os.File
	for n := 1; ; n++ {
		if n > 1 {
			name = fmt.Sprintf("screen-%d.cast", n)
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) && n < 100 {
			continue
		}
		if err != nil {
			return fmt.Errorf("screen recording in %s: %w", dir, err)
		}
		cast = f
		break
	}
	hash := sha256.New()
	runErr := tui.Run(ctx, tui.Options{Service: svc, ReleaseID: id, Input: a.io.In, Output: a.io.Out, Env: a.io.Env,
		Record: io.MultiWriter(cast, hash), Notices: notices})
	syncErr := cast.Sync()
	closeErr := cast.Close()
	if err := errors.Join(syncErr, closeErr); err != nil {
		return errors.Join(runErr, fmt.Errorf("screen recording %s: %w", cast.Name(), err))
	}
	if _, err := journal.Append(context.WithoutCancel(ctx), "screen.recorded", map[string]string{"file": name, "release": id, "sha256": hex.EncodeToString(hash.Sum(nil))}); err != nil {
		return errors.Join(runErr, err)
	}
	if errors.Is(runErr, tui.ErrQuit) {
		fmt.Fprintf(a.io.Err, "release %s paused; nothing completed is lost: relcap resume %s\n", id, id)
		return nil
	}
	return runErr
}

// verifyScreen checks the recordings a session's journal vouches for.
func verifyScreen(sessionDir string, entries []workflow.JournalEntry) *workflow.VerifyProblem {
	for _, e := range entries {
		if e.Kind != "screen.recorded" {
			continue
		}
		var rec struct{ File, SHA256 string }
		if err := json.Unmarshal(e.Data, &rec); err != nil {
			return &workflow.VerifyProblem{Seq: e.Seq, Reason: "screen.recorded entry unreadable: " + err.Error()}
		}
		b, err := os.ReadFile(filepath.Join(sessionDir, filepath.Base(rec.File)))
		if err != nil {
			return &workflow.VerifyProblem{Seq: e.Seq, Reason: fmt.Sprintf("recording %s is missing: %v", rec.File, err)}
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != rec.SHA256 {
			return &workflow.VerifyProblem{Seq: e.Seq, Reason: fmt.Sprintf("recording %s differs from the SHA-256 journaled in entry %d: it was edited or truncated", rec.File, e.Seq)}
		}
	}
	return nil
}

// openCockpit is plain `relcap`: at a terminal, the cockpit on the release
// in progress in this release repository (the newest one not finished);
// otherwise, or when there is none, what to run.
func (a *app) openCockpit(cmd *cobra.Command) error {
	ctx := cmd.Context()
	if !a.useCockpit() {
		return cmd.Help()
	}
	p, err := a.loadProject()
	if err != nil {
		return err
	}
	if _, err := a.openLedger(ctx); err != nil {
		return err
	}
	releases, err := a.ledger.ListReleases(ctx, workflow.ReleaseFilter{App: p.App, Limit: 50})
	if err != nil {
		return err
	}
	for _, r := range releases {
		if r.Kind == workflow.KindBreakGlass || r.Status.Done() {
			continue
		}
		svc, _, err := a.flowService(ctx, "cockpit", r.ID, 10*time.Minute)
		if err != nil {
			return err
		}
		return a.runCockpit(ctx, svc, r.ID)
	}
	envs := ""
	if len(p.Environments) > 0 {
		envs = p.Environments[0].Name
	}
	fmt.Fprintf(a.io.Out, "No release of %s is in progress. Start one with:\n  relcap release --env %s --image REGISTRY/REPO:TAG\nor try the whole flow on a sandbox: relcap demo\n", p.App, envs)
	return nil
}
