package plan_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/internal/fixture"
	"github.com/relcap/relcap/tui/keys"
	"github.com/relcap/relcap/tui/screen"
	"github.com/relcap/relcap/tui/screen/plan"
	"github.com/relcap/relcap/tui/theme"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/custody"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/tfplan"
)

// blockedAtReview runs a staging release as alice until the plan review
// stops it for approvals, and returns a plan screen showing it.
func blockedAtReview(t *testing.T, pol fixture.Policy, w, h int) (plan.Model, *fixture.Env, *workflow.Release) {
	t.Helper()
	return blockedAtReviewIn(t, fixture.New(pol), w, h)
}

// blockedAtReviewIn is blockedAtReview in env, which the test may have
// changed first.
func blockedAtReviewIn(t *testing.T, env *fixture.Env, w, h int) (plan.Model, *fixture.Env, *workflow.Release) {
	t.Helper()
	svc, _, err := env.Service("alice")
	require.NoError(t, err)
	r, err := fixture.Start(t.Context(), svc)
	require.NoError(t, err)
	r, err = svc.Run(t.Context(), r.ID, nil)
	require.ErrorIs(t, err, fault.ErrApprovalRequired)

	m := plan.New(svc, theme.New(true), keys.Default())
	m.SetSize(w, h)
	m, _ = feed(t, m, screen.RunStateMsg{Release: r, Err: err})
	require.NotNil(t, m.Plan(), "the plan loads from the ledger")
	return m, env, r
}

// feed sends msg to the model, runs the commands it returns and feeds
// their results back, and returns the messages addressed to the root.
func feed(t *testing.T, m plan.Model, msg tea.Msg) (plan.Model, []tea.Msg) {
	t.Helper()
	m, cmd := m.Update(msg)
	var toRoot []tea.Msg
	for _, next := range fixture.Run(cmd) {
		switch next.(type) {
		case screen.NoticeMsg, screen.ResumeMsg:
			toRoot = append(toRoot, next)
		default:
			var more []tea.Msg
			m, more = feed(t, m, next)
			toRoot = append(toRoot, more...)
		}
	}
	return m, toRoot
}

// press sends a key and returns the messages addressed to the root.
func press(t *testing.T, m plan.Model, k string) (plan.Model, []tea.Msg) {
	t.Helper()
	return feed(t, m, fixture.Key(k))
}

func TestPlanViewGolden(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			m, _, _ := blockedAtReview(t, fixture.Policy{PlanApprovals: 1, DistinctFromAuthor: true}, size[0], size[1])
			m, _ = press(t, m, "down") // the replacement, with its masked password
			v := m.View()
			require.Equal(t, size[1], len(splitLines(v)), "the screen fills exactly its height")
			golden.RequireEqual(t, v)
		})
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func TestPlanDetailMasksSensitiveValues(t *testing.T) {
	t.Parallel()
	m, _, _ := blockedAtReview(t, fixture.Policy{PlanApprovals: 1}, 120, 40)
	m, _ = press(t, m, "down")
	v := ansi.Strip(m.View())
	require.Contains(t, v, "aws_db_instance.main")
	require.Contains(t, v, "password")
	require.Contains(t, v, tfplan.SensitiveMask)
	require.NotContains(t, v, "hunter")
	require.Contains(t, v, "forces replacement: engine_version")
	require.Contains(t, v, "(known after apply)")
}

func TestPlanSelfApprovalRefusedWhereDistinctFromAuthor(t *testing.T) {
	t.Parallel()
	m, _, _ := blockedAtReview(t, fixture.Policy{PlanApprovals: 1, DistinctFromAuthor: true}, 120, 40)
	fp := m.Fingerprint()
	v := strings.Join(strings.Fields(ansi.Strip(m.View())), " ")
	require.Contains(t, v, "relcap approve --plan "+fp+" --actor OTHER", "the screen names the command another person runs")

	m, toRoot := press(t, m, "a")
	require.Len(t, toRoot, 1)
	n := toRoot[0].(screen.NoticeMsg)
	require.True(t, n.Err)
	require.Contains(t, n.Text, "needs another approver")
	for _, b := range m.ShortHelp() {
		if b.Help().Key == "a" {
			require.False(t, b.Enabled(), "approve is not offered when policy refuses it")
		}
	}
}

