package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/secret/secrettest"
)

// The standing attack on "no secret anywhere, in any encoding": a release
// repository whose every credential and sensitive input is a generated
// secret (secrettest), driven through relcap's command line as a captain
// drives it, then every byte relcap wrote is scanned for every encoding of
// every secret. The tests set TF_VAR_* and DOCKER_CONFIG in the process's
// own environment, where Terraform and Docker's keychain read them, so
// each runs in a process of its own (ranInOwnProcess).

// leakRoot is the Terraform root: each sensitive variable is mirrored by
// terraform_data into an unmarked output (Terraform prints it in clear at
// apply, and its before value when the resource is replaced), and one is
// exposed outright with nonsensitive().
func leakRoot(secrets []secrettest.Secret) string {
	var b strings.Builder
	b.WriteString("variable \"replicas\" {\n  type = number\n}\n\n")
	var inputs []string
	for _, s := range secrets {
		typ := "string"
		switch {
		case s.Kind == secrettest.Number:
			typ = "number"
		case s.Value == "true" || s.Value == "false":
			typ = "bool"
		}
		fmt.Fprintf(&b, "variable %q {\n  type      = %s\n  sensitive = true\n}\n\n", s.Name, typ)
		inputs = append(inputs, fmt.Sprintf("    %s = var.%s", s.Name, s.Name))
	}
	fmt.Fprintf(&b, "resource \"terraform_data\" \"mirror\" {\n  input = {\n%s\n  }\n  triggers_replace = [var.replicas]\n}\n\n", strings.Join(inputs, "\n"))
	b.WriteString("output \"mirrored\" {\n  value = terraform_data.mirror.output\n}\n\n")
	b.WriteString("output \"exposed\" {\n  value = nonsensitive(var.url_unsafe)\n}\n")
	return b.String()
}

// viaVarFile says which secrets the var file gives; the others come from
// TF_VAR_* (a \r\n value cannot be written in a heredoc).
func viaVarFile(s secrettest.Secret) bool {
	switch s.Kind {
	case secrettest.MultiLine, secrettest.Short, secrettest.Unicode, secrettest.Number, secrettest.Trivial:
		return true
	}
	return false
}

// leakVarFile is staging.tfvars: replicas, and the secrets it gives.
func leakVarFile(replicas int, secrets []secrettest.Secret) string {
	var b strings.Builder
	fmt.Fprintf(&b, "replicas = %d\n", replicas)
	for _, s := range secrets {
		switch {
		case !viaVarFile(s):
		case s.Kind == secrettest.Number, s.Value == "true", s.Value == "false":
			fmt.Fprintf(&b, "%s = %s\n", s.Name, s.Value)
		case s.Kind == secrettest.MultiLine:
			fmt.Fprintf(&b, "%s = <<EOT\n%sEOT\n", s.Name, s.Value)
		default:
			fmt.Fprintf(&b, "%s = \"%s\"\n", s.Name, hclString(s.Value))
		}
	}
	return b.String()
}

// hclString escapes v for a quoted HCL string.
func hclString(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "${", "$${", "%{", "%%{").Replace(v)
}

// leakWorld is one release repository wired to generated secrets.
type leakWorld struct {
	gen       *secrettest.Generator
	secrets   []secrettest.Secret // every generated secret, credentials included
	tfVars    []secrettest.Secret // the Terraform root's sensitive variables
	cfg       string
	root      string // the staging Terraform root
	envRepo   string
	host      string // the registry, which asks for the generated credential
	data      string // XDG data, state (data/state) and cache (data/cache)
	env       []string
	sim       *argosim.Server
	regAuth   authn.Authenticator
	outputs   []capture
	forge     *fakeForge // nil unless the world promotes through a pull request
	ledgerDB  string     // the SQLite ledger, when that is the ledger
	ledgerURL string     // the team ledger, given as --ledger to every command
	keys      string     // the people's SSH keys, when signed
}

// capture is one command's output, scanned with its command's name.
type capture struct{ where, text string }

