package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim/argosimtest"
	"github.com/relcap/relcap/adapters/terraform/terraformtest"
)

// ownedTerraform is a Terraform root of managed resources without a
// Kubernetes identity (the kubectl provider is not installable offline;
// the tug-of-war itself is covered by workflow and adapter tests).
const ownedTerraform = `
resource "terraform_data" "bucket" {
  input = "assets"
}

resource "terraform_data" "queue" {
  for_each = toset(["orders", "invoices"])
  input    = each.key
}
`

const cleanOwnership = `version: 1
rules:
  - match: {terraform_type: terraform_data}
    owner: terraform
  - match: {group: apps, kind: Deployment, namespace: web}
    owner: argocd
  - match: {kind: Namespace}
    owner: terraform
`

// ownershipRepo is a release repository with one environment, staging:
// a real Terraform root whose state holds terraform_data resources, and
// an Argo CD application served by the simulator (Deployment web/web).
func ownershipRepo(t *testing.T, ownership string) (cfg string, env []string) {
	t.Helper()
	bin := terraformtest.Binary(t)
	c := validConfig[:strings.Index(validConfig, "  - name: prod")] + validConfig[strings.Index(validConfig, "effort:"):]
	dir := releaseRepo(t, c)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ownership.yaml"), []byte(ownership), 0o644))
	root := filepath.Join(dir, "infra/staging")
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.tf"), []byte(ownedTerraform), 0o644))
	for _, args := range [][]string{{"init", "-input=false", "-no-color"}, {"apply", "-auto-approve", "-input=false", "-no-color"}} {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "terraform %v: %s", args, out)
	}

	repo, _ := argosimtest.NewRepo(t, "v1")
	app := repo.App("web-staging")
	app.SelfHeal = true
	sim, addr := argosimtest.Start(t, app)
	cfg = filepath.Join(dir, "relcap.yaml")
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	s := strings.Replace(string(b), "argocd: {server: argocd.example.com:443, app: web-staging}", "argocd: {server: "+addr+", app: web-staging, plaintext: true}", 1)
	require.NoError(t, os.WriteFile(cfg, []byte(s), 0o644))
	return cfg, []string{"ARGOCD_AUTH_TOKEN=" + sim.Token()}
}

func TestOwnershipCheckPassesACleanSplitAndPrintsTheMatrix(t *testing.T) {
	t.Parallel()
	cfg, env := ownershipRepo(t, cleanOwnership)
	data := t.TempDir()

	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "ownership", "check")
	require.Equal(t, 0, code, out+errOut)
	require.Regexp(t, `RESOURCE\s+RULE\s+OWNER\s+FIELD OWNERS\s+WRITTEN BY`, out)
	require.Regexp(t, `apps/Deployment web/web\s+ownership.yaml:5\s+argocd\s+-\s+argocd app web-staging \(\d+ field\(s\)\)`, out)
	require.Regexp(t, `terraform_data.bucket\s+ownership.yaml:3\s+terraform`, out)
	require.Contains(t, out, `terraform_data.queue["orders"]`)
	require.Contains(t, out, "WARNING ownership.stale-rule ownership.yaml:7", "nothing is a Namespace here")
	require.Contains(t, out, "staging: 0 blocker(s), 1 warning(s)")

	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--json", "ownership", "check", "--env", "staging")
	require.Equal(t, 0, code, out+errOut)
	var doc struct {
		Matrix []struct {
			Env, Subject, Rule, Owner string
			Writers                   []struct{ Via string }
		}
		Findings []struct {
			Env, Code, Subject string
			NextAction         string `json:"next_action"`
		}
		Blockers int
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Len(t, doc.Matrix, 4)
	require.Equal(t, "apps/Deployment web/web", doc.Matrix[0].Subject)
	require.Equal(t, "staging", doc.Matrix[0].Env)
	require.Equal(t, "argocd app web-staging", doc.Matrix[0].Writers[0].Via)
	require.Zero(t, doc.Blockers)
	require.Len(t, doc.Findings, 1)
	require.Equal(t, "ownership.stale-rule", doc.Findings[0].Code)
	require.NotEmpty(t, doc.Findings[0].NextAction)

	code, out, errOut = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, 0, code, out+errOut)
	journals, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*", "journal.jsonl"))
	require.NoError(t, err)
	var all string
	for _, j := range journals {
		b, err := os.ReadFile(j)
		require.NoError(t, err)
		all += string(b)
	}
	require.Contains(t, all, `"ownership.checked"`)
	require.Contains(t, all, `"ownership check"`)
}

func TestOwnershipCheckFlagsAnHPAFieldArgoCDStillSets(t *testing.T) {
	t.Parallel()
	cfg, env := ownershipRepo(t, strings.Replace(cleanOwnership, "    owner: argocd\n", "    owner: argocd\n    fields: {spec.replicas: hpa}\n", 1))
	code, out, errOut := invokeEnv(t, t.TempDir(), env, "-c", cfg, "ownership", "check", "--env", "staging")
	require.Equal(t, 0, code, "a warning does not block: "+out+errOut)
	require.Contains(t, out, "WARNING ownership.third-owner-ignored apps/Deployment web/web")
	require.Contains(t, out, "spec.replicas (hpa)")
	require.Contains(t, out, "selfHeal is on")
	require.Contains(t, out, "jsonPointers: [/spec/replicas]")
	require.Regexp(t, `apps/Deployment web/web\s+ownership.yaml:5\s+argocd\s+spec.replicas=hpa`, out)
}

