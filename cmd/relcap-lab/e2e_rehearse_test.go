//go:build e2e

package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/rehearsal"
)

// testRehearsals runs relcap rehearse --all on the real lab, as a captain
// would: each drill detects its failure, names it as expected, recovers,
// and leaves staging where it was: converged on the pre-drill digest with
// kubectl agreeing, and its Terraform state untouched; the ledger holds
// each drill's four answers and times, report measures shows them, a
// drill of production is refused, and a drill killed midway is undone
// with one command.
func testRehearsals(t *testing.T, l *e2eLab, repo func(string) string) {
	// staging's Terraform root is applied (failed-apply refuses an
	// environment with pending changes), and a baseline release has an
	// earlier good one behind it (the interrupted reconciliation rolls
	// out to that one).
	out := l.relcapOK(t, "--actor", "alice", "--json", "plan", "--env", "staging")
	var plan struct {
		Fingerprint string
		Counts      struct{ Create, Update, Delete int }
	}
	require.NoError(t, json.Unmarshal([]byte(lastObject(out)), &plan), out)
	if plan.Counts.Create+plan.Counts.Update+plan.Counts.Delete > 0 {
		l.relcapOK(t, "--actor", "alice", "apply", "--plan", plan.Fingerprint)
	}
	l.convergedRelease(t, "8.0.0")
	_, base := l.convergedRelease(t, "8.1.0")
	stateBefore := l.stagingState(t)

	start := time.Now()
	code, out := l.relcapCode(t, "--actor", "alice", "--json", "rehearse", "--env", "staging", "--all")
	require.Equal(t, 0, code, "every drill passes:\n%s", out)
	t.Logf("relcap rehearse --all: %s", time.Since(start).Round(time.Second))
	var recs []rehearsal.Rehearsal
	require.NoError(t, json.Unmarshal([]byte(lastJSON(out)), &recs), out)
	require.Len(t, recs, len(rehearsal.AllDrills))
	require.Equal(t, stateBefore, l.stagingState(t), "the environment's Terraform state is as it was")
	for i, drill := range rehearsal.AllDrills {
		rh := recs[i]
		t.Run(string(drill), func(t *testing.T) {
			require.Equal(t, drill, rh.Drill)
			require.Equal(t, rehearsal.StatePassed, rh.State)
			if !drill.OnScratchCopy() {
				// The release staging last converged on: 8.1.0's, then
				// each drill's recovery (a rollback to the same digest).
				require.Equal(t, base, rh.Baseline.Digest.String(), "every drill starts from 8.1.0's digest")
			}
			require.Equal(t, rh.Expected, rh.Detected, "named as expected")
			for name, a := range map[string]workflow.Answer{"intended revision": rh.IntendedRevision, "actual artifact": rh.ActualArtifact,
				"controller status": rh.ControllerStatus, "next safe action": rh.NextSafeAction} {
				require.NotEmpty(t, a.Value, name)
				require.NotEmpty(t, a.Shown, "%s: what relcap showed", name)
			}
			if drill == rehearsal.DrillStateRestore {
				// No failure to detect or recover: its times are the
				// back-up, the restore and the proving plan.
				p := rh.Restore
				require.NotNil(t, p)
				t.Logf("%s: %s: backed up in %s, restored in %s, proved in %s", drill, rh.Detected, p.BackupTook.Round(10*time.Millisecond),
					p.RestoreTook.Round(10*time.Millisecond), p.ProveTook.Round(10*time.Millisecond))
				require.Positive(t, p.BackupTook)
				require.Positive(t, p.RestoreTook)
				require.Positive(t, p.ProveTook)
			} else {
				detect, ok := rh.TimeToDetect()
				require.True(t, ok)
				recover, ok := rh.TimeToRecover()
				require.True(t, ok)
				t.Logf("%s: detected %s (%s) in %s, recovered in %s", drill, rh.Detected, rh.NextSafeAction.Value, detect.Round(100*time.Millisecond),
					recover.Round(100*time.Millisecond))
				require.Positive(t, detect)
				require.Positive(t, recover)
			}

			// kubectl agrees: back on the pre-drill digest, every replica ready.
			image, ready, want := l.live(t, "staging")
			require.Equal(t, repo("staging")+"@"+base, image, "staging runs the pre-drill digest again")
			require.Equal(t, want, ready)
			stored := l.rehearsal(t, rh.ID)
			require.Equal(t, rh.IntendedRevision, stored.IntendedRevision, "the ledger holds the answers")
			require.Equal(t, rh.DetectedAt.UTC(), stored.DetectedAt.UTC())
		})
	}

	t.Run("report measures shows the drills", func(t *testing.T) {
		out := l.relcapOK(t, "--json", "report", "measures")
		var m struct {
			Rehearsals []struct {
				Env    string `json:"env"`
				Run    int    `json:"run"`
				Passed int    `json:"passed"`
			} `json:"rehearsals"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		var staging int
		for _, r := range m.Rehearsals {
			if r.Env == "staging" {
				staging = r.Passed
			}
		}
		require.GreaterOrEqual(t, staging, len(rehearsal.AllDrills), "%+v", m.Rehearsals)
		require.Contains(t, l.relcapOK(t, "report", "measures"), "unavailable-image")
	})

	t.Run("a drill of production is refused", func(t *testing.T) {
		code, out := l.relcapCode(t, "--actor", "alice", "rehearse", "--env", "prod", "--drill", "unavailable-image")
		require.Equal(t, 3, code, out)
		require.Contains(t, out, "--i-know")
		image, _, _ := l.live(t, "prod")
		require.NotContains(t, image, "sha256:0000", "nothing was pinned in prod")
	})

	t.Run("a drill killed midway is undone with one command", func(t *testing.T) {
		cmd := exec.Command(l.relcap, "-c", filepath.Join(l.dir, "relcap.yaml"), "--no-tui", "--actor", "alice", "rehearse", "--env", "staging", "--drill", "failed-readiness")
		cmd.Dir, cmd.Env = l.dir, append(l.environ(), l.signingEnv("alice")...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		var id string
		eventually(t, 2*time.Minute, "the drill to inject its failure", func() (bool, string) {
			for _, rh := range l.rehearsals(t) {
				if rh.State == rehearsal.StateRunning && rh.Phase == rehearsal.PhaseInjected {
					id = rh.ID
					return true, ""
				}
			}
			return false, out.String()
		})
		require.NoError(t, cmd.Process.Kill()) // kill -9: no chance to clean up
		_ = cmd.Wait()
		image, _, _ := l.live(t, "staging")
		t.Logf("killed at phase injected; staging runs %s", image)

		code, cout := l.relcapCode(t, "--actor", "alice", "rehearse", "--cleanup", id)
		require.Equal(t, 0, code, cout)
		rh := l.rehearsal(t, id)
		require.Equal(t, rehearsal.StateAbandoned, rh.State)
		image, ready, want := l.live(t, "staging")
		require.Equal(t, repo("staging")+"@"+base, image, "back on the pre-drill digest")
		require.Equal(t, want, ready)
		code, cout = l.relcapCode(t, "--actor", "alice", "rehearse", "--cleanup", id)
		require.Equal(t, 0, code, "cleaning up twice changes nothing:\n%s", cout)
	})
}

// rehearsals lists the ledger's rehearsals (relcap rehearse list --json).
func (l *e2eLab) rehearsals(t *testing.T) []rehearsal.Rehearsal {
	t.Helper()
	var rs []rehearsal.Rehearsal
	out := l.relcapOK(t, "--json", "rehearse", "list")
	require.NoError(t, json.Unmarshal([]byte(lastJSON(out)), &rs), out)
	return rs
}

func (l *e2eLab) rehearsal(t *testing.T, id string) rehearsal.Rehearsal {
	t.Helper()
	for _, rh := range l.rehearsals(t) {
		if rh.ID == id {
			return rh
		}
	}
	t.Fatalf("no rehearsal %s in the ledger", id)
	return rehearsal.Rehearsal{}
}

// stagingState is staging's Terraform state as Terraform itself serves it
// (terraform state pull in the lab's root), for comparing before and
// after the drills.
func (l *e2eLab) stagingState(t *testing.T) string {
	t.Helper()
	code, out := l.terraform(t, filepath.Join(l.dir, "infra", "staging"), "state", "pull")
	require.Equal(t, 0, code, out)
	return out
}

// lastObject is the JSON object at the end of out (after stderr's lines).
func lastObject(out string) string {
	if i := strings.LastIndex(out, "\n{"); i >= 0 {
		return out[i+1:]
	}
	return out
}

// lastJSON is the JSON document at the end of out (stdout and stderr are
// combined here; stderr's progress lines come first).
func lastJSON(out string) string {
	if i := strings.LastIndex(out, "\n["); i >= 0 {
		return out[i+1:]
	}
	return out
}
