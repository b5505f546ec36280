package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/signing"
)

const validConfig = `version: 1
app: web
ownership: ownership.yaml
environments:
  - name: staging
    terraform: {dir: infra/staging, workspace: default, var_files: [staging.tfvars]}
    registry: {repository: registry.example.com/staging/web, require_signature: false}
    envrepo: {path: env, branch: main, file: apps/web/staging/kustomization.yaml, image: web, format: kustomize}
    argocd: {server: argocd.example.com:443, app: web-staging}
    approvals: {plan: 1, promotion: 0, distinct_from_author: false}
  - name: prod
    production: true
    terraform: {dir: infra/prod}
    registry: {repository: registry.example.com/prod/web, require_signature: true}
    envrepo: {path: env, branch: main, file: apps/web/prod/kustomization.yaml, image: web, format: kustomize}
    argocd: {server: argocd.example.com:443, app: web-prod}
    approvals: {plan: 2, promotion: 1, distinct_from_author: true}
effort: {idle_threshold: 2m, baseline_hours_per_release: 3}
`

const validOwnership = `version: 1
rules:
  - match: {terraform_type: "aws_*"}
    owner: terraform
  - match: {group: apps, kind: Deployment, namespace: web}
    owner: argocd
    fields: {spec.replicas: hpa}
handoffs:
  - match: {terraform_address: helm_release.argocd}
    from: terraform
    to: argocd
`

// releaseRepo writes a release repository with the given relcap.yaml.
func releaseRepo(t *testing.T, cfg string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"infra/staging", "infra/prod", "env"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "infra/staging/staging.tfvars"), []byte("replicas = 2\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ownership.yaml"), []byte(validOwnership), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "relcap.yaml"), []byte(cfg), 0o644))
	return dir
}

func TestValidateAcceptsTheDesignExample(t *testing.T) {
	t.Parallel()
	dir := releaseRepo(t, validConfig)
	code, out, errOut := invoke(t, t.TempDir(), "validate", "-c", filepath.Join(dir, "relcap.yaml"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "environments staging → prod")
	require.Contains(t, out, "2 rule(s), 1 hand-off(s)")
}

func TestValidateReportsEveryProblemWithFileLineAndExits2(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		edit func(string) string
		want []string
	}{
		"wrong type": {
			func(s string) string { return strings.Replace(s, "plan: 2,", `plan: two,`, 1) },
			[]string{"relcap.yaml:17:", "environments[1].approvals.plan", "integer"},
		},
		"unknown key with suggestion": {
			func(s string) string { return strings.Replace(s, "environments:", "enviroments:", 1) },
			[]string{"relcap.yaml:4:1:", `"enviroments"`, `did you mean "environments"`},
		},
		"missing file": {
			func(s string) string {
				return strings.Replace(s, "ownership: ownership.yaml", "ownership: owners.yaml", 1)
			},
			[]string{"relcap.yaml:3:", "owners.yaml", "create it or fix the path"},
		},
		"bad duration": {
			func(s string) string {
				return strings.Replace(s, "idle_threshold: 2m", "idle_threshold: two minutes", 1)
			},
			[]string{"relcap.yaml:18:", "effort.idle_threshold", "Go duration"},
		},
		"several at once": {
			func(s string) string {
				s = strings.Replace(s, "plan: 2,", "plan: -1,", 1)
				return strings.Replace(s, "format: kustomize}\n    argocd: {server: argocd.example.com:443, app: web-prod}", "format: helm}\n    argocd: {server: argocd.example.com:443, app: web-prod}", 1)
			},
			[]string{"relcap.yaml:15:", "relcap.yaml:17:", "2 problem(s)"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := releaseRepo(t, c.edit(validConfig))
			code, _, errOut := invoke(t, t.TempDir(), "validate", "-c", filepath.Join(dir, "relcap.yaml"))
			require.Equal(t, exitUsage, code, errOut)
			for _, w := range c.want {
				require.Contains(t, errOut, w)
			}
			require.NotContains(t, errOut, "goroutine")
		})
	}
}

func TestValidateReportsOwnershipMapProblems(t *testing.T) {
	t.Parallel()
	dir := releaseRepo(t, validConfig)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ownership.yaml"), []byte("version: 1\nrules:\n  - match: {kind: Namespace}\n    ownr: terraform\n"), 0o644))
	code, _, errOut := invoke(t, t.TempDir(), "validate", "-c", filepath.Join(dir, "relcap.yaml"))
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "ownership.yaml:4:5:")
	require.Contains(t, errOut, `did you mean "owner"`)
}

