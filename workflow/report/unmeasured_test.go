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
// without a terminal) has no effort to report, and the report does not
// fail on them.
func TestAPersonSeenOnlyUnmeasuredHasNoEffort(t *testing.T) {
	t.Parallel()
	data, opts := reporttest.ManagerForm()
	id := data.Releases[0].ID
	data.Effort = append(data.Effort, reporttest.Entry(id, "zed", effort.RoleApprover, "plan-review", effort.Unmeasured, 0, time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)))
	rep, err := report.BuildEffort(data, opts)
	require.NoError(t, err)
	for _, p := range rep.People {
		require.NotEqual(t, "zed", p.Person)
	}
}
