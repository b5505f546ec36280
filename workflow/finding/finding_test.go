package finding_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/finding"
)

// TestFindingsRecordedWithAnEvidenceMapReadWithOrderedFacts: releases
// recorded before findings had ordered facts kept an "evidence" object;
// it reads back as facts in name order, and writes back as facts.
func TestFindingsRecordedWithAnEvidenceMapReadWithOrderedFacts(t *testing.T) {
	t.Parallel()
	var f finding.Finding
	require.NoError(t, json.Unmarshal([]byte(`{"severity":"blocker","code":"ownership.conflict","subject":"apps/Deployment web/web",
		"message":"written by two","evidence":{"writers":"argocd app web, terraform kubectl_manifest.web","fields":"spec.replicas"}}`), &f))
	require.Equal(t, finding.Blocker, f.Severity)
	require.Equal(t, finding.Facts{finding.Of("fields", "spec.replicas"), finding.Of("writers", "argocd app web, terraform kubectl_manifest.web")}, f.Facts)
	require.Equal(t, "spec.replicas", f.Fact("fields"))
	require.Empty(t, f.Fact("rule"))

	b, err := json.Marshal(f)
	require.NoError(t, err)
	require.NotContains(t, string(b), `"evidence"`)
	var again finding.Finding
	require.NoError(t, json.Unmarshal(b, &again))
	require.Equal(t, f, again)
}

func TestFactsWithKeepsTheOrderAndReplacesInPlace(t *testing.T) {
	t.Parallel()
	fs := finding.Facts{finding.Of("a", "1"), finding.Of("b", "2")}
	got := fs.With("a", "9").With("c", "3")
	require.Equal(t, finding.Facts{finding.Of("a", "9"), finding.Of("b", "2"), finding.Of("c", "3")}, got)
	require.Equal(t, finding.Facts{finding.Of("a", "1"), finding.Of("b", "2")}, fs, "With copies")
	require.Equal(t, "a: 9; b: 2; c: 3", got.String())
}

func TestSortPutsBlockersFirst(t *testing.T) {
	t.Parallel()
	fs := []finding.Finding{{Severity: finding.Info, Code: "b"}, {Severity: finding.Blocker, Code: "z"}, {Severity: finding.Warning, Code: "a"}, {Severity: finding.Blocker, Code: "c"}}
	finding.Sort(fs)
	var codes []string
	for _, f := range fs {
		codes = append(codes, f.Code)
	}
	require.Equal(t, []string{"c", "z", "a", "b"}, codes)
	require.True(t, finding.Blocking(fs))
	require.Equal(t, 2, finding.Blockers(fs))
}