type leakOptions struct {
	pullRequest bool   // promote staging through a pull request on a fake forge
	signed      bool   // alice and bob sign with their own SSH keys: heads anchored, releases attested
	ledger      string // --ledger for every command; "" is the default SQLite
}

func newLeakWorld(t *testing.T, opts leakOptions) *leakWorld {
	t.Helper()
	terraformtest.Binary(t)
	gen, err := secrettest.NewGenerator()
	require.NoError(t, err)
	t.Log(gen.Replay())
	// Two the promise does not cover, declared sensitive all the same: a
	// boolean and a value of two characters (see docs/SECURITY.md); the
	// scan must say it could not look for them.
	trivial := []secrettest.Secret{{Name: "sensitive_flag", Kind: secrettest.Trivial, Value: "true"}, {Name: "two_chars", Kind: secrettest.Trivial, Value: "k9"}}
	w := &leakWorld{gen: gen, tfVars: append(gen.Sensitive(), trivial...), data: t.TempDir()}
	argoToken := gen.Token("argocd token", 40)
	forgeToken := gen.Token("forge token", 40)
	regPassword := gen.Password("registry password", 12)
	w.secrets = append(append([]secrettest.Secret{}, w.tfVars...), argoToken, forgeToken, regPassword)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(gen.Replay())
		}
	})

	// The registry asks for Basic credentials, which relcap finds where
	// `docker login` puts them.
	w.regAuth = &authn.Basic{Username: "ci-robot", Password: regPassword.Value}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ci-robot" || p != regPassword.Value {
			rw.Header().Set("WWW-Authenticate", `Basic realm="relcap leak test"`)
			http.Error(rw, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	w.host = u.Host
	docker := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("ci-robot:" + regPassword.Value))
	require.NoError(t, os.WriteFile(filepath.Join(docker, "config.json"), []byte(`{"auths":{"`+w.host+`":{"auth":"`+auth+`"}}}`), 0o600))
	t.Setenv("DOCKER_CONFIG", docker)

	cfg, openHost, envRepo := promoteRepo(t)
	w.cfg, w.envRepo = cfg, envRepo
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	c := strings.ReplaceAll(string(b), openHost, w.host)
	c = strings.Replace(c, "approvals: {plan: 1, promotion: 0, distinct_from_author: false}", "approvals: {plan: 1, promotion: 0, distinct_from_author: true}", 1)
	if opts.pullRequest {
		c = strings.Replace(c, "file: apps/web/staging/kustomization.yaml, image: web, format: kustomize}",
			"file: apps/web/staging/kustomization.yaml, image: web, format: kustomize,\n               review: {via: pull_request, forge: github, url: https://forge.invalid/team/env, token_env: FORGE_TOKEN}}", 1)
		require.Contains(t, c, "via: pull_request")
		w.forge = installFakeForge(t, envRepo)
	}
	require.NoError(t, os.WriteFile(cfg, []byte(c), 0o644))

	// The Argo CD simulator, whose token is a generated secret, pulling
	// from the registry with the credential as a kubelet would.
	var apps []argosim.AppConfig
	for _, env := range []string{"staging", "prod"} {
		apps = append(apps, argosim.AppConfig{Name: "web-" + env, RepoPath: envRepo, Branch: "main", Path: "apps/web/" + env + "/kustomization.yaml",
			Namespace: "web", Workload: "web", Automated: true, SelfHeal: true, InitiallySynced: true, TimeToHealthy: 300 * time.Millisecond,
			ProgressDeadline: time.Second, Pull: w.pull})
	}
	w.sim, err = argosim.New(argosim.Config{Token: argoToken.Value, PollInterval: 50 * time.Millisecond, Logf: t.Logf})
	require.NoError(t, err)
	for _, a := range apps {
		require.NoError(t, w.sim.AddApp(a))
	}
	addr, err := w.sim.Start(t.Context())
	require.NoError(t, err)
	t.Cleanup(w.sim.Stop)
	b, err = os.ReadFile(cfg)
	require.NoError(t, err)
	s := strings.ReplaceAll(string(b), "argocd.example.com:443", addr)
	s = strings.ReplaceAll(s, "app: web-staging}", "app: web-staging, plaintext: true}")
	s = strings.ReplaceAll(s, "app: web-prod}", "app: web-prod, plaintext: true}")
	require.NoError(t, os.WriteFile(cfg, []byte(s), 0o644))

	// The Terraform root and its inputs: a var file and TF_VAR_*.
	dir := filepath.Dir(cfg)
	w.root = filepath.Join(dir, "infra/staging")
	require.NoError(t, os.WriteFile(filepath.Join(w.root, "main.tf"), []byte(leakRoot(w.tfVars)), 0o644))
	w.setReplicas(t, 1)
	for _, s := range w.tfVars {
		if !viaVarFile(s) {
			t.Setenv("TF_VAR_"+s.Name, s.Value)
		}
	}
	own := strings.Replace(validOwnership, "rules:\n", "rules:\n  - match: {terraform_type: terraform_data}\n    owner: terraform\n", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ownership.yaml"), []byte(own), 0o644))

	w.env = []string{"ARGOCD_AUTH_TOKEN=" + argoToken.Value, "FORGE_TOKEN=" + forgeToken.Value}
	if opts.signed {
		w.keys, _, _ = withPeople(t, cfg, []string{"alice", "bob"})
	}
	if opts.ledger != "" {
		w.ledgerURL = opts.ledger
	} else {
		w.ledgerDB = filepath.Join(w.data, "relcap", "ledger.db")
	}
	return w
}

