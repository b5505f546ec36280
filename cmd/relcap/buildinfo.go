package main

import (
	"runtime/debug"
	"sync"
)

// buildVersion is what `relcap version` and `relcap --version` print:
// the linker's values when a release build set them (the Makefile,
// goreleaser), else what Go embedded in the binary (`go install`, `go
// build` in a checkout): the module's version and the VCS revision, time
// and whether the tree was modified.
type buildVersion struct {
	Version, Commit, Date string
}

var (
	buildOnce sync.Once
	built     buildVersion
)

// currentBuild is this binary's buildVersion, read once.
func currentBuild() buildVersion {
	buildOnce.Do(func() {
		info, _ := debug.ReadBuildInfo()
		built = resolveBuild(version, commit, date, info)
	})
	return built
}

// resolveBuild keeps what the linker set and fills what it left at its
// default from info (nil when the binary carries no build information).
func resolveBuild(version, commit, date string, info *debug.BuildInfo) buildVersion {
	b := buildVersion{Version: version, Commit: commit, Date: date}
	if info == nil {
		return b
	}
	if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version // go install module@version
	}
	var revision, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if b.Commit == "none" && revision != "" {
		if len(revision) > 12 {
			revision = revision[:12]
		}
		if modified {
			revision += "-dirty"
		}
		b.Commit = revision
	}
	if b.Date == "unknown" && at != "" {
		b.Date = at
	}
	return b
}
