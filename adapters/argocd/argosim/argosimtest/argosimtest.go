// Package argosimtest builds the fixtures tests of the Argo CD API simulator
// and of its clients share: a Git environment repository in a temporary
// directory, commits that pin digests, and a running simulator.
package argosimtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim"
)

// KustomizationPath is where Repo's kustomization lives.
const KustomizationPath = "apps/web/staging/kustomization.yaml"

// Image is the repository Kustomization pins.
const Image = "registry.example.com/staging/web"

// Digest returns a well-formed sha256 digest derived from seed.
func Digest(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Kustomization is a kustomization.yaml that pins Image@digest.
func Kustomization(digest string) string {
	return fmt.Sprintf("resources:\n  - deployment.yaml\nimages:\n  - name: web\n    newName: %s\n    digest: %s\n", Image, digest)
}

// Repo is a Git working tree on branch main.
type Repo struct {
	Dir string
	mu  sync.Mutex
	r   *git.Repository
}

// NewRepo creates a repository in a temporary directory whose first commit
// on main pins Image@Digest(seed) at KustomizationPath.
func NewRepo(t testing.TB, seed string) (*Repo, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	require.NoError(t, err)
	repo := &Repo{Dir: dir, r: r}
	rev := repo.Commit(t, map[string]string{KustomizationPath: Kustomization(Digest(seed))}, "initial release")
	return repo, rev
}

// Pin commits a kustomization pinning Image@Digest(seed) and returns the
// commit hash.
func (r *Repo) Pin(t testing.TB, seed string) string {
	t.Helper()
	return r.Commit(t, map[string]string{KustomizationPath: Kustomization(Digest(seed))}, "pin "+seed)
}

// Commit writes files (path → content) and commits them on main.
func (r *Repo) Commit(t testing.TB, files map[string]string, msg string) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	wt, err := r.r.Worktree()
	require.NoError(t, err)
	for p, content := range files {
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
		_, err := wt.Add(p)
		require.NoError(t, err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{AllowEmptyCommits: true, Author: &object.Signature{Name: "Release Captain", Email: "captain@example.com", When: time.Now()}})
	require.NoError(t, err)
	return h.String()
}

// App is an AppConfig for Repo's kustomization with fast timings: syncs
// take 50ms, rollouts 200ms, readiness failures degrade after 1s and
// self-heal acts after 300ms.
func (r *Repo) App(name string) argosim.AppConfig {
	return argosim.AppConfig{
		Name: name, RepoPath: r.Dir, Branch: "main", Path: KustomizationPath, Namespace: "web", Workload: "web",
		Automated: true, InitiallySynced: true,
		TimeToHealthy: 200 * time.Millisecond, SyncDuration: 50 * time.Millisecond,
		ProgressDeadline: time.Second, SelfHealDelay: 300 * time.Millisecond,
	}
}

// Start runs a simulator with a 50ms poll interval and apps, stopped when
// the test ends.
func Start(t testing.TB, apps ...argosim.AppConfig) (*argosim.Server, string) {
	t.Helper()
	logf := t.Logf
	if _, bench := t.(*testing.B); bench {
		logf = nil // benchmarks print every log line; keep their output to the numbers
	}
	return startWith(t, argosim.Config{PollInterval: 50 * time.Millisecond, Logf: logf}, apps)
}

// startWith runs a simulator of cfg with apps until the test ends.
func startWith(t testing.TB, cfg argosim.Config, apps []argosim.AppConfig) (*argosim.Server, string) {
	t.Helper()
	sim, err := argosim.New(cfg)
	require.NoError(t, err)
	for _, a := range apps {
		require.NoError(t, sim.AddApp(a))
	}
	addr, err := sim.Start(t.Context())
	require.NoError(t, err)
	t.Cleanup(sim.Stop)
	return sim, addr
}