func (w *leakWorld) setReplicas(t *testing.T, n int) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(w.root, "staging.tfvars"), []byte(leakVarFile(n, w.tfVars)), 0o644))
}

// pull is the simulated kubelet's image pull, with the credential.
func (w *leakWorld) pull(image string) error {
	ref, err := name.ParseReference(image, name.Insecure)
	if err != nil {
		return err
	}
	_, err = remote.Head(ref, remote.WithAuth(w.regAuth))
	return err
}

// push pushes a random image as CI would, with the credential.
func (w *leakWorld) push(t *testing.T, tag string) string {
	t.Helper()
	img, err := random.Image(1024, 2)
	require.NoError(t, err)
	ref, err := name.ParseReference(w.host + "/ci/web:" + tag)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img, remote.WithAuth(w.regAuth)))
	d, err := img.Digest()
	require.NoError(t, err)
	return d.String()
}

// relcap runs one command as the captain does and keeps its output for
// the scan; want is its exit code.
func (w *leakWorld) relcap(t *testing.T, want int, args ...string) string {
	t.Helper()
	if w.ledgerURL != "" {
		args = append([]string{"--ledger", w.ledgerURL}, args...)
	}
	code, out, errOut := w.relcapAny(t, args...)
	require.Equal(t, want, code, "%s%s", out, errOut)
	return out
}

// relcapAny runs one command whatever its exit code; the command line is
// named in the scan without the ledger's URL.
func (w *leakWorld) relcapAny(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	env := w.env
	if w.keys != "" {
		// Each person signs with their own key; the rest run unsigned.
		key := ""
		if i := slices.Index(args, "--actor"); i >= 0 && i+1 < len(args) {
			key = filepath.Join(w.keys, args[i+1])
		}
		env = append(slices.Clone(env), signingEnv+"="+key, "SSH_AUTH_SOCK=")
	}
	code, out, errOut := invokeEnv(t, w.data, env, append([]string{"-c", w.cfg}, args...)...)
	var named []string
	for i, a := range args {
		if i > 0 && args[i-1] == "--ledger" {
			a = "<ledger URL>"
		}
		named = append(named, a)
	}
	label := "relcap " + strings.Join(named, " ")
	w.outputs = append(w.outputs, capture{"stdout of `" + label + "`", out}, capture{"stderr of `" + label + "`", errOut})
	return code, out, errOut
}

// plan plans staging as author and returns the fingerprint and release.
func (w *leakWorld) plan(t *testing.T, author string, extra ...string) (fingerprint, release string) {
	t.Helper()
	out := w.relcap(t, exitOK, append([]string{"--actor", author, "--json", "plan", "--env", "staging"}, extra...)...)
	var p struct{ Fingerprint, Release string }
	require.NoError(t, json.Unmarshal([]byte(out), &p), out)
	require.Len(t, p.Fingerprint, 64)
	return p.Fingerprint, p.Release
}

