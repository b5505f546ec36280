package owners_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/owners"
	"github.com/relcap/relcap/workflow/ownership"
)

func TestBlockedCountsBlockersAndNamesTheirEnvironments(t *testing.T) {
	clean := ownership.Report{Env: "staging", Findings: []finding.Finding{{Severity: finding.Warning, Code: "ownership.unowned"}}}
	require.NoError(t, owners.Blocked([]ownership.Report{clean}))

	prod := ownership.Report{Env: "prod", Findings: []finding.Finding{
		{Severity: finding.Blocker, Code: "ownership.conflict"},
		{Severity: finding.Blocker, Code: "ownership.conflict"},
	}}
	err := owners.Blocked([]ownership.Report{clean, prod})
	require.True(t, errors.Is(err, fault.ErrOwnershipConflict))
	require.EqualError(t, err, fault.ErrOwnershipConflict.Error()+": 2 ownership problem(s) in prod must be resolved first")
}
