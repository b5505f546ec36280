//go:build e2e

package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// relcapCode runs relcap against the lab's relcap.yaml and returns its exit
// code and output, for the scenarios whose point is a non-zero exit.
func (l *e2eLab) relcapCode(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return l.run(t, l.relcap, append([]string{"-c", filepath.Join(l.dir, "relcap.yaml"), "--no-tui"}, args...)...)
}

// terraform runs terraform in dir with the lab's environment (its CLI
// configuration names the provider mirror) and returns the exit code.
func (l *e2eLab) terraform(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	return l.run(t, "terraform", append([]string{"-chdir=" + dir}, args...)...)
}

// headRev is the environment repository's main.
func (l *e2eLab) headRev(t testing.TB) string {
	return strings.TrimSpace(l.runGit(t, "rev-parse", "main"))
}

// editManifest commits a change to env's manifest on main of the
// environment repository, as a person would: clone, edit, commit, push.
func (l *e2eLab) editManifest(t *testing.T, env, message string, edit func(deploy map[string]any)) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "env")
	code, out := l.run(t, "git", "clone", "-q", l.env["RELCAP_LAB_ENVREPO"], work)
	require.Equal(t, 0, code, out)
	p := filepath.Join(work, filepath.FromSlash(ManifestPath(env)))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var d map[string]any
	require.NoError(t, yaml.Unmarshal(b, &d))
	edit(d)
	b, err = yaml.Marshal(d)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	for _, args := range [][]string{
		{"-C", work, "-c", "user.name=e2e", "-c", "user.email=e2e@localhost", "-c", "commit.gpgsign=false", "commit", "-qam", message},
		{"-C", work, "push", "-q", "origin", "main"},
	} {
		code, out := l.run(t, "git", args...)
		require.Equal(t, 0, code, "git %s: %s", strings.Join(args, " "), out)
	}
	return l.headRev(t)
}

// eventually polls cond until it holds or within runs out.
func eventually(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, last := cond()
		if ok {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s not within %s; last: %s", what, within, last)
		time.Sleep(250 * time.Millisecond)
	}
}

var releaseIDRe = regexp.MustCompile(`release (\S+): promotion succeeded`)

func releaseID(t *testing.T, out string) string {
	t.Helper()
	m := releaseIDRe.FindStringSubmatch(out)
	require.NotNil(t, m, "no release id in:\n%s", out)
	return m[1]
}

// convergedRelease pushes a new build tagged tag, promotes it to staging
// and waits for it to converge: the known-good release a failure scenario
// rolls back to. It returns the release ID and the digest.
func (l *e2eLab) convergedRelease(t *testing.T, tag string) (release, digest string) {
	t.Helper()
	ref, digest := l.pushBuild(t, tag)
	out := l.relcapOK(t, "--actor", "alice", "promote", "--env", "staging", "--image", ref)
	release = releaseID(t, out)
	require.Contains(t, l.relcapOK(t, "converge", "--env", "staging", "--timeout", "3m"), "converged in staging")
	return release, digest
}

// armedBuild pushes a new build tagged tag and commits staging's Pod
// template annotation that arms a kwok fault stage for its digest (why
// says what for the commit message); it returns the build's reference and
// digest once Argo CD has synced the annotation.
func (l *e2eLab) armedBuild(t *testing.T, tag, annotation, why string) (ref, digest string) {
	t.Helper()
	ref, digest = l.pushBuild(t, tag)
	rev := l.editManifest(t, "staging", "lab fault: "+digest+" "+why, func(d map[string]any) {
		setTemplateAnnotation(d, annotation, digest)
	})
	l.relcapOK(t, "converge", "--env", "staging", "--revision", rev, "--timeout", "2m")
	return ref, digest
}

