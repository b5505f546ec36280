package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow"
)

// planOnCommandLine runs relcap plan --json in staging and returns the
// fingerprint and release it printed.
func planOnCommandLine(t *testing.T, data, cfg string, env []string) (fp, release string) {
	t.Helper()
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint, Release string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.Len(t, plan.Fingerprint, 64)
	return plan.Fingerprint, plan.Release
}

// TestAnInfrastructureOnlyReleaseSucceedsThroughTheCommandLine: a real
// Terraform root planned, approved and applied without an image; the next
// plan says how to end the release, relcap resume ends it succeeded (no
// image promoted, no application affected by terraform_data), and the
// next plan starts a new release.
func TestAnInfrastructureOnlyReleaseSucceedsThroughTheCommandLine(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 1, true)
	data := t.TempDir()
	fp, id := planOnCommandLine(t, data, cfg, env)
	code, _, errOut := invokeEnv(t, data, env, "-c", cfg, "--actor", "bob", "approve", "--plan", fp)
	require.Equal(t, 0, code, errOut)
	code, _, errOut = invokeEnv(t, data, env, "-c", cfg, "--actor", "alice", "apply", "--plan", fp)
	require.Equal(t, 0, code, errOut)

	sessions := func() []string {
		m, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*"))
		require.NoError(t, err)
		return m
	}
	before := sessions()
	code, _, errOut = invokeEnv(t, data, env, "-c", cfg, "--actor", "alice", "plan", "--env", "staging")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "relcap resume "+id, "the refusal names the way to end the applied release")
	require.Equal(t, before, sessions(), "the refused plan records no session (and so anchors none)")

	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "--actor", "alice", "resume", id, "--timeout", "30s")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "release "+id+" succeeded in staging (infrastructure)")

	l, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	defer l.Close()
	r, err := l.LoadRelease(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, workflow.ReleaseSucceeded, r.Status)
	require.Equal(t, workflow.ShapeInfrastructure, r.Shape)
	require.Equal(t, workflow.Skipped, r.Step(workflow.StepPromotion).Status)
	require.True(t, r.Checkpoints.Digest.IsZero(), "nothing promoted")

	_, next := planOnCommandLine(t, data, cfg, env)
	require.NotEqual(t, id, next, "the next plan is a new release")

	code, _, errOut = invokeEnv(t, data, env, "-c", cfg, "journal", "verify")
	require.Equal(t, 0, code, errOut)
}

// TestAbandonThroughTheCommandLine: relcap release abandon ends a planned
// release, deletes its plan file, and reports count it neither as a
// failure nor as in progress; an unknown release or a missing reason is a
// usage error that records nothing, and an ended release is refused.
func TestAbandonThroughTheCommandLine(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 1, true)
	data := t.TempDir()
	fp, id := planOnCommandLine(t, data, cfg, env)
	planFile := filepath.Join(data, "state", "relcap", "plans", fp+".tfplan")
	require.FileExists(t, planFile)
	sessions := func() int {
		m, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*"))
		require.NoError(t, err)
		return len(m)
	}
	before := sessions()

	code, _, errOut := invokeEnv(t, data, env, "-c", cfg, "release", "abandon", "web-staging-nope", "--reason", "x")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, `release ID "web-staging-nope": no such release in the ledger; relcap journal list shows the releases recorded`)
	code, _, errOut = invokeEnv(t, data, env, "-c", cfg, "release", "abandon", id)
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "--reason")
	require.Equal(t, before, sessions(), "a refused abandon records nothing")

	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "--actor", "carol", "release", "abandon", id, "--reason", "superseded by 1.4.3")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "abandoned by carol")
	require.NoFileExists(t, planFile, "the saved plan is deleted")

	code, _, errOut = invokeEnv(t, data, env, "-c", cfg, "release", "abandon", id, "--reason", "again")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "abandoned already")

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--json", "report", "effort")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Counts struct {
			Total, Abandoned, Failures int
			InProgress                 int `json:"in_progress"`
		} `json:"releases"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, 1, rep.Counts.Total)
	require.Equal(t, 1, rep.Counts.Abandoned)
	require.Zero(t, rep.Counts.Failures, "an abandoned release is not a change failure")
	require.Zero(t, rep.Counts.InProgress)

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--json", "report", "measures")
	require.Equal(t, 0, code, errOut)
	var m struct {
		Releases struct{ Abandoned, Failures, Finished int } `json:"failed_releases"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	require.Equal(t, 1, m.Releases.Abandoned)
	require.Zero(t, m.Releases.Failures)
	require.Zero(t, m.Releases.Finished, "it shipped nothing")

	code, _, errOut = invokeEnv(t, data, env, "-c", cfg, "journal", "verify")
	require.Equal(t, 0, code, errOut)
	journals, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*", "journal.jsonl"))
	require.NoError(t, err)
	var found bool
	for _, j := range journals {
		b, err := os.ReadFile(j)
		require.NoError(t, err)
		found = found || strings.Contains(string(b), `"`+string(workflow.KindReleaseAbandoned)+`"`)
	}
	require.True(t, found, "release.abandoned is journaled")
}
