package plain_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/tui/plain"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/tfplan"
)

// TestWriteJSONWritesWhatEncodingJSONWrites: --json output keeps its
// bytes: field names, omitempty, embedded structs, times, indentation.
func TestWriteJSONWritesWhatEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	p := tfplan.Summary{Env: "staging", Fingerprint: "abc", CreatedAt: time.Date(2026, 12, 1, 9, 0, 0, 5, time.UTC),
		Changes: []tfplan.ResourceChange{{Address: "a.b", Action: tfplan.ActionCreate, Attributes: []tfplan.AttributeChange{{Path: "x", After: `"<y>&"`}}}},
		Drift:   []tfplan.DriftedResource{{ResourceChange: tfplan.ResourceChange{Address: "k.m", Action: tfplan.ActionUpdate, Object: &ownership.ManagedObject{Kind: "Deployment", Fields: []string{"spec.replicas"}}}}},
		Inputs:  tfplan.Inputs{VarFileHashes: map[string]string{"b": "2", "a": "1"}}}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(p))
	var got bytes.Buffer
	require.NoError(t, plain.WriteJSON(&got, p))
	require.Equal(t, want.String(), got.String())
}
