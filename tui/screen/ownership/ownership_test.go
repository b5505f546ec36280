package ownership_test

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/screen/ownership"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/finding"
)

func TestOwnershipListsConflictsFirstWithNextAction(t *testing.T) {
	t.Parallel()
	r := workflow.NewRelease("web-staging-1", "web", "staging", "img", "alice", time.Time{})
	st := r.Step(workflow.StepOwnership)
	st.Status, st.Message = workflow.Blocked, "1 ownership problem(s) must be resolved first"
	st.Findings = []finding.Finding{
		{Severity: finding.Warning, Code: "ownership.unmatched-field", Subject: "apps/Deployment web/web", Message: "spec.replicas has no named owner"},
		{Severity: finding.Blocker, Code: "ownership.conflict", Subject: "apps/Deployment web/web", Message: "managed by terraform and argocd",
			NextAction: "give the object one owner in ownership.yaml", Facts: finding.Facts{finding.Of("fields", "spec.template")}},
	}
	m := ownership.New(nil, "ownership.yaml", theme.New(false), keys.Default())
	m.SetSize(80, 24)
	m, _ = m.Update(screen.RunStateMsg{Release: r})
	v := ansi.Strip(m.View())
	require.Less(t, strings.Index(v, "ownership.conflict"), strings.Index(v, "ownership.unmatched-field"), "conflicts lead")
	require.Contains(t, v, "next: give the object one owner in ownership.yaml")
	require.Contains(t, v, "1 conflict(s)")
	golden.RequireEqual(t, m.View())
}

func TestOwnershipMatrixIsReadLiveOnX(t *testing.T) {
	t.Parallel()
	fx := fixture.New(fixture.Policy{})
	svc, _, err := fx.Service("alice")
	require.NoError(t, err)
	r, err := fixture.Start(t.Context(), svc)
	require.NoError(t, err)
	m := ownership.New(svc, "ownership.yaml", theme.New(true), keys.Default())
	m.SetSize(100, 30)
	m, _ = m.Update(screen.RunStateMsg{Release: r})
	m, cmd := m.Update(fixture.Key("x"))
	require.NotNil(t, cmd, "x reads the matrix in a command, not in Update")
	require.Contains(t, ansi.Strip(m.View()), "reading Terraform state and Argo CD")
	for _, msg := range fixture.Run(cmd) {
		m, _ = m.Update(msg)
	}
	v := ansi.Strip(m.View())
	require.Contains(t, v, "apps/Deployment web/web")
	require.Contains(t, v, "argocd app web-staging")
	require.Contains(t, v, "terraform aws_s3_bucket.assets")

	m, _ = m.Update(fixture.Key("x"))
	require.NotContains(t, ansi.Strip(m.View()), "resource(s) · x back to findings", "x again shows the findings")
}
