package plain

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/breakglass"
	"github.com/relcap/relcap/workflow/rehearsal"
)

func TestPrintRehearsalListSaysHowToStartWhenEmpty(t *testing.T) {
	var b bytes.Buffer
	PrintRehearsalList(&b, nil)
	require.Equal(t, "no rehearsals yet: relcap rehearse --env ENV --all\n", b.String())
}

func TestPrintDrillSkippedSaysWhyTheDrillDidNotRun(t *testing.T) {
	var b bytes.Buffer
	PrintDrillSkipped(&b, rehearsal.DrillSkipped{Drill: rehearsal.DrillFailedReadiness, Env: "staging", How: "not run", Err: errors.New("no unready_image")})
	require.Equal(t, "rehearse failed-readiness in staging: not run: no unready_image\n", b.String())
}

func TestPrintBreakGlassStatusSaysWhatHoldsThePause(t *testing.T) {
	var b bytes.Buffer
	PrintBreakGlassStatus(&b, breakglass.Status{Record: breakglass.Record{ID: "bg1", App: "web-prod", Actor: "alice", Reason: "hotfix", SavedPolicy: &workflow.SyncPolicy{Automated: true}}, Left: -90 * time.Second})
	require.Contains(t, b.String(), "break-glass bg1 on web-prod by alice: EXPIRED 1m30s ago\nreason: hotfix\n")
	require.Contains(t, b.String(), "paused: automated sync is off until end restores ")
	require.Contains(t, b.String(), "no drift: the live state matches Git\n")
}

func TestWarnExpiredBreakGlassSaysHowToEndIt(t *testing.T) {
	var b bytes.Buffer
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	WarnExpiredBreakGlass(&b, []breakglass.Record{{ID: "bg1", Env: "prod", App: "web-prod", ExpiresAt: now.Add(-time.Minute)}}, now)
	require.Contains(t, b.String(), "WARNING: break-glass bg1 in prod expired 1m0s ago")
	require.Contains(t, b.String(), "relcap breakglass end --env prod\n")
}

func TestPrintProblemsCountsThem(t *testing.T) {
	var b bytes.Buffer
	PrintProblems(&b, []string{"a.yaml:1: bad", "a.yaml:2: worse"}, "relcap validate")
	require.Equal(t, "a.yaml:1: bad\na.yaml:2: worse\n2 problem(s): fix them and run relcap validate again\n", b.String())
}

func TestMovedProblemsNameEachSessionAndTheEffortReport(t *testing.T) {
	require.Empty(t, MovedProblems([]audit.MovedSession{{Session: "s1", Same: true}}, true))
	p := MovedProblems([]audit.MovedSession{{Session: "s2", Before: audit.SessionVerification{Session: "s2", Intact: true}}}, false)
	require.Equal(t, []string{"session s2 verifies differently (before: intact, after: not found)",
		"the effort report over the migrated releases differs between the two ledgers"}, p)
}
