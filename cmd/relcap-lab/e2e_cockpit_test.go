//go:build e2e

package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/evidence"
	"github.com/relcap/relcap/workflow/report"
)

// The captain's path through the cockpit (issue 14): relcap release in a
// real terminal (tmux) against a Terraform root that lives outside the
// release repository and uses the kubectl provider, with a second person
// approving from their own shell while the cockpit stays open, every
// process on the team's store: a real PostgreSQL ledger.

// cockpitRepo is a release repository of the lab's application whose
// environments apply Terraform roots outside it: each root manages a
// ConfigMap through gavinbunney/kubectl and a terraform_data, both fed
// by the release's var file. Staging's plan needs someone else's approval;
// prod needs that for its plan and its promotion (the lab's policy).
// Everyone's relcap shares one PostgreSQL ledger, as a team does.
type cockpitRepo struct {
	cfg   string
	roots map[string]string // env → Terraform root
	// ledgerURL is the team's PostgreSQL ledger (with its password);
	// every relcap of this repository is given it as RELCAP_LEDGER.
	ledgerURL string
	// stateDB is the PostgreSQL database of the roots' pg backends,
	// given to Terraform as PG_CONN_STR: no credential in a .tf file.
	stateDB string
}

// env is what every shell of the team holds for this repository.
func (r cockpitRepo) env() []string {
	return []string{"RELCAP_LEDGER=" + r.ledgerURL, "PG_CONN_STR=" + r.stateDB}
}

