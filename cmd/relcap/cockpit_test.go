package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/report"
)

// TestCockpitRecordsTheScreenAndJournalVerifyCoversIt drives convergence in
// the cockpit (a terminal is simulated: IsTTY with a pipe for keys), quits
// once the release converged, and checks the screen recording is beside the
// journal, vouched for by it, and that editing it fails verification.
func TestCockpitRecordsTheScreenAndJournalVerifyCoversIt(t *testing.T) {
	t.Parallel()
	cfg, host, envRepo := promoteRepo(t)
	_, env := simulated(t, cfg, envRepo, nil)
	data := t.TempDir()
	pushImage(t, host+"/ci/web:1.0.0")
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "promote", "--env", "staging", "--image", host+"/ci/web:1.0.0")
	require.Equal(t, 0, code, out+errOut)

	keys, typing := io.Pipe()
	var screen, errb bytes.Buffer
	tio := &IO{In: keys, Out: &screen, Err: &errb, IsTTY: true,
		Env: append([]string{"XDG_DATA_HOME=" + data, "XDG_STATE_HOME=" + filepath.Join(data, "state"), "XDG_CACHE_HOME=" + filepath.Join(data, "cache"), "USER=captain", "TERM=xterm-256color"}, env...)}
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), tio, []string{"-c", cfg, "converge", "--env", "staging", "--timeout", "30s"})
	}()
	// The captain closes the cockpit once the release converged, however
	// long a busy machine takes (the ledger is shared safely between
	// handles).
	watch, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rs, err := watch.ListReleases(t.Context(), workflow.ReleaseFilter{Env: "staging"})
		return err == nil && len(rs) > 0 && rs[0].Status == workflow.ReleaseConverged
	}, 90*time.Second, 100*time.Millisecond)
	require.NoError(t, watch.Close())
	time.Sleep(300 * time.Millisecond) // let the converged state render
	_, _ = typing.Write([]byte("q"))
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		_, _ = typing.Write([]byte("q"))
		code = <-done
	}
	_ = typing.Close()
	require.Equal(t, 0, code, errb.String())
	ledger, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	releases, err := ledger.ListReleases(t.Context(), workflow.ReleaseFilter{Env: "staging"})
	require.NoError(t, err)
	require.NoError(t, ledger.Close())
	require.Equal(t, workflow.ReleaseConverged, releases[0].Status, "the cockpit drove the release to convergence")

	// The exit summary is what the ledger holds once the session closed,
	// to the second, and what report effort says of the release.
	ledger, err = store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	entries, err := ledger.Effort(t.Context(), releases[0].ID)
	require.NoError(t, err)
	require.NoError(t, ledger.Close())
	stored := effort.Tally(entries)
	require.Contains(t, errb.String(), fmt.Sprintf("effort on %s: active %s, off-tool %s · machine wait %s (not staff time)",
		releases[0].ID, effort.Format(stored.Active), effort.Format(stored.OffTool), effort.Format(stored.Wait)))
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "report", "effort", "--format", "json")
	require.Equal(t, 0, code, out+errOut)
	var rep report.Effort
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	i := slices.IndexFunc(rep.Releases, func(r report.ReleaseEffort) bool { return r.ID == releases[0].ID })
	require.GreaterOrEqual(t, i, 0, "the release is in the report")
	require.NotNil(t, rep.Releases[i].Active)
	require.Equal(t, effort.Format(stored.Active), effort.Format(rep.Releases[i].Active.D()), "the report's figure is the exit summary's")

	casts, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*", "screen.cast"))
	require.NoError(t, err)
	require.Len(t, casts, 1)
	cast, err := os.ReadFile(casts[0])
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(cast), `{"version":2`), "asciicast v2 header")
	require.Contains(t, string(cast), "Convergence")

	code, out, errOut = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, 0, code, out+errOut)

	session := filepath.Base(filepath.Dir(casts[0]))
	code, out, errOut = invokeEnv(t, data, env, "journal", "replay", session, "--speed", "0")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Convergence", "replay writes what the captain saw")

	require.NoError(t, os.WriteFile(casts[0], append(cast, []byte("[9.9, \"o\", \"forged\"]\n")...), 0o600))
	code, out, _ = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, exitBlocked, code, out)
	require.Contains(t, out, "screen.cast differs from the SHA-256")
}