func TestPlanApproveThenConfirmDestructiveApply(t *testing.T) {
	t.Parallel()
	m, env, _ := blockedAtReview(t, fixture.Policy{PlanApprovals: 1}, 120, 40)
	require.Contains(t, ansi.Strip(m.View()), "a approve as alice")

	m, toRoot := press(t, m, "a")
	require.Len(t, toRoot, 1)
	require.Contains(t, toRoot[0].(screen.NoticeMsg).Text, "approved plan")
	require.Contains(t, ansi.Strip(m.View()), "Approvals 1/1 ✓ alice")
	approvals, err := env.Ledger.Approvals(t.Context(), approval.Plan, m.Fingerprint())
	require.NoError(t, err)
	require.Len(t, approvals, 1)

	// The plan replaces a database: enter asks first, n backs out.
	m, toRoot = press(t, m, "enter")
	require.Empty(t, toRoot)
	require.True(t, m.Capturing())
	require.Contains(t, ansi.Strip(m.View()), "It deletes 0 and replaces 1 resource(s)")
	m, toRoot = press(t, m, "n")
	require.False(t, m.Capturing())
	require.Len(t, toRoot, 1)

	m, _ = press(t, m, "enter")
	_, toRoot = press(t, m, "y")
	require.Equal(t, []tea.Msg{screen.ResumeMsg{ReviewedPlan: m.Fingerprint()}}, toRoot)
}

func TestPlanFilter(t *testing.T) {
	t.Parallel()
	m, _, _ := blockedAtReview(t, fixture.Policy{PlanApprovals: 1}, 80, 24)
	for _, k := range []string{"/", "i", "a", "m"} {
		m, _ = press(t, m, k)
	}
	require.True(t, m.Capturing(), "typing a filter captures keys")
	m, _ = press(t, m, "enter")
	require.False(t, m.Capturing())
	v := ansi.Strip(m.View())
	require.Contains(t, v, `filter "iam": 1 of 3 changes`)
	require.Contains(t, v, "aws_iam_role.deployer")
	require.NotContains(t, v, "terraform_data.web")

	m, _ = press(t, m, "/")
	m, _ = press(t, m, "esc")
	require.Contains(t, ansi.Strip(m.View()), "terraform_data.web")
}

func TestPlanLateResultForOlderPlanIsDropped(t *testing.T) {
	t.Parallel()
	m, _, r := blockedAtReview(t, fixture.Policy{PlanApprovals: 1}, 80, 24)
	old := m.Fingerprint()
	// A new plan is named (stale plan re-planned); the old load finishing
	// late must not replace it.
	r2 := r.Clone()
	r2.Checkpoints.Fingerprint = "f00d"
	m2, cmd := m.Update(screen.RunStateMsg{Release: r2})
	require.NotNil(t, cmd)
	require.Equal(t, "f00d", m2.Fingerprint())
	require.Nil(t, m2.Plan())
	require.NotEqual(t, old, "f00d")
	// Loading "f00d" fails (no such plan) and is shown as such.
	for _, msg := range fixture.Run(cmd) {
		m2, _ = m2.Update(msg)
	}
	require.Contains(t, ansi.Strip(m2.View()), "cannot load plan f00d")
}

func TestNeedsReview(t *testing.T) {
	t.Parallel()
	// With no approvals required the run passes review; NeedsReview
	// holds while apply has not run.
	env2 := fixture.New(fixture.Policy{})
	svc, _, err := env2.Service("alice")
	require.NoError(t, err)
	r, err := fixture.Start(t.Context(), svc)
	require.NoError(t, err)
	r, err = svc.RunUntil(t.Context(), r.ID, nil, workflow.StepPlanReview)
	require.NoError(t, err)
	require.True(t, plan.NeedsReview(r))
	r, err = svc.Run(t.Context(), r.ID, nil)
	require.NoError(t, err)
	require.False(t, plan.NeedsReview(r))
}

