package plain_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/ownership"
)

// TestWriteJSONWritesWhatEncodingJSONWrites: --json output keeps its
// bytes: field names, omitempty, embedded structs, times, indentation.
func TestWriteJSONWritesWhatEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	p := workflow.PlanSummary{Env: "staging", Fingerprint: "abc", CreatedAt: time.Date(2026, 12, 1, 9, 0, 0, 5, time.UTC),
		Changes: []workflow.ResourceChange{{Address: "a.b", Action: workflow.ActionCreate, Attributes: []workflow.AttributeChange{{Path: "x", After: `"<y>&"`}}}},
		Drift:   []workflow.DriftedResource{{ResourceChange: workflow.ResourceChange{Address: "k.m", Action: workflow.ActionUpdate}, Object: &ownership.ManagedObject{Kind: "Deployment", Fields: []string{"spec.replicas"}}}},
		Inputs:  workflow.PlanInputs{VarFileHashes: map[string]string{"b": "2", "a": "1"}}}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(p))
	var got bytes.Buffer
	require.NoError(t, plain.WriteJSON(&got, p))
	require.Equal(t, want.String(), got.String())
}