// records runs every read-side command: reports in every format, the
// journal's list, show and verify.
func (w *leakWorld) records(t *testing.T) {
	t.Helper()
	for _, format := range []string{"table", "md", "csv", "json", "html"} {
		w.relcap(t, exitOK, "report", "effort", "--format", format)
		w.relcap(t, exitOK, "report", "measures", "--format", format)
	}
	w.relcap(t, exitOK, "journal", "verify")
	var sessions []workflow.Session
	require.NoError(t, json.Unmarshal([]byte(w.relcap(t, exitOK, "--json", "journal", "list")), &sessions))
	require.NotEmpty(t, sessions)
	w.relcap(t, exitOK, "journal", "list")
	for _, s := range sessions {
		w.relcap(t, exitOK, "journal", "show", s.ID)
		w.relcap(t, exitOK, "--json", "journal", "show", s.ID)
	}
}

// scan reads every byte relcap wrote: every command's output, every file
// under XDG data/state/cache (the SQLite ledger with its -wal and -shm,
// journals, recordings, the saved plans unless private), every object of
// every git repository relcap wrote to (the environment repository, its
// journal anchors and notes, clones under the cache), the pull requests'
// bodies and extra sources (a database dump).
func (w *leakWorld) scan(t *testing.T, extra ...capture) *secrettest.Scanner {
	t.Helper()
	s := secrettest.NewScanner(w.secrets...)
	for _, c := range append(w.outputs, extra...) {
		s.Scan(c.where, []byte(c.text))
	}
	if w.forge != nil {
		for i, body := range w.forge.Bodies() {
			s.Scan(fmt.Sprintf("pull request %d's title and body, as the forge received them", i+1), []byte(body))
		}
	}
	var gitDirs []string
	require.NoError(t, s.ScanTree(w.data, func(path string) string {
		if why := privatePlan(path); why != "" {
			return why
		}
		if i := strings.Index(path, string(filepath.Separator)+"objects"+string(filepath.Separator)); i >= 0 {
			if gitDir := path[:i]; isGitDir(gitDir) {
				if !containsString(gitDirs, gitDir) {
					gitDirs = append(gitDirs, gitDir)
				}
				return "a zlib-compressed git object: every object is scanned decompressed (git cat-file)"
			}
		}
		return ""
	}))
	gitDirs = append(gitDirs, w.envRepo)
	for _, dir := range gitDirs {
		scanGit(t, s, dir)
	}
	for _, sec := range w.secrets {
		if sec.Kind == secrettest.Trivial {
			require.True(t, slices.ContainsFunc(s.Excluded(), func(e secrettest.Exclusion) bool { return e.Secret == sec.Name }),
				"%s is listed as not scanned, with why", sec.Name)
		}
	}
	scanned := func(what string) bool {
		return slices.ContainsFunc(s.Sources(), func(src string) bool { return strings.Contains(src, what) })
	}
	if w.ledgerDB != "" {
		require.True(t, scanned(w.ledgerDB), "the SQLite ledger was scanned")
	}
	require.True(t, scanned("journal.jsonl"), "the journals were scanned")
	require.True(t, scanned("git commit object"), "the environment repository's objects were scanned")
	return s
}

