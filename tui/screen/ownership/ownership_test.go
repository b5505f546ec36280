package ownership_test

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/screen/ownership"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
)

func TestOwnershipListsConflictsFirstWithNextAction(t *testing.T) {
	t.Parallel()
	r := workflow.NewRelease("web-staging-1", "web", "staging", "img", "alice", time.Time{})
	st := r.Step(workflow.StepOwnership)
	st.Status, st.Message = workflow.Blocked, "1 ownership problem(s) must be resolved first"
	st.Findings = []workflow.Finding{
		{Severity: workflow.Warning, Code: "ownership.unmatched-field", Subject: "apps/Deployment web/web", Message: "spec.replicas has no named owner"},
		{Severity: workflow.Blocker, Code: "ownership.conflict", Subject: "apps/Deployment web/web", Message: "managed by terraform and argocd",
			NextAction: "give the object one owner in ownership.yaml", Evidence: map[string]string{"fields": "spec.template"}},
	}
	m := ownership.New("ownership.yaml", theme.New(false), keys.Default())
	m.SetSize(80, 24)
	m, _ = m.Update(screen.RunStateMsg{Release: r})
	v := ansi.Strip(m.View())
	require.Less(t, strings.Index(v, "ownership.conflict"), strings.Index(v, "ownership.unmatched-field"), "conflicts lead")
	require.Contains(t, v, "next: give the object one owner in ownership.yaml")
	require.Contains(t, v, "1 conflict(s)")
	golden.RequireEqual(t, m.View())
}
