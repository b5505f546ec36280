package argocd

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/relcap/relcap/workflow/breakglass"
)

// v3Project is an AppProject as an Argo CD 3.6 server sends it: the v2
// fields, plus what argo-cd v2's Go types do not know and would drop on a
// decode and re-encode: spec.sourceIntegrity (field 15), a cluster
// allow-list entry narrowed by name (field 3 of the entry), and another
// team's window with andOperator (9), a description (10) and syncOverrun
// (11).
func v3Project(t *testing.T) (raw []byte, unknown [][]byte) {
	t.Helper()
	team := v1alpha1.SyncWindow{Kind: "deny", Schedule: "0 22 * * *", Duration: "1h", Applications: []string{"web-*"}, Namespaces: []string{"web"}, TimeZone: "UTC"}
	teamRaw, err := team.Marshal()
	require.NoError(t, err)
	teamRaw = protowire.AppendVarint(protowire.AppendTag(teamRaw, 9, protowire.VarintType), 1)
	teamRaw = protowire.AppendString(protowire.AppendTag(teamRaw, 10, protowire.BytesType), "CHG-1234 freeze")
	teamRaw = protowire.AppendVarint(protowire.AppendTag(teamRaw, 11, protowire.VarintType), 1)

	p := v1alpha1.AppProject{
		ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: "argocd", ResourceVersion: "4711"},
		Spec:       v1alpha1.AppProjectSpec{SourceRepos: []string{"*"}, Description: "payments team"},
	}
	base, err := p.Marshal()
	require.NoError(t, err)
	fs, err := splitFields(base)
	require.NoError(t, err)
	spec := specOf(fs)
	whitelist := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "")
	whitelist = protowire.AppendString(protowire.AppendTag(whitelist, 2, protowire.BytesType), "Namespace")
	whitelist = protowire.AppendString(protowire.AppendTag(whitelist, 3, protowire.BytesType), "payments-*")
	whitelistField := protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), whitelist)
	windowField := protowire.AppendBytes(protowire.AppendTag(nil, fieldSpecWindows, protowire.BytesType), teamRaw)
	integrity := protowire.AppendBytes(protowire.AppendTag(nil, 15, protowire.BytesType), []byte("\x0a\x04git!"))
	spec = append(append(append(spec, whitelistField...), windowField...), integrity...)

	for _, f := range fs {
		if f.num == fieldProjectSpec {
			raw = protowire.AppendBytes(protowire.AppendTag(raw, fieldProjectSpec, protowire.BytesType), spec)
			continue
		}
		raw = append(raw, f.raw...)
	}
	return raw, [][]byte{whitelistField, windowField, integrity}
}

// TestAProjectEditedAsWireBytesKeepsWhatV2DoesNotKnow: adding and removing
// relcap's window leaves every other byte of a 3.6 project as the server
// sent it, where a decode into argo-cd v2's types would have widened the
// allow-list, dropped the source integrity policy and turned the other
// team's AND window into an OR one.
func TestAProjectEditedAsWireBytesKeepsWhatV2DoesNotKnow(t *testing.T) {
	t.Parallel()
	raw, unknown := v3Project(t)

	var lossy v1alpha1.AppProject
	require.NoError(t, lossy.Unmarshal(raw))
	again, err := lossy.Marshal()
	require.NoError(t, err)
	for _, u := range unknown {
		require.False(t, bytes.Contains(again, u), "the premise: v2's types drop %x", u)
	}

	windows, err := projectWindows(raw)
	require.NoError(t, err)
	require.Len(t, windows, 1)
	require.True(t, windows[0].foreign, "another team's window, with fields relcap never writes")
	require.Equal(t, "CHG-1234 freeze", windows[0].window.Description)

	ours, _ := breakglass.DenyWindow("web-prod", time.Date(2027, 3, 5, 12, 40, 30, 0, time.UTC), 2*time.Minute)
	ours.Description = "relcap break-glass web-prod-1-bg"
	entry, err := encodeWindow(ours)
	require.NoError(t, err)
	added, err := withWindows(raw, append(windows, wireWindow{raw: entry}))
	require.NoError(t, err)
	for _, u := range unknown {
		require.True(t, bytes.Contains(added, u), "kept byte for byte: %x", u)
	}
	var typed v1alpha1.AppProject
	require.NoError(t, typed.Unmarshal(added))
	require.Equal(t, "4711", typed.ResourceVersion, "written back with the version read, so a concurrent change conflicts")
	require.Equal(t, "payments team", typed.Spec.Description)
	require.Len(t, typed.Spec.SyncWindows, 2)
	require.Equal(t, &v1alpha1.SyncWindow{Kind: "deny", Schedule: "40 12 5 3 *", Duration: "3m", Applications: []string{"web-prod"}, ManualSync: true, TimeZone: "UTC"},
		typed.Spec.SyncWindows[1])

	got, err := projectWindows(added)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.True(t, got[1].is(ours))
	require.Equal(t, ours.Description, got[1].window.Description, "a 3.1+ server keeps the description")
	require.False(t, got[0].is(ours))

	back, err := withWindows(added, got[:1])
	require.NoError(t, err)
	require.Equal(t, raw, back, "removing relcap's window gives back exactly the project that was read")
}