// TestTerraformsOutputIsThePlanScreenWhilePlanningAndALogAfter: while the
// plan step runs, Terraform's lines fill the screen (the newest at the
// bottom); once the plan is shown, l brings them back, and scrolling reads
// the older lines.
func TestTerraformsOutputIsThePlanScreenWhilePlanningAndALogAfter(t *testing.T) {
	t.Parallel()
	m := plan.New(nil, theme.New(true), keys.Default())
	m.SetSize(80, 12)
	r := workflow.NewRelease("web-staging-x", "web", "staging", "registry.test/ci/web:1", "alice", fixture.T0)
	m, _ = feed(t, m, screen.RunStateMsg{Running: true, Release: r})
	m, _ = feed(t, m, screen.EventMsg{Event: workflow.Event{Kind: workflow.EventStepStarted, Step: workflow.StepPlanReview}})
	for i := range 30 {
		m, _ = feed(t, m, screen.EventMsg{Event: workflow.Event{Kind: workflow.EventStepOutput, Step: workflow.StepPlanReview, Output: fmt.Sprintf("terraform line %02d", i)}})
	}
	v := ansi.Strip(m.View())
	require.Len(t, splitLines(v), 12, "the pane stays inside the screen")
	require.Contains(t, v, "planning")
	require.Contains(t, v, "terraform line 29", "the newest line is visible while it runs")
	require.NotContains(t, v, "terraform line 10")
	require.Contains(t, v, "31 line(s)")
	require.Contains(t, v, "running")

	m, _ = press(t, m, "up")
	m, _ = press(t, m, "up")
	v = ansi.Strip(m.View())
	require.NotContains(t, v, "terraform line 29", "scrolled back")
	require.Contains(t, v, "terraform line 27")
	require.Contains(t, v, "2 newer below")
	m, _ = press(t, m, "G")
	require.Contains(t, ansi.Strip(m.View()), "terraform line 29", "G follows again")
	require.Equal(t, 31, m.Log().Len())
}

// TestTheLogToggleShowsTerraformBesideAReviewedPlan: after planning, the
// changes are the screen and l swaps in the log of the same run.
func TestTheLogToggleShowsTerraformBesideAReviewedPlan(t *testing.T) {
	t.Parallel()
	m, _, _ := blockedAtReview(t, fixture.Policy{PlanApprovals: 1}, 120, 40)
	m, _ = feed(t, m, screen.EventMsg{Event: workflow.Event{Kind: workflow.EventStepOutput, Step: workflow.StepPlanReview, Output: "Plan: 1 to add, 1 to change, 0 to destroy."}})
	require.NotContains(t, ansi.Strip(m.View()), "Plan: 1 to add", "the review shows the changes")
	m, _ = press(t, m, "l")
	v := ansi.Strip(m.View())
	require.Contains(t, v, "Plan: 1 to add, 1 to change, 0 to destroy.")
	require.Contains(t, v, "Plan for staging", "the header stays")
	m, _ = press(t, m, "l")
	require.NotContains(t, ansi.Strip(m.View()), "Plan: 1 to add")
}

