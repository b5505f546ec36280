package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Gitea is the forge the lab runs for promotions through a pull request
// (issue 18). It is built like the rest of the lab, from its Go module,
// and only when asked for (relcap-lab build --gitea, up --gitea).
const (
	GiteaVersion = "1.27.3"
	giteaModule  = "code.gitea.io/gitea"
	// giteaTags: SQLite (cgo) for its database, as its release builds
	// do. No bindata: templates, locales and options are read from the
	// source tree (STATIC_ROOT_PATH), which is why the tree is kept.
	giteaTags = "sqlite sqlite_unlock_notify"
	binGitea  = "gitea"
	// giteaSrcDir is the copy of the module's tree inside the cache
	// directory: the build's main module, then Gitea's STATIC_ROOT_PATH.
	giteaSrcDir = "src"
)

// GiteaBuild is a built Gitea in the binary cache.
type GiteaBuild struct {
	Version string
	Binary  string // the gitea executable
	// StaticRoot holds Gitea's templates/, options/ and public/: its
	// [server] STATIC_ROOT_PATH (the binary embeds none of them).
	StaticRoot string
}

// GiteaDir is the cache directory of the lab's Gitea, keyed by its version.
func (b Builder) GiteaDir() string {
	return filepath.Join(b.CacheDir, "bin", "gitea-v"+GiteaVersion)
}

func (b Builder) giteaBuild() GiteaBuild {
	dir := b.GiteaDir()
	return GiteaBuild{Version: GiteaVersion, Binary: filepath.Join(dir, binGitea), StaticRoot: filepath.Join(dir, giteaSrcDir)}
}

// GiteaComplete reports whether GiteaDir holds a finished build.
func (b Builder) GiteaComplete() bool {
	g := b.giteaBuild()
	for _, p := range []string{g.Binary, filepath.Join(g.StaticRoot, "options", "locale"), filepath.Join(b.GiteaDir(), completeStamp)} {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

// BuildGitea builds Gitea into GiteaDir, or reuses the build there.
//
// Gitea cannot be built the way Argo CD is (a throw-away module requiring
// it): its go.mod says `module gitea.dev` while the proxy serves it as
// code.gitea.io/gitea, so no other module can require it and `go install
// pkg@version` refuses the mismatch. Its source is instead copied out of
// the module cache (read-only there) into the cache directory and built
// there as the main module; the copy stays, as Gitea's static root.
func (b Builder) BuildGitea(ctx context.Context) (GiteaBuild, error) {
	g := b.giteaBuild()
	if b.GiteaComplete() {
		fmt.Fprintf(b.Log, "gitea: reusing %s\n", b.GiteaDir())
		return g, nil
	}
	start := time.Now()
	dir := b.GiteaDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return GiteaBuild{}, fmt.Errorf("create gitea cache: %w", err)
	}
	_ = os.Remove(filepath.Join(dir, completeStamp))
	err := b.step("gitea "+GiteaVersion+" (module source copied to "+g.StaticRoot+", tags "+giteaTags+")", func() error {
		src, err := moduleDir(ctx, nil, giteaModule, "v"+GiteaVersion)
		if err != nil {
			return err
		}
		// A half-copied tree of an interrupted build is replaced whole.
		if err := os.RemoveAll(g.StaticRoot); err != nil {
			return err
		}
		if err := copyTree(g.StaticRoot, src); err != nil {
			return fmt.Errorf("copy %s to %s: %w", src, g.StaticRoot, err)
		}
		// main.Version is what its Makefile links in; without it Gitea
		// says "development" (and /api/v1/version too, which the SDK
		// compares against the features it calls).
		ldflags := "-X main.Version=" + GiteaVersion + " -X 'main.Tags=" + giteaTags + "'"
		return goCmd(ctx, g.StaticRoot, []string{"CGO_ENABLED=1"}, "build", "-tags", giteaTags, "-ldflags="+ldflags, "-o", g.Binary, ".")
	})
	if err != nil {
		return GiteaBuild{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, completeStamp), []byte("gitea-v"+GiteaVersion+"\n"), 0o644); err != nil {
		return GiteaBuild{}, fmt.Errorf("mark gitea cache complete: %w", err)
	}
	fmt.Fprintf(b.Log, "gitea: built into %s in %s\n", dir, since(start))
	return g, nil
}

// copyTree copies the regular files and directories of src into dst,
// writable by their owner: the module cache's copies are read-only, and
// the build (go.sum) and a later rebuild (RemoveAll) need to write.
func copyTree(dst, src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, info.Mode().Perm()|0o644)
		default:
			// Module zips hold no symlinks or devices.
			return errors.New("unexpected file type in module source: " + p)
		}
	})
}