// TestRelcapTakesNoWindowThatAppliesDifferentlyForItsOwn: a window equal
// to relcap's in what Same compares, but with namespaces, clusters or a
// field relcap never writes, is someone else's.
func TestRelcapTakesNoWindowThatAppliesDifferentlyForItsOwn(t *testing.T) {
	t.Parallel()
	ours, _ := breakglass.DenyWindow("web-prod", time.Date(2027, 3, 5, 12, 40, 30, 0, time.UTC), 2*time.Minute)
	base := v1alpha1.SyncWindow{Kind: "deny", Schedule: ours.Schedule, Duration: "3m", Applications: []string{"web-prod"}, ManualSync: true, TimeZone: "UTC"}
	enc := func(w v1alpha1.SyncWindow, extra ...byte) []byte {
		b, err := w.Marshal()
		require.NoError(t, err)
		return append(b, extra...)
	}
	withNS, withCluster := base, base
	withNS.Namespaces, withCluster.Clusters = []string{"web"}, []string{"in-cluster"}
	andOp := protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1)
	// What a 3.6 server sends back for relcap's own window: argo-cd's
	// generated code writes every optional scalar, so andOperator and
	// syncOverrun come as false and the description as "" (the lab's
	// e2e run on 3.6 found relcap taking its own window for another's).
	as36 := protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 0)
	as36 = protowire.AppendString(protowire.AppendTag(as36, 10, protowire.BytesType), "")
	as36 = protowire.AppendVarint(protowire.AppendTag(as36, 11, protowire.VarintType), 0)
	overrun := protowire.AppendVarint(protowire.AppendTag(nil, 11, protowire.VarintType), 1)
	for name, c := range map[string]struct {
		raw  []byte
		mine bool
	}{
		"relcap's":          {enc(base), true},
		"with a namespace":  {enc(withNS), false},
		"with a cluster":    {enc(withCluster), false},
		"with andOperator":  {enc(base, andOp...), false},
		"as 3.6 sends it":   {enc(base, as36...), true},
		"with syncOverrun":  {enc(base, overrun...), false},
		"described (3.1+)":  {enc(base, protowire.AppendString(protowire.AppendTag(nil, 10, protowire.BytesType), "x")...), true},
		"another duration":  {enc(v1alpha1.SyncWindow{Kind: "deny", Schedule: ours.Schedule, Duration: "180s", Applications: []string{"web-prod"}, ManualSync: true, TimeZone: "UTC"}), true},
		"no manual syncs":   {enc(v1alpha1.SyncWindow{Kind: "deny", Schedule: ours.Schedule, Duration: "3m", Applications: []string{"web-prod"}, TimeZone: "UTC"}), false},
		"time zone default": {enc(v1alpha1.SyncWindow{Kind: "deny", Schedule: ours.Schedule, Duration: "3m", Applications: []string{"web-prod"}, ManualSync: true}), true},
	} {
		ww, err := decodeWindow(c.raw)
		require.NoError(t, err, name)
		require.Equal(t, c.mine, ww.is(ours), name)
	}
}