// ledger opens the team's ledger beside the commands', to read what they
// recorded.
func (r cockpitRepo) ledger(t *testing.T) *store.Ledger {
	t.Helper()
	s, err := store.OpenPostgres(t.Context(), r.ledgerURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// relcapOKIn runs relcap on the team's ledger with the repository's
// configuration and wants exit 0.
func (l *e2eLab) relcapOKIn(t *testing.T, r cockpitRepo, args ...string) string {
	t.Helper()
	code, out := l.runEnv(t, r.env(), l.relcap, append([]string{"-c", r.cfg, "--no-tui"}, args...)...)
	require.Equal(t, 0, code, "relcap %s:\n%s", strings.Join(args, " "), out)
	return out
}

func (l *e2eLab) newCockpitRepo(t *testing.T) cockpitRepo {
	t.Helper()
	repo, infra := t.TempDir(), t.TempDir()
	b, err := os.ReadFile(filepath.Join(l.dir, "relcap.yaml"))
	require.NoError(t, err)
	c := string(b)
	// The release roots keep their state in PostgreSQL (Terraform's pg
	// backend, which locks), one schema per environment: the state
	// custody check passes on them, so the lab's acceptance of local
	// state files is dropped.
	require.Contains(t, c, LabCustodyAcceptance)
	c = strings.ReplaceAll(c, LabCustodyAcceptance, "")
	stateDB := pgtest.Database(t)
	roots := map[string]string{}
	for _, env := range Envs {
		root := filepath.Join(infra, env)
		require.NoError(t, os.MkdirAll(root, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "main.tf"), []byte(pgBackendTF("relcap_state_"+env)+releaseRootTF(l.env["KUBECONFIG"], env)), 0o644))
		roots[env] = root
		old := "terraform: {dir: infra/" + env + "}"
		require.Contains(t, c, old)
		c = strings.Replace(c, old, "terraform: {dir: "+strconv.Quote(root)+"}", 1)
	}
	const stagingPolicy = "approvals: {plan: 0, promotion: 0, distinct_from_author: false}"
	require.Contains(t, c, stagingPolicy)
	c = strings.Replace(c, stagingPolicy, "approvals: {plan: 1, promotion: 0, distinct_from_author: true}", 1)
	cfg := filepath.Join(repo, "relcap.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(c), 0o644))
	own, err := os.ReadFile(filepath.Join(l.dir, "ownership.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "ownership.yaml"), own, 0o644))
	return cockpitRepo{cfg: cfg, roots: roots, ledgerURL: pgtest.Database(t), stateDB: stateDB}
}

// pgBackendTF keeps a root's state in schema of the PostgreSQL database
// Terraform finds in $PG_CONN_STR (cockpitRepo.env).
func pgBackendTF(schema string) string {
	return `terraform {
  backend "pg" {
    schema_name = "` + schema + `"
  }
}

`
}

// setRelease writes the var file the release's infrastructure change is.
func (r cockpitRepo) setRelease(t *testing.T, version string) {
	t.Helper()
	for _, root := range r.roots {
		require.NoError(t, os.WriteFile(filepath.Join(root, "release.auto.tfvars"), []byte("release = \""+version+"\"\n"), 0o644))
	}
}

// kubectlProviderTF requires gavinbunney/kubectl (from the lab's mirror)
// and points it at the lab's cluster.
func kubectlProviderTF(kubeconfig string) string {
	return `terraform {
  required_providers {
    kubectl = { source = "gavinbunney/kubectl", version = "` + KubectlProviderVersion + `" }
  }
}

provider "kubectl" {
  config_path      = "` + kubeconfig + `"
  load_config_file = true
}
`
}

func releaseRootTF(kubeconfig, env string) string {
	return kubectlProviderTF(kubeconfig) + `
variable "release" {
  type = string
}

resource "terraform_data" "release" {
  input = var.release
}

resource "kubectl_manifest" "release_info" {
  server_side_apply = true
  yaml_body         = <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + AppName + `-release
  namespace: ` + Namespace(env) + `
data:
  release: "${var.release}"
YAML
}
`
}

// relcapIn runs relcap with the repository's configuration as actor.
func (l *e2eLab) relcapIn(t *testing.T, r cockpitRepo, actor string, args ...string) (int, string) {
	t.Helper()
	return l.runEnv(t, r.env(), l.relcap, append([]string{"-c", r.cfg, "--no-tui", "--actor", actor}, args...)...)
}

// signingEnv is what a person's own shell holds: their signing key (the
// lab made one per person) and no ssh-agent of the machine's.
func (l *e2eLab) signingEnv(person string) []string {
	return []string{"RELCAP_SIGNING_KEY=" + filepath.Join(l.dir, "people", person), "SSH_AUTH_SOCK="}
}

// ledger opens relcap's ledger beside the commands', to read what they
// recorded.
func (l *e2eLab) ledger(t *testing.T) *store.Ledger {
	t.Helper()
	s, err := store.OpenSQLite(t.Context(), filepath.Join(l.data, "relcap", "ledger.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// releaseOf is the newest release of image into env.
func releaseOf(t *testing.T, s *store.Ledger, env, image string) *workflow.Release {
	t.Helper()
	rs, err := s.ListReleases(t.Context(), workflow.ReleaseFilter{Env: env, Limit: 20})
	require.NoError(t, err)
	for _, r := range rs {
		if r.Image == image {
			return r
		}
	}
	return nil
}

// terraformText is what only Terraform prints: under the cockpit it may
// appear only inside the log pane, whose lines start with "│ ".
var terraformText = []string{
	"Initializing the backend", "Initializing provider plugins", "Terraform has been successfully initialized",
	"terraform_version", "Terraform used the selected providers", "Terraform will perform the following actions",
	"Apply complete! Resources:", "Creation complete after", "Modifications complete after",
}

// terminal is a tmux server of its own running one command at a fixed
// size, read back with capture-pane as the person at it sees it.
type terminal struct {
	t               *testing.T
	socket, session string
	w, h            int
	keys            int
	// opened is when the terminal started the command; pressed when each
	// key was sent, for checking what relcap measured against it.
	opened  time.Time
	pressed []time.Time
	exited  bool
	// quit is set once the captain pressed q: the cockpit gives the
	// terminal back, and relcap's closing lines (the release summary, then
	// the session's seal) come before EXIT=, so those screens are not
	// cockpit frames.
	quit bool
	// screens are the distinct captures, in order, for the checks that
	// span the whole session and for failure reports.
	screens []string
}

var terminals atomic.Int64

func (l *e2eLab) openTerminal(t *testing.T, w, h int, env []string, command string) *terminal {
	t.Helper()
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is needed: make e2e installs it (apt-get install tmux)")
	term := &terminal{t: t, socket: fmt.Sprintf("relcap-e2e-%d-%d", os.Getpid(), terminals.Add(1)), session: "cockpit", w: w, h: h}
	cmd := exec.Command("tmux", "-L", term.socket, "-f", "/dev/null", "new-session", "-d", "-s", term.session,
		"-x", strconv.Itoa(w), "-y", strconv.Itoa(h), command+"; echo EXIT=$?; sleep 900")
	cmd.Dir = l.dir
	cmd.Env = append(append(l.environ(), "TERM=xterm-256color"), env...)
	term.opened = time.Now()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "tmux new-session: %s", out)
	t.Cleanup(func() {
		if t.Failed() && len(term.screens) > 0 {
			t.Logf("the terminal's last screen (%dx%d):\n%s", w, h, term.screens[len(term.screens)-1])
		}
		_ = exec.Command("tmux", "-L", term.socket, "kill-server").Run()
	})
	return term
}

// capture reads the screen and checks what must hold on every screen the
// captain sees: the cockpit's header is on top and Terraform's text is
// only inside the log pane.
func (term *terminal) capture() string {
	t := term.t
	t.Helper()
	b, err := exec.Command("tmux", "-L", term.socket, "capture-pane", "-p", "-t", term.session).Output()
	require.NoError(t, err, "tmux capture-pane")
	s := strings.TrimRight(string(b), "\n")
	if len(term.screens) == 0 || term.screens[len(term.screens)-1] != s {
		term.screens = append(term.screens, s)
	}
	if strings.Contains(s, "EXIT=") {
		term.exited = true
	}
	if term.exited || term.quit || strings.TrimSpace(s) == "" {
		return s // before the first frame and after the cockpit closed
	}
	lines := strings.Split(s, "\n")
	require.LessOrEqual(t, len(lines), term.h, "the screen is at most %d lines:\n%s", term.h, s)
	require.True(t, strings.HasPrefix(lines[0], "relcap "), "the cockpit's header is the top line, not garbled:\n%s", s)
	for _, line := range lines {
		for _, text := range terraformText {
			if strings.Contains(line, text) {
				require.True(t, strings.HasPrefix(line, "│ "), "Terraform's %q outside the log pane:\n%s", text, s)
			}
		}
	}
	return s
}

// waitFor polls the screen until ok says so, and returns that screen.
func (term *terminal) waitFor(what string, within time.Duration, ok func(screen string) bool) string {
	t := term.t
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := term.capture()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %s for %s; the screen:\n%s", within, what, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (term *terminal) waitForText(text string, within time.Duration) string {
	term.t.Helper()
	return term.waitFor(strconv.Quote(text), within, func(s string) bool { return strings.Contains(s, text) })
}

// press sends one key, as tmux send-keys names it.
func (term *terminal) press(key string) {
	term.t.Helper()
	out, err := exec.Command("tmux", "-L", term.socket, "send-keys", "-t", term.session, key).CombinedOutput()
	require.NoError(term.t, err, "tmux send-keys %s: %s", key, out)
	term.keys++
	term.pressed = append(term.pressed, time.Now())
}

// engagedAtLeast is the active effort the harness knows the person spent:
// the gaps between their key presses that are within the idle threshold,
// less a second per key for tmux's delivery. relcap may count more (from
// the moment the release loaded to the first key), never less.
func (term *terminal) engagedAtLeast(idle time.Duration) time.Duration {
	var d time.Duration
	for i := 1; i < len(term.pressed); i++ {
		if gap := term.pressed[i].Sub(term.pressed[i-1]); gap <= idle {
			d += gap
		}
	}
	return max(0, d-time.Duration(len(term.pressed))*time.Second)
}

// reviewAs opens relcap review in a terminal of person's own, approves
// with a after reading for a moment, and closes it with q: the second
// person's part of a routine release.
func (l *e2eLab) reviewAs(t *testing.T, r cockpitRepo, person string, args ...string) *terminal {
	t.Helper()
	term := l.openTerminal(t, 120, 40, append(append([]string{"USER=" + person}, l.signingEnv(person)...), r.env()...),
		l.relcap+" -c "+r.cfg+" --actor "+person+" review "+strings.Join(args, " "))
	s := term.waitForText("a approve as "+person, time.Minute)
	require.Contains(t, s, "review as "+person)
	require.NotContains(t, s, "enter apply", "no apply from a review")
	time.Sleep(3 * time.Second) // reading what they approve
	term.press("a")
	term.waitForText("approved", 30*time.Second)
	term.quit = true
	term.press("q")
	term.waitForText("EXIT=0", 30*time.Second)
	return term
}

// sawLine reports whether any screen so far had a line matching re.
func (term *terminal) sawLine(re *regexp.Regexp) bool {
	for _, s := range term.screens {
		for _, line := range strings.Split(s, "\n") {
			if re.MatchString(line) {
				return true
			}
		}
	}
	return false
}

var (
	planInPane  = regexp.MustCompile(`^│ Plan: 2 to add, 0 to change, 0 to destroy\.`)
	applyInPane = regexp.MustCompile(`^│ Apply complete! Resources: `)
	pinInDiff   = regexp.MustCompile(`^\s*\+.*@sha256:[0-9a-f]{8}`)
	// planApprovedByBob is the plan screen's approvals line once bob's
	// approval counts; it stays, unlike the notice saying so.
	planApprovedByBob = regexp.MustCompile(`Approvals 1/1 ✓ bob`)
)

// cockpitRelease drives relcap release for env in a w×h terminal as the
// captain, with bob approving from another process what the environment's
// policy asks. It returns the release and the terminal.
func (l *e2eLab) cockpitRelease(t *testing.T, r cockpitRepo, env, ref string, w, h int) (*workflow.Release, *terminal) {
	t.Helper()
	ledger := r.ledger(t)
	term := l.openTerminal(t, w, h, append(append([]string{"USER=captain"}, l.signingEnv("captain")...), r.env()...),
		l.relcap+" -c "+r.cfg+" release --env "+env+" --image "+ref+" --timeout 4m")

	// Ownership passes, Terraform plans (its output in the log pane), and
	// the plan waits for another person.
	term.waitFor("the plan to wait for another person's approval", 3*time.Minute, func(s string) bool {
		return strings.Contains(s, "needs 1 more approval")
	})
	rel := releaseOf(t, ledger, env, ref)
	require.NotNil(t, rel, "the cockpit started a release of %s", ref)
	require.Equal(t, workflow.Succeeded, rel.Step(workflow.StepOwnership).Status)
	fp := rel.Checkpoints.Fingerprint
	require.Len(t, fp, 64)
	// The captain reads Terraform's own output in the log pane.
	term.press("l")
	term.waitFor("Terraform's plan summary in the log pane", 30*time.Second, func(string) bool { return term.sawLine(planInPane) })
	term.press("l")

	// Someone holding alice's key cannot approve as bob.
	code, out := l.runEnv(t, append(l.signingEnv("alice"), r.env()...), l.relcap, "-c", r.cfg, "--no-tui", "--actor", "bob", "approve", "--plan", fp)
	require.Equal(t, 3, code, "alice's key typed as --actor bob:\n%s", out)
	require.Contains(t, out, "cannot sign as bob")
	// bob reviews the plan on his own review screen and approves it there,
	// signed with his key; the open cockpit picks it up.
	l.reviewAs(t, r, "bob", "--plan", fp)
	term.waitFor("bob's approval on the captain's screen", time.Minute, func(s string) bool {
		return strings.Contains(s, "approved by bob") || planApprovedByBob.MatchString(s)
	})
	term.waitFor("the captain's review of the approved plan", time.Minute, func(s string) bool {
		return strings.Contains(s, "enter apply") || strings.Contains(s, "enter") && strings.Contains(s, "apply this plan")
	})
	term.press("Enter")

	// Apply, promotion (prod waits for bob again, on the pinned change),
	// convergence.
	promotionApproved := false
	term.waitFor("the release to converge", 5*time.Minute, func(s string) bool {
		switch {
		case strings.Contains(s, "y apply") && strings.Contains(s, "It deletes"):
			t.Fatalf("a plan that only creates asks no confirmation:\n%s", s)
		case !promotionApproved && strings.Contains(s, "pinned change needs approval"):
			cur := releaseOf(t, ledger, env, ref)
			require.NotEmpty(t, cur.Checkpoints.EnvBranch, "the pin exists before its approval")
			require.True(t, term.sawLine(pinInDiff), "the promotion screen shows the pin's diff while it waits:\n%s", s)
			l.reviewAs(t, r, "bob", "--release", cur.ID)
			t.Logf("%s: bob approved the pinned change %s on his review screen while the cockpit waited", env, cur.Checkpoints.EnvBranch)
			promotionApproved = true
		}
		cur := releaseOf(t, ledger, env, ref)
		return cur.Status == workflow.ReleaseConverged && strings.Contains(s, "converged")
	})
	if env == "prod" {
		require.True(t, promotionApproved, "prod's promotion waited for bob's approval of the pinned change")
	}
	if !term.sawLine(applyInPane) {
		// A quick apply can pass between two looks: the log pane keeps it.
		term.press("2")
		term.press("l")
		term.waitFor("the apply's output in the log pane", 30*time.Second, func(string) bool { return term.sawLine(applyInPane) })
		term.press("l")
	}
	if !term.sawLine(pinInDiff) {
		// Staging's promotion needs no approval and passes quickly: the
		// captain looks back at it.
		// At 80×24 the diff's pinned line is below the fold: j scrolls.
		term.press("3")
		term.waitForText("Environment repo change", 30*time.Second)
		for i := 0; i < 15 && !term.sawLine(pinInDiff); i++ {
			term.press("j")
			time.Sleep(300 * time.Millisecond)
			term.capture()
		}
		require.True(t, term.sawLine(pinInDiff), "the promotion screen shows the pin's diff; the screen:\n%s", term.capture())
	}
	term.quit = true
	term.press("q")
	term.waitForText("EXIT=0", time.Minute)
	closed := time.Now()
	rel = releaseOf(t, ledger, env, ref)

	// What relcap measured of this release, per person, against what the
	// harness did (issue 20): the captain's inputs are exactly the keys
	// sent, their active effort within what the harness timed, and bob's
	// review is his measured effort as approver.
	entries, err := ledger.Effort(t.Context(), rel.ID)
	require.NoError(t, err)
	var captain, bob time.Duration
	inputs := 0
	for _, e := range entries {
		switch {
		case e.Kind == "unmeasured":
			t.Fatalf("everything in a cockpit release is measured: %+v", e)
		case e.Kind == "active" && e.Person == "captain":
			require.Equal(t, "captain", string(e.Role))
			captain += e.Duration
			inputs += e.Inputs
		case e.Kind == "active" && e.Person == "bob":
			require.Equal(t, "approver", string(e.Role))
			bob += e.Duration
		}
	}
	idle := 2 * time.Minute // the lab's effort.idle_threshold
	t.Logf("%s: captain %s active, %d key(s) (harness: %d keys, at least %s engaged, %s open); bob %s as approver",
		env, captain.Round(time.Second), inputs, term.keys, term.engagedAtLeast(idle).Round(time.Second), closed.Sub(term.opened).Round(time.Second), bob.Round(time.Second))
	require.Equal(t, term.keys, inputs, "the ledger counts every key the captain pressed")
	require.LessOrEqual(t, inputs, 25, "a routine release takes at most 25 key presses")
	require.LessOrEqual(t, captain, 15*time.Minute, "a routine release costs at most 15 minutes of the captain's measured time")
	require.GreaterOrEqual(t, captain, term.engagedAtLeast(idle), "relcap counts at least the gaps between the captain's keys")
	require.LessOrEqual(t, captain, closed.Sub(term.opened), "and never more than the cockpit was open")
	require.Positive(t, bob, "bob's review is measured")
	u, err := url.Parse(r.ledgerURL)
	require.NoError(t, err)
	password, ok := u.User.Password()
	require.True(t, ok && password != "", "the team's ledger URL holds a password")
	for _, s := range term.screens {
		require.NotContains(t, s, password, "the ledger's password is never on the captain's screen")
	}
	return rel, term
}

// testCockpitRelease: staging at 80×24, then prod at 132×40, through the
// cockpit; then the same kind of release scripted on the command line.
func testCockpitRelease(t *testing.T, l *e2eLab, repo func(string) string) {
	r := l.newCockpitRepo(t)
	ref, digest := l.pushBuild(t, "3.0.0")
	r.setRelease(t, "3.0.0")

	releases := map[string]*workflow.Release{}
	for _, size := range []struct {
		env  string
		w, h int
	}{{"staging", 80, 24}, {"prod", 132, 40}} {
		start := time.Now()
		rel, term := l.cockpitRelease(t, r, size.env, ref, size.w, size.h)
		t.Logf("%s through the cockpit at %dx%d: %s, %d key(s), %d distinct screens", size.env, size.w, size.h, time.Since(start).Round(time.Second), term.keys, len(term.screens))
		require.Equal(t, workflow.ReleaseConverged, rel.Status)
		require.Equal(t, "captain", rel.Captain)
		releases[size.env] = rel

		// kubectl agrees: the promoted digest runs, every replica ready,
		// and Terraform's ConfigMap holds the release.
		image, ready, want := l.live(t, size.env)
		require.Equal(t, repo(size.env)+"@"+digest, image, "the apiserver runs the promoted digest")
		require.Equal(t, want, ready)
		require.Equal(t, "3.0.0", l.kubectl(t, "get", "configmap", AppName+"-release", "-n", Namespace(size.env), "-o", "jsonpath={.data.release}"),
			"terraform applied the reviewed plan through the kubectl provider")
	}

	// The record: the team ledger's journals verify (exit 0: every chain,
	// the ledger's copy and head, recordings, signed and anchored head)
	// and the sessions replay. The environment repository also anchors
	// the other tests' sessions, kept in the lab's SQLite ledger: their
	// signed heads name that ledger, so they are not taken for sessions
	// deleted from this one.
	out := l.relcapOKIn(t, r, "journal", "verify")
	require.NotContains(t, out, "TAMPERED")
	require.Regexp(t, `also anchors [1-9]\d* session\(s\) of other ledgers`, out)
	var sessions []workflow.Session
	require.NoError(t, json.Unmarshal([]byte(l.relcapOKIn(t, r, "--json", "journal", "list")), &sessions))
	for env, rel := range releases {
		i := slices.IndexFunc(sessions, func(s workflow.Session) bool { return s.ReleaseID == rel.ID && s.Command == "release" })
		require.GreaterOrEqual(t, i, 0, "the cockpit's session of %s is linked to %s", env, rel.ID)
		replay := l.relcapOKIn(t, r, "journal", "replay", sessions[i].ID, "--speed", "0")
		require.Contains(t, replay, "Convergence", "replay plays what the captain saw")
		require.Contains(t, replay, "Plan: 2 to add", "Terraform's output as the captain saw it in the log pane")
		show := l.relcapOKIn(t, r, "journal", "show", sessions[i].ID)
		require.Contains(t, show, "step.output", "Terraform's output is kept in the journal")
		require.Contains(t, show, "Apply complete!")
		approvals := slices.IndexFunc(sessions, func(s workflow.Session) bool { return s.ReleaseID == rel.ID && s.Actor == "bob" })
		require.GreaterOrEqual(t, approvals, 0, "bob's approval of %s is linked to it", env)
	}

	// The same release scripted, one command per process: the same record.
	ref2, digest2 := l.pushBuild(t, "3.1.0")
	r.setRelease(t, "3.1.0")
	code, out := l.relcapIn(t, r, "captain", "plan", "--env", "staging")
	require.Equal(t, 0, code, "the plan is reviewed; it waits for bob:\n%s", out)
	newest, err := r.ledger(t).ListReleases(t.Context(), workflow.ReleaseFilter{Env: "staging", Limit: 1})
	require.NoError(t, err)
	require.Len(t, newest, 1)
	planned := struct{ Fingerprint, Release string }{newest[0].Checkpoints.Fingerprint, newest[0].ID}
	require.Contains(t, out, "started release "+planned.Release+" in staging", "plan says which release it started")
	require.Contains(t, out, "relcap approve --plan "+planned.Fingerprint)
	code, out = l.relcapIn(t, r, "bob", "approve", "--plan", planned.Fingerprint)
	require.Equal(t, 0, code, out)
	code, out = l.relcapIn(t, r, "captain", "apply", "--plan", planned.Fingerprint)
	require.Equal(t, 0, code, out)
	code, out = l.relcapIn(t, r, "captain", "promote", "--env", "staging", "--image", ref2)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, planned.Release, "promote joins the release plan started")
	code, out = l.relcapIn(t, r, "captain", "converge", "--env", "staging", "--timeout", "3m")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, digest2)

	scripted := releaseOf(t, r.ledger(t), "staging", ref2)
	require.NotNil(t, scripted)
	require.Equal(t, planned.Release, scripted.ID)
	require.Equal(t, workflow.ReleaseConverged, scripted.Status)
	cockpit := releases["staging"]
	require.Equal(t, cockpit.Kind, scripted.Kind)
	require.Len(t, scripted.Steps, len(cockpit.Steps))
	for i := range cockpit.Steps {
		a, b := cockpit.Steps[i], scripted.Steps[i]
		require.Equal(t, a.Kind, b.Kind)
		require.Equal(t, a.Status, b.Status, a.Kind.String())
		require.Equal(t, evidenceKinds(a.Evidence), evidenceKinds(b.Evidence), "%s: the same kinds of evidence", a.Kind)
	}
	require.NoError(t, json.Unmarshal([]byte(l.relcapOKIn(t, r, "--json", "journal", "list")), &sessions))
	var commands []string
	for _, s := range sessions {
		if s.ReleaseID == scripted.ID {
			commands = append(commands, s.Command)
		}
	}
	for _, c := range []string{"plan", "approve", "apply", "promote", "converge"} {
		require.Contains(t, commands, c, "the %s session is linked to the release", c)
	}
	require.Equal(t, "3.1.0", l.kubectl(t, "get", "configmap", AppName+"-release", "-n", Namespace("staging"), "-o", "jsonpath={.data.release}"))
	image, _, _ := l.live(t, "staging")
	require.Equal(t, repo("staging")+"@"+digest2, image)

	requireSeedsTable(t, l, r)
}

// requireSeedsTable is the engagement's before/after table from real use:
// relcap report effort --baseline 3 over the releases this test made (two
// through the cockpit, measured; one scripted), in every format, claims
// hours freed only over the measured ones and says over how many.
func requireSeedsTable(t *testing.T, l *e2eLab, r cockpitRepo) {
	t.Helper()
	var rep report.Effort
	require.NoError(t, json.Unmarshal([]byte(l.relcapOKIn(t, r, "--json", "report", "effort", "--baseline", "3")), &rep))
	c := rep.Comparison
	require.NotNil(t, c, "a before/after over the measured releases")
	require.Equal(t, 3, rep.Counts.Total, "the cockpit's two releases and the scripted one")
	require.Equal(t, rep.Coverage.Releases, c.Releases)
	require.GreaterOrEqual(t, c.MeasuredReleases, 2, "the cockpit's releases are measured")
	require.Equal(t, rep.Coverage.Measured, c.MeasuredReleases)
	require.Equal(t, 3.0, c.PerRelease.Before)
	require.Positive(t, c.PerRelease.After, "the captain's and bob's measured time")
	require.InDelta(t, c.PerRelease.Before*c.ReleasesPerMonth, c.AtRate.Before, 1e-9)
	require.InDelta(t, c.PerRelease.After*c.ReleasesPerMonth, c.AtRate.After, 1e-9)
	for _, w := range rep.Coverage.Work {
		require.NotEqual(t, "no reason recorded", w.Reason, "%s on %s: why it was not measured is kept", w.Person, w.Step)
	}
	over := fmt.Sprintf("over %d measured of %d releases", c.MeasuredReleases, c.Releases)
	for _, format := range []string{"table", "md", "csv", "html"} {
		out := l.relcapOKIn(t, r, "report", "effort", "--baseline", "3", "--format", format)
		if format == "csv" {
			require.Contains(t, out, "comparison,Release coordination effort,per_release_before,3,hours")
			continue
		}
		require.Contains(t, out, "Before and after relcap, over measured releases", format)
		require.Contains(t, out, over, format)
		t.Logf("relcap report effort --baseline 3 --format %s: %d bytes", format, len(out))
	}
	t.Logf("before/after over %d of %d releases: %s h → %s h a release, %s → %s h a month at %s release(s) (%s)",
		c.MeasuredReleases, c.Releases, report.FormatHours(c.PerRelease.Before), report.FormatHours(c.PerRelease.After),
		report.FormatHours(c.AtRate.Before), report.FormatHours(c.AtRate.After), report.FormatHours(c.ReleasesPerMonth), c.RateSource)
}

// evidenceKinds lists the kinds of evidence, each once, in order.
func evidenceKinds(es []evidence.Evidence) []evidence.Kind {
	var out []evidence.Kind
	for _, e := range es {
		if !slices.Contains(out, e.Kind) {
			out = append(out, e.Kind)
		}
	}
	return out
}
