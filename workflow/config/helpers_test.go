package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writeTree creates files under dir; a name ending in "/" is a directory.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// edit replaces old with new in s, failing the test when old is absent so a
// case can never silently test the unedited input.
func edit(t *testing.T, s, old, new string) string {
	t.Helper()
	require.Contains(t, s, old)
	return strings.Replace(s, old, new, 1)
}

// fakeStat pretends every path exists, as a directory unless its base name
// has a dot, except paths containing "missing". It keeps fuzzing and
// Parse-level tests off the filesystem.
func fakeStat(name string) (fs.FileInfo, error) {
	if strings.Contains(name, "missing") {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fakeInfo{name: filepath.Base(name), dir: !strings.Contains(filepath.Base(name), ".")}, nil
}

type fakeInfo struct {
	name string
	dir  bool
}

func (f fakeInfo) Name() string { return f.name }
func (f fakeInfo) Size() int64  { return 0 }
func (f fakeInfo) Mode() fs.FileMode {
	if f.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.dir }
func (f fakeInfo) Sys() any           { return nil }