func TestValidateWithoutAConfigSaysWhereItLooked(t *testing.T) {
	t.Parallel()
	code, _, errOut := invoke(t, t.TempDir(), "validate", "-c", filepath.Join(t.TempDir(), "relcap.yaml"))
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "relcap.yaml")
}

// TestValidateParsesThePeopleFile (issue 26, attack 14): a people file with
// a NUL byte and a malformed key used to pass validate and fail only when
// someone approved; validate now reads it with the verifying parser and
// names every broken line.
func TestValidateParsesThePeopleFile(t *testing.T) {
	t.Parallel()
	alice, err := signing.GenerateKeyFile(filepath.Join(t.TempDir(), "alice"), "alice@laptop")
	require.NoError(t, err)
	dir := releaseRepo(t, strings.Replace(validConfig, "environments:", "people: allowed_signers\nenvironments:", 1))
	people := filepath.Join(dir, "allowed_signers")

	require.NoError(t, os.WriteFile(people, []byte("alice "+alice+"\n"), 0o644))
	code, out, errOut := invoke(t, t.TempDir(), "validate", "-c", filepath.Join(dir, "relcap.yaml"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "allowed_signers: 1 principal(s)")

	broken := "# the team\nalice " + alice + "\nbob\x00 " + alice + "\ncarol ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA!!\n" +
		`dave valid-before="yesterday" ` + alice + "\n"
	require.NoError(t, os.WriteFile(people, []byte(broken), 0o644))
	code, _, errOut = invoke(t, t.TempDir(), "validate", "-c", filepath.Join(dir, "relcap.yaml"))
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "allowed_signers:3: a NUL byte")
	require.Contains(t, errOut, "allowed_signers:4: ")
	require.Contains(t, errOut, "allowed_signers:5: valid-before")
	require.Contains(t, errOut, "3 problem(s)")
	require.NotContains(t, errOut, "AAAAC3NzaC1lZDI1NTE5AAAA!!", "no key quoted")
	require.NotContains(t, errOut, "allowed_signers:2:", "the valid line is not blamed")
}

// TestValidateSaysTheStatesCustodyWithoutACredential: validate reads each
// root's backend without running Terraform or reaching the cloud (an s3
// backend offline), says what the plan review will find, and never prints
// a credential written in the backend block, in any output; a custody
// blocker is policy, not a problem of the files, so validate still passes.
func TestValidateSaysTheStatesCustodyWithoutACredential(t *testing.T) {
	t.Parallel()
	dir := releaseRepo(t, validConfig)
	const secretKey = "wJalr/XUtn+FEMI=K7MDENG%bPx\"RfiCY"
	backend := `terraform {
  backend "s3" {
    bucket     = "acme-tfstate"
    key        = "prod/app.tfstate"
    region     = "eu-west-1"
    access_key = "AKIAIOSFODNN7EXAMPLE"
    secret_key = "` + strings.ReplaceAll(secretKey, `"`, `\"`) + `"
    token      = <<EOT
line one of a session token
line two
EOT
  }
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "infra/prod/backend.tf"), []byte(backend), 0o644))
	for _, args := range [][]string{{"validate"}, {"--json", "validate"}} {
		code, out, errOut := invoke(t, dir, append([]string{"-c", filepath.Join(dir, "relcap.yaml")}, args...)...)
		require.Equal(t, 0, code, out+errOut)
		for _, secret := range []string{"AKIAIOSFODNN7EXAMPLE", "wJalr", "RfiCY", "line one", "line two"} {
			require.NotContains(t, out+errOut, secret)
		}
		if args[0] == "validate" {
			require.Contains(t, out, "custody: prod: s3 backend, state in s3://acme-tfstate/prod/app.tfstate")
			require.Contains(t, out, "blocker custody.no-locking")
			require.Contains(t, out, "blocker custody.unencrypted")
			require.Contains(t, out, "warning custody.credential-in-config: a credential (secret_key) is written in the backend configuration")
			require.Contains(t, out, "custody: staging: local backend")
		} else {
			require.Contains(t, out, `"custody"`)
		}
	}
}
