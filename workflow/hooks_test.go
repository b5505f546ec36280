package workflow_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

// TestADrillReleaseWrittenBeforeThePromotionHookStillReads: a drill's
// checkpoints as the previous version wrote them (rehearsal,
// rehearsal.unavailable beside the other keys) read into the promotion
// hook, and are written back under the same names.
func TestADrillReleaseWrittenBeforeThePromotionHookStillReads(t *testing.T) {
	old := []byte(`{"promotion.force-unverified":"rehearsal rh-web-staging-1: unavailable-image","promotion.copied":"registry.test/staging/web","rehearsal":"rh-web-staging-1","rehearsal.unavailable":true}`)
	var c workflow.Checkpoints
	require.NoError(t, json.Unmarshal(old, &c))
	require.Equal(t, workflow.PromotionHook{Rehearsal: "rh-web-staging-1", Unavailable: true}, c.PromotionHook)
	require.Equal(t, "registry.test/staging/web", c.CopiedTo)
	require.Equal(t, "rehearsal rh-web-staging-1: unavailable-image", c.ForceUnverified)

	b, err := json.Marshal(c)
	require.NoError(t, err)
	var keys map[string]any
	require.NoError(t, json.Unmarshal(b, &keys))
	require.Equal(t, "rh-web-staging-1", keys["rehearsal"])
	require.Equal(t, true, keys["rehearsal.unavailable"])

	b, err = json.Marshal(workflow.Checkpoints{})
	require.NoError(t, err)
	require.NotContains(t, string(b), "rehearsal", "an ordinary release carries no hook")
}