// tugOfWarTF is a second Terraform file in staging's root: a
// kubectl_manifest server-side applying Deployment web/web with another
// replica count and image, forcing the conflicts with Argo CD's fields.
func tugOfWarTF(kubeconfig string) string {
	return kubectlProviderTF(kubeconfig) + `
resource "kubectl_manifest" "web_scale" {
  server_side_apply = true
  force_conflicts   = true
  wait_for_rollout  = false
  yaml_body         = <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + AppName + `
  namespace: ` + Namespace("staging") + `
spec:
  replicas: 5
  selector:
    matchLabels:
      app: ` + AppName + `
  template:
    metadata:
      labels:
        app: ` + AppName + `
    spec:
      nodeSelector:
        type: kwok
      containers:
      - name: ` + AppName + `
        image: registry.invalid/terraform/web:5
YAML
}
`
}

// testTugOfWar: Terraform and Argo CD both write staging's Deployment. Both
// report success; relcap ownership check names the fields and exits 3; once
// Terraform stops managing the object, the map's split (Argo CD the
// Deployments, Terraform what it declares) holds and it exits 0.
func testTugOfWar(t *testing.T, l *e2eLab) {
	root := filepath.Join(l.dir, "infra", "staging")
	tf := filepath.Join(root, "web.tf")
	require.NoError(t, os.WriteFile(tf, []byte(tugOfWarTF(l.env["KUBECONFIG"])), 0o600))
	// The hand-run terraform init below writes a dependency lock file
	// naming the kubectl provider; the root had none, and relcap plans it
	// later (relcap rehearse), refusing a lock file its init must change:
	// leave the root as it was found.
	lock := filepath.Join(root, ".terraform.lock.hcl")
	if _, err := os.Stat(lock); os.IsNotExist(err) {
		t.Cleanup(func() { _ = os.Remove(lock) })
	}

	code, out := l.terraform(t, root, "init", "-input=false", "-no-color")
	require.Equal(t, 0, code, "terraform init must find gavinbunney/kubectl in the lab's mirror:\n%s", out)
	code, out = l.terraform(t, root, "apply", "-auto-approve", "-input=false", "-no-color")
	require.Equal(t, 0, code, "terraform apply:\n%s", out)
	require.Contains(t, out, "Apply complete!")

	// Terraform's apply landed (the provider's server-side apply manager
	// holds fields of the object), and Argo CD's self-heal puts replicas
	// and image back.
	managers := l.kubectl(t, "get", "deployment", AppName, "-n", Namespace("staging"), "-o", `jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}`)
	require.Contains(t, managers, "kubectl/Apply", "the kubectl provider applied server-side")
	eventually(t, 60*time.Second, "argo cd reverting terraform's replicas and image", func() (bool, string) {
		image, ready, want := l.live(t, "staging")
		return want == 2 && ready == 2 && !strings.Contains(image, "registry.invalid"), image
	})
	// Two green tools, one object: the next plan wants to write it again.
	code, out = l.terraform(t, root, "plan", "-detailed-exitcode", "-input=false", "-no-color")
	require.Equal(t, 2, code, "terraform plan must want to change kubectl_manifest.web_scale again:\n%s", out)
	require.Contains(t, out, "kubectl_manifest.web_scale")

	// relcap's review of that very plan reads Terraform's refresh: Argo CD
	// changed the Deployment since the last apply, and this apply would
	// revert Argo CD's fields; no approval makes it applicable.
	planFile := filepath.Join(t.TempDir(), "tug.tfplan")
	code, out = l.terraform(t, root, "plan", "-out="+planFile, "-input=false", "-no-color")
	require.Equal(t, 0, code, "terraform plan -out:\n%s", out)
	show := exec.Command("terraform", "-chdir="+root, "show", "-json", planFile)
	show.Env = l.environ()
	doc, err := show.Output()
	require.NoError(t, err, "terraform show -json")
	docPath := filepath.Join(t.TempDir(), "tug.json")
	require.NoError(t, os.WriteFile(docPath, doc, 0o600))
	code, out = l.relcapCode(t, "plan", "--from-json", docPath)
	require.Equal(t, 3, code, "the plan that would revert Argo CD's fields is refused:\n%s", out)
	require.Contains(t, out, "plan.drift-owned-elsewhere")
	require.Contains(t, out, "kubectl_manifest.web_scale")
	require.Contains(t, out, "spec.replicas", "the refusal names the field Argo CD owns")
	require.Contains(t, out, "this apply would revert", out)

	code, out = l.relcapCode(t, "ownership", "check", "--env", "staging")
	require.Equal(t, 3, code, "ownership check must block on the tug-of-war:\n%s", out)
	require.Contains(t, out, "BLOCKER ownership.conflict apps/Deployment web-staging/web")
	require.Contains(t, out, "written by argocd app web-staging and terraform kubectl_manifest.web_scale")
	for _, f := range []string{"spec.replicas", "spec.template.spec.containers[web].image"} {
		require.Contains(t, out, f, "the conflict names the field %s", f)
	}
	require.Contains(t, out, "next: ownership.yaml:4 gives", "the finding names the rule and the next safe action")
	testOwnershipInfer(t, l)
	testHandoffNeverDestroys(t, l, root, tf)

	// Terraform lets go of the object without deleting it: out of the
	// state and out of the configuration.
	code, out = l.terraform(t, root, "state", "rm", "kubectl_manifest.web_scale")
	require.Equal(t, 0, code, out)
	require.NoError(t, os.Remove(tf))
	code, out = l.relcapCode(t, "ownership", "check", "--env", "staging")
	require.Equal(t, 0, code, "with ownership split, the check passes:\n%s", out)
	require.Contains(t, out, "staging: every managed object and field has one owner")
	require.Regexp(t, `apps/Deployment web-staging/web\s+ownership.yaml:4\s+argocd\s+-\s+argocd app web-staging \(\d+ field\(s\)\)\n`, out, "argo cd alone writes the Deployment")
	require.Contains(t, out, "terraform_data.lab")
	// The object survived the hand-back and Argo CD still runs it.
	l.relcapOK(t, "converge", "--env", "staging", "--revision", l.headRev(t), "--timeout", "1m")
}

// testOwnershipInfer: in the middle of the tug-of-war, relcap ownership
// infer reads the live Deployment's field managers through Argo CD: the
// fields both tools write are contested, the two Terraform declares while
// Argo CD holds them flip, both managers are named with their owners, and
// the draft it writes is a map relcap validate accepts.
func testOwnershipInfer(t *testing.T, l *e2eLab) {
	managers := l.kubectl(t, "get", "deployment", AppName, "-n", Namespace("staging"), "-o", `jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource} {end}`)
	t.Logf("field managers of the staging Deployment: %s", managers)
	code, out := l.relcapCode(t, "ownership", "infer", "--env", "staging")
	require.Equal(t, 3, code, "contested fields keep infer at exit 3:\n%s", out)
	require.Contains(t, out, "apps/Deployment "+Namespace("staging")+"/"+AppName+" → argocd")
	for _, f := range []string{"spec.replicas", "spec.template.spec.containers[" + AppName + "].image"} {
		require.Regexp(t, `FLIPPING  `+regexp.QuoteMeta(f)+`: argocd and terraform; held by \S+ \(argocd\)`, out, "%s flips between the two", f)
	}
	require.Regexp(t, `held by field manager kubectl \(Apply, last at [^)]+\): terraform`, out, "the kubectl provider's server-side apply is Terraform's")
	require.Regexp(t, `held by field manager \S+ \((Update|Apply), last at [^)]+\): argocd`, out, "Argo CD's controller is named")
	require.Contains(t, out, "declared by terraform kubectl_manifest.web_scale")
	require.Contains(t, out, "declared by argocd app web-staging")
	require.Regexp(t, `\d+ contested field\(s\), \d+ flipping: decide each one`, out, "the exit is explained")

	draft := filepath.Join(l.dir, "ownership.draft.yaml")
	t.Cleanup(func() { _ = os.Remove(draft) })
	data, err := os.ReadFile(draft)
	require.NoError(t, err, "the draft is written beside the map")
	require.Contains(t, string(data), "# ownership map drafted by relcap ownership infer")
	require.Contains(t, string(data), "flips: terraform writes it back")
	cfg, err := os.ReadFile(filepath.Join(l.dir, "relcap.yaml"))
	require.NoError(t, err)
	check := filepath.Join(l.dir, "relcap.draft-check.yaml")
	require.NoError(t, os.WriteFile(check, []byte(strings.Replace(string(cfg), "ownership: ownership.yaml", "ownership: ownership.draft.yaml", 1)), 0o600))
	t.Cleanup(func() { _ = os.Remove(check) })
	code, out = l.run(t, l.relcap, "-c", check, "validate")
	require.Equal(t, 0, code, "relcap validate accepts the draft as the map:\n%s", out)
}

// testHandoffNeverDestroys: with the Deployment handed over from Terraform
// to Argo CD in the map, a plan that deletes kubectl_manifest.web_scale
// (its block gone from the configuration) is refused, and the plan that
// forgets it (a removed block with destroy = false) is not. Both plans are
// the real kubectl provider's; the map and the root are put back after.
func testHandoffNeverDestroys(t *testing.T, l *e2eLab, root, tf string) {
	own := filepath.Join(l.dir, "ownership.yaml")
	orig, err := os.ReadFile(own)
	require.NoError(t, err)
	defer func() { require.NoError(t, os.WriteFile(own, orig, 0o600)) }()
	handoff := "handoffs:\n  - match: {group: apps, kind: Deployment, namespace: " + Namespace("staging") + ", name: " + AppName + "}\n    from: terraform\n    to: argocd\n"
	require.NoError(t, os.WriteFile(own, append(append([]byte{}, orig...), handoff...), 0o600))
	require.NoError(t, os.Rename(tf, tf+".off"))
	defer func() { require.NoError(t, os.Rename(tf+".off", tf)) }()

	planDoc := func(name string) string {
		planFile := filepath.Join(t.TempDir(), name+".tfplan")
		code, out := l.terraform(t, root, "plan", "-out="+planFile, "-input=false", "-no-color")
		require.Equal(t, 0, code, "terraform plan (%s):\n%s", name, out)
		show := exec.Command("terraform", "-chdir="+root, "show", "-json", planFile)
		show.Env = l.environ()
		doc, err := show.Output()
		require.NoError(t, err, "terraform show -json")
		p := filepath.Join(t.TempDir(), name+".json")
		require.NoError(t, os.WriteFile(p, doc, 0o600))
		return p
	}
	code, out := l.relcapCode(t, "plan", "--from-json", planDoc("delete"))
	require.Equal(t, 3, code, "deleting an object handed over is refused:\n%s", out)
	require.Contains(t, out, "plan.handoff-destroys")
	require.Contains(t, out, "this plan would delete apps/Deployment "+Namespace("staging")+"/"+AppName+", which ownership.yaml:")
	require.Contains(t, out, "removed block for kubectl_manifest.web_scale with lifecycle { destroy = false }")

	removed := filepath.Join(root, "handoff.tf")
	require.NoError(t, os.WriteFile(removed, []byte("removed {\n  from = kubectl_manifest.web_scale\n  lifecycle {\n    destroy = false\n  }\n}\n"), 0o600))
	defer func() { require.NoError(t, os.Remove(removed)) }()
	code, out = l.relcapCode(t, "plan", "--from-json", planDoc("forget"))
	require.NotContains(t, out, "plan.handoff-destroys", "forgetting is what a hand-off does")
	require.NotContains(t, out, "plan.drift-owned-elsewhere", "a forgotten resource writes nothing back")
	require.Contains(t, out, "plan.forget")
	require.Equal(t, 0, code, "the forget plan is reviewable:\n%s", out)
}

// testImagePullFailure: a promoted digest whose Pods cannot pull (kwok
// keeps them in ImagePullBackOff) is detected by relcap converge (exit 4,
// named, with the next safe action); rollback to the previous release
// converges.
func testImagePullFailure(t *testing.T, l *e2eLab, repo func(string) string) {
	goodRelease, good := l.convergedRelease(t, "2.0.0")
	// The fault: the next build's digest "cannot be pulled" (the lab's
	// kwok stage matches Pods annotated with the digest they run).
	badRef, bad := l.armedBuild(t, "2.1.0", PullFailsAnnotation, "cannot be pulled")

	out := l.relcapOK(t, "--actor", "alice", "promote", "--env", "staging", "--image", badRef)
	require.Contains(t, out, "promotion succeeded", "the registry has the digest: the failure is the cluster's")
	start := time.Now()
	code, out := l.relcapCode(t, "converge", "--env", "staging", "--timeout", "3m")
	require.Equal(t, 4, code, "converge must report the pull failure as not converged:\n%s", out)
	t.Logf("image pull failure named after %s", time.Since(start).Round(100*time.Millisecond))
	require.Less(t, time.Since(start), 2*time.Minute, "named from the Pod within seconds, not at the progress deadline")
	require.Contains(t, out, "convergence.image-pull-failed")
	require.Contains(t, out, `cannot pull its image: Back-off pulling image "`+repo("staging")+"@"+bad+`"`)
	require.Contains(t, out, "next: check that the promoted digest is in the environment's registry", "the next safe action")
	require.Contains(t, out, "relcap rollback")
	// Cross-check: the apiserver has the new Pod in ImagePullBackOff and
	// the old ones still serving.
	reasons := l.kubectl(t, "get", "pods", "-n", Namespace("staging"), "-o", `jsonpath={range .items[*]}{.spec.containers[0].image} {.status.containerStatuses[0].state.waiting.reason} {.status.containerStatuses[0].ready}{"\n"}{end}`)
	require.Contains(t, reasons, repo("staging")+"@"+bad+" ImagePullBackOff false")
	require.Contains(t, reasons, repo("staging")+"@"+good+"  true")

	out = l.relcapOK(t, "--actor", "alice", "rollback", "--env", "staging", "--to", goodRelease, "--timeout", "3m")
	require.Contains(t, out, "back to release "+goodRelease)
	require.Contains(t, out, "converged in staging")
	require.Contains(t, out, good)
	image, ready, want := l.live(t, "staging")
	require.Equal(t, repo("staging")+"@"+good, image, "the apiserver runs the rolled-back digest")
	require.Equal(t, want, ready)
	eventually(t, 60*time.Second, "the failing Pod going away", func() (bool, string) {
		pods := l.kubectl(t, "get", "pods", "-n", Namespace("staging"), "-o", `jsonpath={range .items[*]}{.spec.containers[0].image}{"\n"}{end}`)
		return !strings.Contains(pods, bad), pods
	})
	require.Contains(t, l.runGit(t, "log", "-1", "--format=%s", "main"), "roll back staging to release "+goodRelease)
}

// projectWindows reads the sync windows of the lab's AppProject "default"
// from the Kubernetes API.
func (l *e2eLab) projectWindows(t testing.TB) []labWindow {
	t.Helper()
	out := l.kubectl(t, "get", "appproject", "default", "-n", ArgoNamespace, "-o", "jsonpath={.spec.syncWindows}")
	if out == "" {
		return nil
	}
	var ws []labWindow
	require.NoError(t, json.Unmarshal([]byte(out), &ws), out)
	return ws
}

// labWindow is a sync window as the AppProject stores it.
type labWindow struct {
	Kind         string   `json:"kind"`
	Schedule     string   `json:"schedule"`
	Duration     string   `json:"duration"`
	Applications []string `json:"applications"`
	ManualSync   bool     `json:"manualSync"`
	TimeZone     string   `json:"timeZone"`
	Description  string   `json:"description"`
}

// requireBreakGlassWindow checks the AppProject holds exactly relcap's one
// deny window for staging's application, and returns it.
func (l *e2eLab) requireBreakGlassWindow(t testing.TB) labWindow {
	t.Helper()
	ws := l.projectWindows(t)
	require.Len(t, ws, 1, "one window on the project: %+v", ws)
	w := ws[0]
	require.Equal(t, "deny", w.Kind)
	require.Equal(t, []string{ArgoApp("staging")}, w.Applications, "for exactly that one application")
	require.True(t, w.ManualSync, "a person can still sync by hand")
	require.Equal(t, "UTC", w.TimeZone)
	require.Regexp(t, `^\d+ \d+ \d+ \d+ \*$`, w.Schedule, "a cron of the start minute")
	return w
}

// syncPolicy is staging's spec.syncPolicy.automated, as the Kubernetes
// API has it.
func (l *e2eLab) syncPolicy(t testing.TB) string {
	t.Helper()
	return l.kubectl(t, "get", "application", ArgoApp("staging"), "-n", ArgoNamespace, "-o", "jsonpath={.spec.syncPolicy.automated}")
}

// testBreakGlass: break-glass pauses one application with a deny sync
// window (the sync policy stays as it is), a manual hotfix survives, end
// captures it as a branch and removes the window, and self-heal puts Git's
// state back.
func testBreakGlass(t *testing.T, l *e2eLab) {
	before := l.syncPolicy(t)
	require.Contains(t, before, `"selfHeal":true`)
	require.Contains(t, before, `"prune":true`)
	require.Empty(t, l.projectWindows(t))

	out := l.relcapOK(t, "--actor", "alice", "breakglass", "start", "--env", "staging", "--reason", "e2e hotfix", "--ttl", "30m")
	require.Contains(t, out, "reconciliation of "+ArgoApp("staging")+" paused")
	w := l.requireBreakGlassWindow(t)
	require.Contains(t, []string{"30m", "31m"}, w.Duration)
	require.Equal(t, before, l.syncPolicy(t), "the sync policy is left alone: the window holds the pause")

	const hotfix = "registry.invalid/hotfix:manual"
	l.kubectl(t, "set", "image", "deployment/"+AppName, AppName+"="+hotfix, "-n", Namespace("staging"))
	// Self-heal reverted the same change within ~2 s earlier in the suite;
	// three reconciliation periods later the hotfix must still be live.
	time.Sleep(3 * ReconciliationTimeout)
	image, _, _ := l.live(t, "staging")
	require.Equal(t, hotfix, image, "the hotfix survives while break-glass holds")
	out = l.relcapOK(t, "breakglass", "status", "--env", "staging")
	require.Contains(t, out, "drifted: apps/Deployment "+Namespace("staging")+"/"+AppName)
	require.Contains(t, out, "paused by the deny window")

	branchesBefore := l.runGit(t, "branch", "--list")
	out = l.relcapOK(t, "--actor", "alice", "breakglass", "end", "--env", "staging")
	m := regexp.MustCompile(`captured \d+ drifted resource\(s\) on branch (\S+) `).FindStringSubmatch(out)
	require.NotNil(t, m, "end captures the drift as a branch:\n%s", out)
	branch := m[1]
	require.NotContains(t, branchesBefore, branch)
	require.Contains(t, l.runGit(t, "branch", "--list", branch), branch, "the branch is in the environment repository")
	capture := l.runGit(t, "show", "--format=%B", branch)
	require.Contains(t, capture, "relcap: capture break-glass", "the branch's commit is the capture")
	require.Contains(t, capture, "+++ b/breakglass/staging/", "the live drift is a file for review")
	require.Contains(t, capture, hotfix, "the branch carries the hotfix as a Git change")
	require.Contains(t, out, "its sync window is removed")
	require.Empty(t, l.projectWindows(t), "end removes the window")
	require.Equal(t, before, l.syncPolicy(t))
	// Self-heal, no longer denied, puts Git's image back.
	eventually(t, 60*time.Second, "self-heal reverting the hotfix after break-glass", func() (bool, string) {
		image, ready, want := l.live(t, "staging")
		return image != hotfix && ready == want, image
	})
	l.relcapOK(t, "converge", "--env", "staging", "--revision", l.headRev(t), "--timeout", "1m")
}

// testBreakGlassExpires: a break-glass nobody ends. Its deny window holds a
// hotfix for the time box; when the window closes Argo CD itself, with no
// relcap command run, self-heals Git's state back. The next break-glass
// command removes the closed window (its yearly schedule would open it
// again), and end closes the record with nothing left to capture.
func testBreakGlassExpires(t *testing.T, l *e2eLab) {
	gitImage, _, _ := l.live(t, "staging")
	out := l.relcapOK(t, "--json", "--actor", "alice", "breakglass", "start", "--env", "staging", "--reason", "e2e: left to expire", "--ttl", "1m")
	var b struct {
		ID        string    `json:"id"`
		StartedAt time.Time `json:"started_at"`
		ExpiresAt time.Time `json:"expires_at"`
		Window    struct {
			Schedule    string `json:"schedule"`
			Description string `json:"description"`
		} `json:"window"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &b), out)
	require.Zero(t, b.ExpiresAt.Second(), "the window closes on a whole minute")
	w := l.requireBreakGlassWindow(t)
	require.Equal(t, b.Window.Schedule, w.Schedule)
	if l.variant.Is3() {
		require.Contains(t, w.Description, b.ID, "argo cd 3.1+ keeps the window's description")
	} else {
		require.Empty(t, w.Description, "argo cd 2.14 has no window description")
	}
	t.Logf("argo cd %s: break-glass %s started %s, deny window %q for %s, closes %s",
		l.variant.Versions.ArgoCD, b.ID, b.StartedAt.UTC().Format(time.TimeOnly), w.Schedule, w.Duration, b.ExpiresAt.UTC().Format(time.TimeOnly))

	const hotfix = "registry.invalid/hotfix:left-to-expire"
	l.kubectl(t, "set", "image", "deployment/"+AppName, AppName+"="+hotfix, "-n", Namespace("staging"))
	// From here on relcap is not run until Argo CD has healed the app.
	// The hotfix holds while the window is open, and Argo CD puts Git's
	// image back once it has closed.
	var healedAt time.Time
	deadline := b.ExpiresAt.Add(2 * time.Minute)
	for {
		image, ready, want := l.live(t, "staging")
		now := time.Now()
		if image == gitImage && ready == want {
			healedAt = now
			break
		}
		if now.Before(b.ExpiresAt.Add(-time.Second)) {
			require.Equal(t, hotfix, image, "the hotfix survives while the window is open (%s before it closes)", b.ExpiresAt.Sub(now).Round(time.Second))
		}
		require.True(t, now.Before(deadline), "argo cd did not put Git's image back within 2m of the window closing; live: %s", image)
		time.Sleep(500 * time.Millisecond)
	}
	require.False(t, healedAt.Before(b.ExpiresAt), "healed only after the window closed")
	// Cross-check with Argo CD's own record: its last operation is an
	// automated (self-heal) sync that started after the window closed.
	op := l.kubectl(t, "get", "application", ArgoApp("staging"), "-n", ArgoNamespace, "-o",
		"jsonpath={.status.operationState.operation.initiatedBy.automated}|{.status.operationState.startedAt}|{.status.operationState.phase}")
	f := strings.Split(op, "|")
	require.Len(t, f, 3, op)
	require.Equal(t, "true", f[0], "argo cd's automated sync did it, not a person: %s", op)
	opStart, err := time.Parse(time.RFC3339, f[1])
	require.NoError(t, err, op)
	require.False(t, opStart.Before(b.ExpiresAt.Truncate(time.Second)), "the self-heal started after the window closed: %s", op)
	require.Equal(t, "Succeeded", f[2], op)
	t.Logf("argo cd %s: window closed %s; self-heal started %s after; Git's image live and ready %s after",
		l.variant.Versions.ArgoCD, b.ExpiresAt.UTC().Format(time.TimeOnly), opStart.Sub(b.ExpiresAt).Round(time.Second), healedAt.Sub(b.ExpiresAt).Round(100*time.Millisecond))

	require.Len(t, l.projectWindows(t), 1, "the closed window stays on the project until relcap removes it")
	code, out := l.relcapCode(t, "ownership", "check", "--env", "staging")
	require.Contains(t, out, "break-glass "+b.ID+" in staging expired", "every command says so (exit %d)", code)
	require.Contains(t, out, "argo cd resumed reconciling "+ArgoApp("staging")+" when its window closed")
	out = l.relcapOK(t, "breakglass", "status", "--env", "staging")
	require.Contains(t, out, "EXPIRED")
	require.Contains(t, out, "not paused: the sync window closed and relcap removed it")
	require.Contains(t, out, "no drift: the live state matches Git")
	require.Empty(t, l.projectWindows(t), "status removed the closed window")
	out = l.relcapOK(t, "--actor", "alice", "breakglass", "end", "--env", "staging")
	require.Contains(t, out, "no drift to capture")
	require.Contains(t, out, "break-glass "+b.ID+" ended")
	l.relcapOK(t, "converge", "--env", "staging", "--revision", l.headRev(t), "--timeout", "1m")
}