// privatePlan says why a saved plan is not scanned: Terraform's own file
// holds the sensitive values by design, so it must be private (0600 in a
// 0700 directory under XDG_STATE_HOME); one that is not is scanned.
func privatePlan(path string) string {
	sep := string(filepath.Separator)
	if !strings.Contains(path, sep+"state"+sep+"relcap"+sep+"plans"+sep) || !strings.HasSuffix(path, ".tfplan") {
		return ""
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		return ""
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil || di.Mode().Perm()&0o077 != 0 {
		return ""
	}
	return "a saved Terraform plan, private to its owner (0600 in a 0700 directory): it holds the inputs by design"
}

func isGitDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "HEAD"))
	return err == nil
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// scanGit scans every object of a git repository decompressed (commits,
// trees, blobs, notes, the journal anchors on refs/relcap/journal) and
// its refs.
func scanGit(t *testing.T, s *secrettest.Scanner, gitDir string) {
	t.Helper()
	refs, err := exec.Command("git", "--git-dir", gitDir, "for-each-ref", "--format=%(refname) %(objectname)").CombinedOutput()
	require.NoError(t, err, string(refs))
	s.Scan("refs of "+gitDir, refs)
	out, err := exec.Command("git", "--git-dir", gitDir, "cat-file", "--batch-all-objects", "--batch", "--unordered").Output()
	require.NoError(t, err)
	for len(out) > 0 {
		header, rest, ok := bytes.Cut(out, []byte("\n"))
		require.True(t, ok, "git cat-file's output ends in a header")
		var sha, kind string
		var size int
		_, err := fmt.Sscanf(string(header), "%s %s %d", &sha, &kind, &size)
		require.NoError(t, err, string(header))
		s.Scan(fmt.Sprintf("git %s object %s in %s", kind, sha, gitDir), rest[:size])
		out = rest[size+1:]
	}
}

// requireNoLeak fails with every finding, grouped, and logs what was not
// scanned and why.
func requireNoLeak(t *testing.T, w *leakWorld, s *secrettest.Scanner) {
	t.Helper()
	s.Report(t, w.gen.Replay())
}

// fakeForge is a fake forge.Forge: its pull requests live in memory,
// their branches and merges are real refs of the test's bare environment
// repository (a merge fast-forwards main to the reviewed head). It keeps
// every title and body it was sent, and the token the wiring gave it; its
// first merge fails with an error quoting that token, as a careless forge
// or proxy might answer.
type fakeForge struct {
	repo string

	mu          sync.Mutex
	token       string
	prs         []forge.PullRequest
	bodies      []string
	failedMerge bool
}

// installFakeForge makes the wiring build the fake for github reviews
// until the test ends (the tests that call it run alone in their process).
func installFakeForge(t *testing.T, repo string) *fakeForge {
	f := &fakeForge{repo: repo}
	saved := forgeConstructors
	forgeConstructors = map[forge.Kind]forgeConstructor{forge.GitHub: func(o forgeOptions) (forge.Forge, error) {
		f.mu.Lock()
		f.token = o.Token
		f.mu.Unlock()
		return f, nil
	}}
	t.Cleanup(func() { forgeConstructors = saved })
	return f
}

var _ forge.Forge = (*fakeForge)(nil)

func (f *fakeForge) git(args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"--git-dir", f.repo}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (f *fakeForge) OpenPullRequest(_ context.Context, req forge.OpenPullRequestRequest) (forge.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pr := range f.prs {
		if pr.Head == req.Head && pr.State == forge.PullRequestOpen {
			return pr, nil
		}
	}
	sha, err := f.git("rev-parse", "refs/heads/"+req.Head)
	if err != nil {
		return forge.PullRequest{}, fmt.Errorf("no branch %s: %s", req.Head, sha)
	}
	n := len(f.prs) + 1
	f.bodies = append(f.bodies, req.Title+"\n"+req.Body)
	pr := forge.PullRequest{Number: n, URL: fmt.Sprintf("https://forge.invalid/team/env/pull/%d", n), State: forge.PullRequestOpen,
		Title: req.Title, Author: "relcap-bot", Head: req.Head, HeadSHA: sha, Base: req.Base, Mergeable: true}
	f.prs = append(f.prs, pr)
	return pr, nil
}

func (f *fakeForge) PullRequest(_ context.Context, number int) (forge.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if number < 1 || number > len(f.prs) {
		return forge.PullRequest{}, fault.ErrNotFound
	}
	return f.prs[number-1], nil
}

func (f *fakeForge) Reviews(_ context.Context, number int) ([]forge.Review, error) {
	pr, err := f.PullRequest(context.Background(), number)
	if err != nil {
		return nil, err
	}
	return []forge.Review{{ID: 1, Login: "carol", State: forge.ReviewApproved, CommitSHA: pr.HeadSHA, At: time.Now(), Body: "looks right"}}, nil
}