// TestCockpitContinuesWhenAnotherPersonApprovesElsewhere opens the cockpit
// on a release whose plan needs someone else's approval, lets bob approve
// from his own relcap process (another ledger handle, as another machine
// on the team store would be), and checks the open cockpit goes on without
// r: it asks the captain to review the approved plan, applies it on enter
// and converges.
func TestCockpitContinuesWhenAnotherPersonApprovesElsewhere(t *testing.T) {
	t.Parallel()
	cfg, env, host := tfRepo(t, 1, true)
	data := t.TempDir()
	pushImage(t, host+"/ci/web:1.0.0")

	keys, typing := io.Pipe()
	var screen, errb bytes.Buffer
	tio := &IO{In: keys, Out: &screen, Err: &errb, IsTTY: true,
		Env: append([]string{"XDG_DATA_HOME=" + data, "XDG_STATE_HOME=" + filepath.Join(data, "state"), "XDG_CACHE_HOME=" + filepath.Join(data, "cache"), "USER=captain", "TERM=xterm-256color"}, env...)}
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), tio, []string{"-c", cfg, "release", "--env", "staging", "--image", host + "/ci/web:1.0.0", "--timeout", "60s"})
	}()
	t.Cleanup(func() { _ = typing.Close() })

	watch, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	defer watch.Close()
	release := func() *workflow.Release {
		rs, err := watch.ListReleases(t.Context(), workflow.ReleaseFilter{Env: "staging"})
		if err != nil || len(rs) == 0 {
			return nil
		}
		return rs[0]
	}
	require.Eventually(t, func() bool {
		r := release()
		return r != nil && r.Status == workflow.ReleaseBlocked
	}, 2*time.Minute, 100*time.Millisecond, "the plan waits for an approval")
	fp := release().Checkpoints.Fingerprint
	require.NotEmpty(t, fp)

	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "--actor", "bob", "approve", "--plan", fp)
	require.Equal(t, 0, code, out+errOut)

	// No r: the cockpit sees bob's approval and finishes plan review.
	require.Eventually(t, func() bool {
		r := release()
		return r != nil && r.Step(workflow.StepPlanReview).Status == workflow.Succeeded
	}, 30*time.Second, 100*time.Millisecond, "the open cockpit continued after bob approved")
	// The plan screen asks for the captain's review once it has loaded the
	// approved plan; an enter pressed before that is answered with a notice
	// and not taken, as a person would see. Press again, as they would, until
	// the apply starts: a fixed pause lost the key on a loaded machine.
	require.Eventually(t, func() bool {
		if r := release(); r != nil && r.Step(workflow.StepApply).Status != workflow.Pending {
			return true
		}
		_, _ = typing.Write([]byte("\r"))
		return false
	}, time.Minute, time.Second, "enter started the apply of the reviewed plan")
	require.Eventually(t, func() bool {
		r := release()
		return r != nil && r.Status == workflow.ReleaseConverged
	}, 2*time.Minute, 100*time.Millisecond, "enter applied the reviewed plan and the release converged:\n%s", errb.String())
	time.Sleep(300 * time.Millisecond)
	_, _ = typing.Write([]byte("q"))
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		_, _ = typing.Write([]byte("q"))
		code = <-done
	}
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, ansi.Strip(screen.String()), "approved by bob: continuing")
	approvals, err := watch.Approvals(t.Context(), approval.Plan, fp)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.Equal(t, "bob", approvals[0].Approver)
}
