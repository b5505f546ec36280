package report_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/report"
	"github.com/relcap/relcap/workflow/report/reporttest"
)

// A person whose only entry says their work was not measured (a command
// without a terminal) is listed as unmeasured with no effort, and the
// report does not fail on them.
func TestAPersonSeenOnlyUnmeasuredHasNoEffort(t *testing.T) {
	t.Parallel()
	data, opts := reporttest.ManagerForm()
	id := data.Releases[0].ID
	data.Effort = append(data.Effort, reporttest.Entry(id, "zed", effort.RoleApprover, "plan-review", effort.Unmeasured, 0, time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)))
	rep, err := report.BuildEffort(data, opts)
	require.NoError(t, err)
	seen := false
	for _, p := range rep.People {
		if p.Person == "zed" {
			seen = true
			require.Equal(t, 1, p.UnmeasuredReleases)
			require.Zero(t, p.MeasuredReleases)
			require.Nil(t, p.Staff, "unmeasured, not zero")
			require.Nil(t, p.Active, "unmeasured, not zero")
		}
	}
	require.True(t, seen, "zed's unmeasured work is listed as such")
}