func (f *fakeForge) Merge(_ context.Context, number int, headSHA, _ string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if number < 1 || number > len(f.prs) {
		return "", fault.ErrNotFound
	}
	pr := &f.prs[number-1]
	if pr.State == forge.PullRequestMerged {
		return pr.MergeCommit, nil
	}
	if !f.failedMerge {
		f.failedMerge = true
		return "", fmt.Errorf("POST https://forge.invalid/api/v3/repos/team/env/pulls/%d/merge: 502 Bad Gateway: upstream rejected Authorization: token %s", number, f.token)
	}
	if pr.HeadSHA != headSHA {
		return "", fmt.Errorf("%w: head moved", fault.ErrBlocked)
	}
	if out, err := f.git("merge-base", "--is-ancestor", "refs/heads/"+pr.Base, headSHA); err != nil {
		return "", fmt.Errorf("%w: not a fast-forward: %s", fault.ErrBlocked, out)
	}
	if out, err := f.git("update-ref", "refs/heads/"+pr.Base, headSHA); err != nil {
		return "", fmt.Errorf("merge: %s", out)
	}
	pr.State, pr.MergeCommit, pr.MergedBy, pr.MergedAt = forge.PullRequestMerged, headSHA, "relcap-bot", time.Now()
	return headSHA, nil
}

func (f *fakeForge) Where() string { return "forge.invalid/team/env (a fake forge)" }

// Bodies is every pull request's title and body as the forge got them.
func (f *fakeForge) Bodies() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.bodies...)
}

// cockpitRelease runs a release in the cockpit (a terminal simulated with
// a pipe for keys) after setting replicas: its plan waits for bob, who
// approves from his own relcap; the captain presses enter to apply (and y
// to confirm the replacement), opens
// the log pane (Terraform's own output) and quits once it converged.
func (w *leakWorld) cockpitRelease(t *testing.T, replicas int) {
	t.Helper()
	w.setReplicas(t, replicas)
	image := w.host + "/ci/web:1.0." + itoa(replicas)
	w.push(t, "1.0."+itoa(replicas))
	keys, typing := io.Pipe()
	// The cockpit writes while the test reads: buffers safe for both.
	var screen, errb syncBuilder
	tio := &IO{In: keys, Out: &screen, Err: &errb, IsTTY: true,
		Env: append([]string{"XDG_DATA_HOME=" + w.data, "XDG_STATE_HOME=" + filepath.Join(w.data, "state"), "XDG_CACHE_HOME=" + filepath.Join(w.data, "cache"), "USER=alice", "TERM=xterm-256color"}, w.env...)}
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), tio, []string{"-c", w.cfg, "release", "--env", "staging", "--image", image, "--timeout", "120s"})
	}()
	defer func() {
		_ = typing.Close()
		w.outputs = append(w.outputs, capture{"the cockpit's terminal", screen.String()}, capture{"the cockpit's stderr", errb.String()})
	}()
	watch, err := store.OpenSQLite(t.Context(), w.ledgerDB)
	require.NoError(t, err)
	defer watch.Close()
	latest := func() *workflow.Release {
		rs, err := watch.ListReleases(t.Context(), workflow.ReleaseFilter{Env: "staging"})
		if err != nil {
			return nil
		}
		for _, r := range rs {
			if r.Image == image {
				return r
			}
		}
		return nil
	}
	var r *workflow.Release
	require.Eventually(t, func() bool {
		r = latest()
		return r != nil && r.Status == workflow.ReleaseBlocked && r.Step(workflow.StepPlanReview).Status == workflow.Blocked
	}, 2*time.Minute, 100*time.Millisecond, "the cockpit's plan waits for bob:\n%s", errb.String())
	w.relcap(t, exitOK, "--actor", "bob", "approve", "--plan", r.Checkpoints.Fingerprint)
	require.Eventually(t, func() bool {
		r = latest()
		return r != nil && r.Step(workflow.StepPlanReview).Status == workflow.Succeeded
	}, 30*time.Second, 100*time.Millisecond, "the cockpit continued after bob approved")
	time.Sleep(500 * time.Millisecond)
	_, _ = typing.Write([]byte("\r"))
	time.Sleep(500 * time.Millisecond)
	_, _ = typing.Write([]byte("y")) // it replaces a resource: confirm
	converged := func() bool {
		r = latest()
		return r != nil && r.Status == workflow.ReleaseConverged
	}
	for deadline := time.Now().Add(2 * time.Minute); !converged(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			var steps []string
			for _, k := range workflow.StepKinds {
				steps = append(steps, fmt.Sprintf("%s %s", k, r.Step(k).Status))
			}
			seen := ansi.Strip(screen.String())
			t.Fatalf("enter did not apply and converge: release %s, steps %s; the screen ends:\n%s\n%s", r.Status, strings.Join(steps, ", "), seen[max(0, len(seen)-3000):], errb.String())
		}
	}
	_, _ = typing.Write([]byte("l")) // the log pane: Terraform's own plan and apply output
	time.Sleep(500 * time.Millisecond)
	_, _ = typing.Write([]byte("q"))
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_, _ = typing.Write([]byte("q"))
		<-done
	}
}