// setTemplateAnnotation sets one annotation of a Deployment's Pod template
// in a decoded manifest, keeping the others (an earlier fault's switch).
func setTemplateAnnotation(d map[string]any, key, value string) {
	tmpl := d["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)
	ann, _ := tmpl["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	ann[key] = value
	tmpl["annotations"] = ann
}

// testFaultsTheRegistryDecides: with no fault annotation anywhere in the
// environment repository, the image webhook makes the lab's node fail as
// a kubelet would. A digest staging's repository does not have (random)
// leaves its Pod in ImagePullBackOff; the unready build up pushed (label
// io.relcap-lab.readiness=never) runs and never becomes ready. Each is
// rolled back with relcap rollback, so staging ends where it began.
func testFaultsTheRegistryDecides(t *testing.T, l *e2eLab, repo func(string) string) {
	goodRelease, good := l.convergedRelease(t, "6.0.0")
	ns := Namespace("staging")
	podsOf := func(image string) string {
		out := l.kubectl(t, "get", "pods", "-n", ns, "-o", `jsonpath={range .items[*]}{.spec.containers[0].image} {.status.phase} {.status.containerStatuses[0].state.waiting.reason} {.status.containerStatuses[0].ready} {.metadata.annotations}{"\n"}{end}`)
		var mine []string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, image+" ") {
				mine = append(mine, line)
			}
		}
		return strings.Join(mine, "\n")
	}
	noTemplateAnnotation := func() {
		t.Helper()
		require.Empty(t, l.kubectl(t, "get", "deployment", AppName, "-n", ns, "-o", "jsonpath={.spec.template.metadata.annotations}"), "no fault is declared in the template")
		require.NotContains(t, l.runGit(t, "show", "main:"+ManifestPath("staging")), "relcap-lab.io/", "nor in the environment repository")
	}
	rollback := func(bad string) {
		t.Helper()
		out := l.relcapOK(t, "--actor", "alice", "rollback", "--env", "staging", "--to", goodRelease, "--timeout", "3m")
		require.Contains(t, out, "converged in staging")
		image, ready, want := l.live(t, "staging")
		require.Equal(t, repo("staging")+"@"+good, image)
		require.Equal(t, want, ready)
		eventually(t, 60*time.Second, "the failing Pods going away", func() (bool, string) {
			pods := l.kubectl(t, "get", "pods", "-n", ns, "-o", `jsonpath={range .items[*]}{.spec.containers[0].image}{"\n"}{end}`)
			return !strings.Contains(pods, bad), pods
		})
	}

	// 1. A digest the registry does not have, pinned by hand (relcap
	// promote verifies digests in the registry and would refuse it).
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	absent := "sha256:" + hex.EncodeToString(b)
	absentImage := repo("staging") + "@" + absent
	rev := l.editManifest(t, "staging", "pin "+absent+", which the registry does not have", func(d map[string]any) {
		d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = absentImage
	})
	start := time.Now()
	code, out := l.relcapCode(t, "converge", "--env", "staging", "--revision", rev, "--timeout", "3m")
	t.Logf("pull failure of an absent digest named after %s", time.Since(start).Round(100*time.Millisecond))
	require.Equal(t, 4, code, "not converged:\n%s", out)
	require.Contains(t, out, "convergence.image-pull-failed")
	require.Contains(t, out, `cannot pull its image: Back-off pulling image "`+absentImage+`"`)
	noTemplateAnnotation()
	pods := podsOf(absentImage)
	require.Contains(t, pods, absentImage+" Pending ImagePullBackOff false ", pods)
	require.Contains(t, pods, `"`+PullFailsAnnotation+`":"`+absent+`"`, "the webhook armed the stage on the Pod")
	require.Contains(t, pods, "manifest not in the registry", pods)
	rollback(absent)

	// 2. The unready build, promoted through relcap like any build.
	unready := l.env[UnreadyDigestEnv]
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, unready)
	out = l.relcapOK(t, "--actor", "alice", "promote", "--env", "staging", "--image", l.env["RELCAP_LAB_REGISTRY"]+"/ci/"+AppName+":"+UnreadyTag)
	require.Contains(t, out, "promotion succeeded")
	unreadyImage := repo("staging") + "@" + unready
	start = time.Now()
	code, out = l.relcapCode(t, "converge", "--env", "staging", "--timeout", "4m")
	t.Logf("readiness failure of the unready build named after %s", time.Since(start).Round(time.Second))
	require.Equal(t, 4, code, "not converged:\n%s", out)
	require.Contains(t, out, "convergence.readiness-failed")
	require.Regexp(t, `Pod `+regexp.QuoteMeta(ns)+`/`+AppName+`-\S+ does not become ready \(not ready for over `+LabReadinessGrace+`, argocd.readiness_grace\): `+regexp.QuoteMeta(NotReadyMessage), out)
	require.Contains(t, out, "next: read the Pod's events and logs; the new version fails its readiness probe: roll back with relcap rollback", "the next safe action")
	noTemplateAnnotation()
	pods = podsOf(unreadyImage)
	require.Contains(t, pods, unreadyImage+" Running  false ", pods)
	require.Contains(t, pods, `"`+NotReadyAnnotation+`":"`+unready+`"`, pods)
	ready := l.kubectl(t, "get", "pods", "-n", ns, "-o", `jsonpath={range .items[*]}{.spec.containers[0].image} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	require.Contains(t, ready, unreadyImage+" False", "never Ready")
	require.NotContains(t, ready, unreadyImage+" True")
	rollback(unready)
}