// TestDriftIsItsOwnPartOfTheList: drift follows the changes, marked as
// changed outside Terraform, with the Kubernetes object it is.
func TestDriftIsItsOwnPartOfTheList(t *testing.T) {
	t.Parallel()
	m, _, _ := blockedAtReview(t, fixture.Policy{PlanApprovals: 1, DistinctFromAuthor: true}, 120, 40)
	p := *m.Plan()
	p.Drift = []tfplan.DriftedResource{{
		ResourceChange: tfplan.ResourceChange{Address: "kubectl_manifest.web", Type: "kubectl_manifest", Action: tfplan.ActionUpdate,
			Attributes: []tfplan.AttributeChange{{Path: "yaml_incluster", Before: tfplan.SensitiveMask, After: tfplan.SensitiveMask, Sensitive: true}},
			Object:     &ownership.ManagedObject{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web"}},
	}}
	m.SetPlan(p, approval.Check{Required: 1})
	view := ansi.Strip(m.View())
	require.Contains(t, view, "≈1 drifted")
	require.Contains(t, view, "≈ drift")
	require.Contains(t, view, "kubectl_manifest.web")
	for range len(p.Changes) {
		m, _ = press(t, m, "j")
	}
	view = ansi.Strip(m.View())
	require.Contains(t, view, "≈ kubectl_manifest.web · changed outside Terraform since")
	require.Contains(t, view, "object apps/Deployment web/web")
}

// unencryptedS3 is a fake custody.Reader: every root keeps its state in
// one S3 bucket, locked, without encrypt = true.
type unencryptedS3 struct{}

func (unencryptedS3) Backend(_ context.Context, root custody.Root) (custody.Backend, error) {
	return custody.Backend{Type: "s3", Source: custody.FromInit, Dir: root.Dir, Workspace: root.Workspace,
		Settings: map[string]string{"bucket": "acme-state", "key": strings.TrimPrefix(root.Dir, "/infra/") + ".tfstate", "use_lockfile": "true"}}, nil
}

func (unencryptedS3) RemoteStates(context.Context, custody.Root) ([]custody.RemoteState, error) {
	return nil, nil
}

// TestThePlanScreenShowsTheStatesCustody: the review says where the
// state lives and names each custody finding with the backend's
// documentation, and the screen still fills exactly its height.
func TestThePlanScreenShowsTheStatesCustody(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {200, 40}} {
		m, _, _ := blockedAtReview(t, fixture.Policy{PlanApprovals: 1, DistinctFromAuthor: true, Custody: unencryptedS3{}}, size[0], size[1])
		v := m.View()
		require.Equal(t, size[1], len(splitLines(v)))
		plain := ansi.Strip(v)
		require.Contains(t, plain, "custody.unencrypted: the s3 backend's state may be unencrypted")
		require.Contains(t, plain, "custody.shared-credentials: staging and prod reach their state with the same")
		if size[0] >= 200 {
			require.Contains(t, plain, "State s3://acme-state/staging.tfstate (workspace default); locked by an S3 lock file (use_lockfile) · https://developer.hashicorp.com/terraform/language/backend/s3")
		}
	}
}

// acceptedLocalState is a fake custody.Reader: every root keeps its state
// in a local file, which the test's project accepts.
type acceptedLocalState struct{}

func (acceptedLocalState) Backend(_ context.Context, root custody.Root) (custody.Backend, error) {
	return custody.Backend{Type: "local", Source: custody.FromDefault, Dir: root.Dir, Workspace: root.Workspace}, nil
}

func (acceptedLocalState) RemoteStates(context.Context, custody.Root) ([]custody.RemoteState, error) {
	return nil, nil
}

// TestAnAcceptedCustodyFindingShowsItsReasonFirst: at 80 columns the
// line of an accepted finding keeps the acceptance and its reason, which
// a message-first line cut off.
func TestAnAcceptedCustodyFindingShowsItsReasonFirst(t *testing.T) {
	t.Parallel()
	env := fixture.New(fixture.Policy{PlanApprovals: 1, DistinctFromAuthor: true, Custody: acceptedLocalState{}})
	env.Project.Environments[0].CustodyAccepted = map[string]string{custody.CodeLocalBackend: "one operator; nightly copy"}
	m, _, _ := blockedAtReviewIn(t, env, 80, 24)
	require.Contains(t, ansi.Strip(m.View()), "! custody.local-backend accepted: one operator; nightly copy · the state is")
}