// dumpTables reads every row of every table of the database as text (the
// simple protocol's text format: bytea as hex, JSON as written), one
// capture per table.
func dumpTables(t *testing.T, conn *pgx.Conn) []capture {
	t.Helper()
	rows, err := conn.Query(t.Context(), "SELECT schemaname, tablename FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2")
	require.NoError(t, err)
	var tables []pgx.Identifier
	for rows.Next() {
		var schema, table string
		require.NoError(t, rows.Scan(&schema, &table))
		tables = append(tables, pgx.Identifier{schema, table})
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, tables)
	var dump []capture
	for _, table := range tables {
		rows, err := conn.Query(t.Context(), "SELECT * FROM "+table.Sanitize(), pgx.QueryExecModeSimpleProtocol)
		require.NoError(t, err)
		var b bytes.Buffer
		for rows.Next() {
			for _, cell := range rows.RawValues() {
				b.Write(cell)
				b.WriteByte('\n')
			}
		}
		require.NoError(t, rows.Err())
		dump = append(dump, capture{"PostgreSQL table " + table.Sanitize(), b.String()})
	}
	return dump
}

// scanRegistry scans what relcap wrote to the registry: every tag's
// manifest and config and, for each, the referrers attached to it (the
// signed release statements relcap attaches to a converged digest), with
// their layers.
func (w *leakWorld) scanRegistry(t *testing.T, s *secrettest.Scanner, repos ...string) (referrers int) {
	t.Helper()
	opts := []remote.Option{remote.WithAuth(w.regAuth), remote.WithContext(t.Context())}
	for _, repo := range repos {
		r, err := name.NewRepository(w.host+"/"+repo, name.Insecure)
		require.NoError(t, err)
		tags, err := remote.List(r, opts...)
		require.NoError(t, err)
		for _, tag := range tags {
			desc, err := remote.Get(r.Tag(tag), opts...)
			require.NoError(t, err)
			s.Scan(fmt.Sprintf("registry manifest %s:%s", r, tag), desc.Manifest)
			idx, err := remote.Referrers(r.Digest(desc.Digest.String()), opts...)
			require.NoError(t, err)
			m, err := idx.IndexManifest()
			require.NoError(t, err)
			for _, ref := range m.Manifests {
				referrers++
				img, err := remote.Image(r.Digest(ref.Digest.String()), opts...)
				require.NoError(t, err)
				raw, err := img.RawManifest()
				require.NoError(t, err)
				s.Scan(fmt.Sprintf("registry referrer %s of %s:%s", ref.Digest, r, tag), raw)
				layers, err := img.Layers()
				require.NoError(t, err)
				for i, l := range layers {
					rc, err := l.Uncompressed()
					require.NoError(t, err)
					b, err := io.ReadAll(rc)
					require.NoError(t, err)
					_ = rc.Close()
					s.Scan(fmt.Sprintf("registry referrer %s of %s:%s, layer %d", ref.Digest, r, tag, i), b)
				}
			}
		}
	}
	return referrers
}
