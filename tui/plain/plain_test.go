package plain

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/finding"
)

var at = time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)

func TestPrinterWritesOneLinePerEventAndFindingsUnderIt(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := New(&out, false)
	p.Event(workflow.Event{Time: at, Kind: workflow.EventStepStarted, Step: workflow.StepOwnership})
	p.Event(workflow.Event{Time: at, Kind: workflow.EventStepFinished, Step: workflow.StepOwnership, Status: workflow.Blocked,
		Message:  "1 ownership problem(s) must be resolved first",
		Findings: []finding.Finding{{Severity: finding.Blocker, Code: "ownership.conflict", Subject: "apps/Deployment web/web", Message: "both set spec.replicas", NextAction: "give it one owner"}}})
	app := appstate.AppState{SyncStatus: "Synced", SyncRevision: "0123456789abcdef", Health: "Progressing"}
	p.Event(workflow.Event{Time: at, Kind: workflow.EventAppState, Step: workflow.StepConvergence, App: &app})
	p.Event(workflow.Event{Time: at, Kind: workflow.EventAppState, Step: workflow.StepConvergence, App: &app})

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, []string{
		"18:00:00  problem   Ownership check    started",
		"18:00:00  problem   Ownership check    BLOCKED: 1 ownership problem(s) must be resolved first",
		"          - blocker ownership.conflict apps/Deployment web/web: both set spec.replicas — next: give it one owner",
		"18:00:00  evidence  Convergence watch  sync Synced at 0123456789ab, health Progressing",
	}, lines, "an unchanged application state is printed once")
}

func TestPrinterWritesNDJSON(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := New(&out, true)
	p.Event(workflow.Event{Time: at, Kind: workflow.EventStepStarted, ReleaseID: "r1", Step: workflow.StepApply, Status: workflow.Running})
	p.Event(workflow.Event{Time: at, Kind: workflow.EventReleaseFinished, ReleaseID: "r1", Status: workflow.Succeeded, Message: "converged"})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	var e struct {
		Kind, Step, Status string
		ReleaseID          string `json:"release_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &e))
	require.Equal(t, "step-started", e.Kind)
	require.Equal(t, "apply", e.Step)
	require.Equal(t, "running", e.Status)
	require.Equal(t, "r1", e.ReleaseID)
}
