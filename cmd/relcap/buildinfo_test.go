package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVersionFromGosBuildInfo: without linker values, the version is the
// module's (go install module@version) and the commit and time Go embedded
// from the checkout, marked dirty when the tree was modified; linker
// values, when given, win.
func TestVersionFromGosBuildInfo(t *testing.T) {
	t.Parallel()
	info := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	require.Equal(t, buildVersion{Version: "dev", Commit: "0123456789ab-dirty", Date: "2026-12-01T10:00:00Z"}, resolveBuild("dev", "none", "unknown", info))
	info.Main.Version = "v1.4.0"
	info.Settings[2].Value = "false"
	require.Equal(t, buildVersion{Version: "v1.4.0", Commit: "0123456789ab", Date: "2026-12-01T10:00:00Z"}, resolveBuild("dev", "none", "unknown", info))
	require.Equal(t, buildVersion{Version: "1.5.0", Commit: "abc", Date: "2026-12-02"}, resolveBuild("1.5.0", "abc", "2026-12-02", info))
	require.Equal(t, buildVersion{Version: "dev", Commit: "none", Date: "unknown"}, resolveBuild("dev", "none", "unknown", nil))
}