func TestOwnershipCheckBlocksUnownedResourcesAndRecordsThem(t *testing.T) {
	t.Parallel()
	cfg, env := ownershipRepo(t, strings.Replace(cleanOwnership, "  - match: {terraform_type: terraform_data}\n    owner: terraform\n", "", 1))
	data := t.TempDir()
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "ownership", "check")
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, out, "BLOCKER ownership.unowned terraform_data.bucket")
	require.Contains(t, out, "next: add a rule for it to ownership.yaml")
	require.Less(t, strings.Index(out, "BLOCKER"), strings.Index(out, "WARNING"), "blockers first")
	require.Contains(t, errOut, "3 ownership problem(s) in staging must be resolved first")

	db, err := sql.Open("sqlite", filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	defer db.Close()
	var open int
	require.NoError(t, db.QueryRowContext(t.Context(),
		`SELECT count(*) FROM findings WHERE scope = 'ownership/staging' AND code = 'ownership.unowned' AND resolved_at IS NULL`).Scan(&open))
	require.Equal(t, 3, open, "the ledger keeps every open finding with its first-seen time")
}

func TestOwnershipCheckReportsAMalformedMapWithFileAndLine(t *testing.T) {
	t.Parallel()
	cfg, env := ownershipRepo(t, "version: 1\nrules:\n  - match: {kind: Namespace}\n    ownr: terraform\n  - match: {kind: Deployment}\n    owner: ArgoCD\n")
	code, out, errOut := invokeEnv(t, t.TempDir(), env, "-c", cfg, "ownership", "check")
	require.Equal(t, exitUsage, code, out+errOut)
	require.Contains(t, errOut, "ownership.yaml:4")
	require.Contains(t, errOut, "ownership.yaml:6")
	require.Contains(t, errOut, `want "argocd"`)
	require.NotContains(t, errOut, "goroutine")
}

// A newcomer's first infer, on a repository of their own: Terraform state
// holding terraform_data only, an Argo CD application (the simulator, which
// keeps no field managers) deploying web/web. Nobody writes an object
// twice: the draft is one rule per tool, validate accepts it, and the
// current map's differences are listed.
func TestOwnershipInferWritesADraftValidateAccepts(t *testing.T) {
	t.Parallel()
	cfg, env := ownershipRepo(t, cleanOwnership)
	data := t.TempDir()
	code, out, errOut := invokeEnv(t, data, env, "-c", cfg, "ownership", "infer")
	require.Equal(t, 0, code, out+errOut)
	draft := filepath.Join(filepath.Dir(cfg), "ownership.draft.yaml")
	require.Contains(t, out, "staging: 0 object(s) written by more than one owner, 0 contested field(s), 0 flipping")
	require.Contains(t, out, "draft written to "+draft)
	body, err := os.ReadFile(draft)
	require.NoError(t, err)
	require.Contains(t, string(body), "match: {app: web-staging}")
	require.Contains(t, string(body), `match: {terraform_type: '*'}`)

	// Validate reads the draft as the map.
	c, err := os.ReadFile(cfg)
	require.NoError(t, err)
	check := filepath.Join(filepath.Dir(cfg), "relcap.draft.yaml")
	require.NoError(t, os.WriteFile(check, []byte(strings.Replace(string(c), "ownership: ownership.yaml", "ownership: ownership.draft.yaml", 1)), 0o644))
	code, out, errOut = invokeEnv(t, data, env, "-c", check, "validate")
	require.Equal(t, 0, code, out+errOut)

	// --json, and the draft printed instead of written.
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--json", "ownership", "infer", "--out", "-")
	require.Equal(t, 0, code, out+errOut)
	var doc struct {
		Envs    []string
		Live    bool
		YAML    string
		Draft   string
		Changes []struct{ Subject, Now, Proposed string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Equal(t, []string{"staging"}, doc.Envs)
	require.True(t, doc.Live)
	require.Empty(t, doc.Draft)
	require.Contains(t, doc.YAML, "version: 1")

	// Bad input: named, nothing written, exit 2.
	for _, args := range [][]string{
		{"--out", cfg + ".d/x.yaml"},
		{"--out", filepath.Join(filepath.Dir(cfg), "ownership.yaml")},
		{"--env", "nope"},
		{"--manager", "ci=Not-An-Owner"},
	} {
		code, out, errOut = invokeEnv(t, data, env, append([]string{"-c", cfg, "ownership", "infer"}, args...)...)
		require.Equal(t, exitUsage, code, "%v: %s%s", args, out, errOut)
		require.NotContains(t, errOut, "goroutine")
	}
	code, out, errOut = invokeEnv(t, data, env, "journal", "verify")
	require.Equal(t, 0, code, out+errOut)
}
