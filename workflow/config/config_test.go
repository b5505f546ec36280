package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/effort"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/forge"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/tfplan"
)

// designConfig is the relcap.yaml of DESIGN.md's configuration contract,
// with prod's "… same keys …" written out (leaving some keys to defaults).
const designConfig = `# relcap.yaml
version: 1
app: web
ownership: ownership.yaml            # path relative to this file
people: allowed_signers              # git's allowed-signers format: principal + SSH public key
ledger: postgres://relcap@db.internal/relcap   # optional; default SQLite under XDG (or RELCAP_LEDGER)
environments:                        # promotion order: a digest reaches prod only after staging
  - name: staging
    terraform: {dir: infra/staging, workspace: default, var_files: [staging.tfvars]}
    registry: {repository: registry.example.com/staging/web, require_signature: false}
    envrepo:  {path: ../env, branch: main, file: apps/web/staging/kustomization.yaml,
               image: web, format: kustomize}        # format: kustomize | helm-values | manifest
    argocd:   {server: argocd.example.com:443, app: web-staging, token_env: ARGOCD_AUTH_TOKEN,
               plaintext: false, insecure: false}
    approvals: {plan: 1, promotion: 0, distinct_from_author: false}
  - name: prod
    production: true                 # drills refused, break-glass needs an approver
    terraform: {dir: infra/prod, var_files: [prod.tfvars, ../common.tfvars]}
    registry: {repository: registry.example.com/prod/web, require_signature: true}
    envrepo:  {path: ../env, file: apps/web/prod/values.yaml, image: web,
               format: helm-values, values_path: image.digest,
               review: {via: pull_request, forge: gitea, url: https://git.example.com/team/env,   # optional; default via: push
                        token_env: GITEA_TOKEN, users: {carol-git: carol}}}   # forge account → principal
    argocd:   {server: argocd.example.com:443, app: web-prod}
    approvals: {plan: 2, promotion: 1, distinct_from_author: true}   # approvals are SSH-signed
    approvers: {plan: [alice, bob], promotion: [carol], breakglass: [carol], apply: [alice, dave]}  # principals of ` + "`people`" + `
classify:                            # glob patterns on Terraform resource types (defaults exist)
  identity: ["*_iam_*", "*_role*", "*service_account*", "*workload_identity*"]
  data_service: ["*_db_*", "*_rds_*", "*sql*", "*_bucket*", "*redis*", "*kafka*"]
effort: {idle_threshold: 2m, baseline_hours_per_release: 3}
`

// designOwnership is the ownership.yaml of DESIGN.md.
const designOwnership = `version: 1
rules:                               # first match wins; every managed object must match one rule
  - match: {terraform_type: "aws_*"}                         # cloud foundations
    owner: terraform
  - match: {kind: Namespace}
    owner: terraform
  - match: {group: apps, kind: Deployment, namespace: web}
    owner: argocd
    fields: {spec.replicas: hpa}     # a named third owner for one field
handoffs:
  - match: {terraform_address: helm_release.argocd}
    from: terraform
    to: argocd
    note: the GitOps controller is bootstrapped by Terraform, then owned by Argo CD
`

// designTree lays out the release repository of DESIGN.md's example next to
// its environment repository, returning the release repository's path.
func designTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"repo/relcap.yaml":                  designConfig,
		"repo/ownership.yaml":               designOwnership,
		"repo/allowed_signers":              "carol ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDcarolcarolcarolcarolcarolcarolcarolcarol\n",
		"repo/infra/staging/staging.tfvars": "",
		"repo/infra/prod/prod.tfvars":       "",
		"repo/infra/common.tfvars":          "",
		"env/":                              "",
	})
	return filepath.Join(root, "repo")
}

func TestLoadDesignExample(t *testing.T) {
	t.Parallel()
	repo := designTree(t)
	env := filepath.Join(filepath.Dir(repo), "env")

	got, err := Load(filepath.Join(repo, "relcap.yaml"))
	require.NoError(t, err)

	want := &workflow.Project{
		File:          filepath.Join(repo, "relcap.yaml"),
		Dir:           repo,
		App:           "web",
		OwnershipFile: filepath.Join(repo, "ownership.yaml"),
		Ownership: ownership.Map{
			File: "ownership.yaml", // findings name rules relative to the release repository
			Rules: []ownership.Rule{
				{Line: 3, Match: ownership.Match{TerraformType: "aws_*"}, Owner: ownership.OwnerTerraform},
				{Line: 5, Match: ownership.Match{Kind: "Namespace"}, Owner: ownership.OwnerTerraform},
				{
					Line:   7,
					Match:  ownership.Match{Group: "apps", Kind: "Deployment", Namespace: "web"},
					Owner:  ownership.OwnerArgoCD,
					Fields: map[string]ownership.Owner{"spec.replicas": "hpa"},
				},
			},
			Handoffs: []ownership.Handoff{{
				Line:  11,
				Match: ownership.Match{TerraformAddress: "helm_release.argocd"},
				From:  ownership.OwnerTerraform,
				To:    ownership.OwnerArgoCD,
				Note:  "the GitOps controller is bootstrapped by Terraform, then owned by Argo CD",
			}},
		},
		Environments: []workflow.Environment{
			{
				Name: "staging",
				Terraform: workflow.TerraformTarget{
					Dir:       filepath.Join(repo, "infra", "staging"),
					Workspace: "default",
					VarFiles:  []string{filepath.Join(repo, "infra", "staging", "staging.tfvars")},
				},
				Registry: workflow.RegistryTarget{Repository: "registry.example.com/staging/web"},
				EnvRepo: workflow.EnvRepoTarget{
					Path:   env,
					Branch: "main",
					File:   "apps/web/staging/kustomization.yaml",
					Image:  "web",
					Format: workflow.FormatKustomize,
					Review: forge.EnvRepoReview{Via: forge.ReviewByPush},
				},
				ArgoCD: workflow.ArgoCDTarget{
					Server:   "argocd.example.com:443",
					App:      "web-staging",
					TokenEnv: "ARGOCD_AUTH_TOKEN",
				},
				Approvals: approval.Policy{Plan: 1, Signed: true},
			},
			{
				Name:       "prod",
				Production: true,
				Terraform: workflow.TerraformTarget{
					Dir:       filepath.Join(repo, "infra", "prod"),
					Workspace: "default",
					VarFiles: []string{
						filepath.Join(repo, "infra", "prod", "prod.tfvars"),
						filepath.Join(repo, "infra", "common.tfvars"),
					},
				},
				Registry: workflow.RegistryTarget{Repository: "registry.example.com/prod/web", RequireSignature: true},
				EnvRepo: workflow.EnvRepoTarget{
					Path:       env,
					Branch:     "main",
					File:       "apps/web/prod/values.yaml",
					Image:      "web",
					Format:     workflow.FormatHelmValues,
					ValuesPath: "image.digest",
					Review: forge.EnvRepoReview{Via: forge.ReviewByPullRequest, Forge: forge.Gitea, URL: "https://git.example.com/team/env",
						TokenEnv: "GITEA_TOKEN", Merge: forge.MergeByRelcap, Approvals: forge.ApprovalsFromForge,
						Users: []forge.User{{Login: "carol-git", Principal: "carol"}}},
				},
				ArgoCD: workflow.ArgoCDTarget{
					Server:   "argocd.example.com:443",
					App:      "web-prod",
					TokenEnv: "ARGOCD_AUTH_TOKEN",
				},
				Approvals: approval.Policy{Plan: 2, Promotion: 1, DistinctFromAuthor: true, Signed: true,
					Approvers: approval.Approvers{Plan: []string{"alice", "bob"}, Promotion: []string{"carol"}, BreakGlass: []string{"carol"}, Apply: []string{"alice", "dave"}}},
			},
		},
		Classify: tfplan.Classify{
			Identity:    []string{"*_iam_*", "*_role*", "*service_account*", "*workload_identity*"},
			DataService: []string{"*_db_*", "*_rds_*", "*sql*", "*_bucket*", "*redis*", "*kafka*"},
		},
		Effort: workflow.EffortPolicy{IdleThreshold: 2 * time.Minute, BaselineHoursPerRelease: 3},
		Plans:  workflow.PlanPolicy{Expiry: workflow.DefaultPlanExpiry},
		People: filepath.Join(repo, "allowed_signers"),
		Ledger: "postgres://relcap@db.internal/relcap",
	}
	require.Equal(t, want, got)
}

// minimalConfig is the smallest valid relcap.yaml; its environment ends on
// line 9, so cases that append to it start on line 10.
const (
	configHead = "version: 1\napp: web\nownership: ownership.yaml\nenvironments:\n"
	configEnv  = `  - name: staging
    terraform: {dir: infra}
    registry: {repository: registry.example.com/web}
    envrepo: {path: ../env, file: apps/web/kustomization.yaml, image: web, format: kustomize}
    argocd: {server: argocd.example.com:443, app: web-staging}
`
	minimalConfig = configHead + configEnv
)

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		extra string
		check func(t *testing.T, p *workflow.Project)
	}{
		{
			name: "everything omitted takes the documented default",
			check: func(t *testing.T, p *workflow.Project) {
				require.Equal(t, tfplan.DefaultClassify(), p.Classify)
				require.Equal(t, effort.DefaultIdleThreshold, p.Effort.IdleThreshold)
				require.Equal(t, workflow.DefaultPlanExpiry, p.Plans.Expiry)
				require.Equal(t, workflow.Compatibility{}, p.Compatibility)
				e := p.Environments[0]
				require.Equal(t, "default", e.Terraform.Workspace)
				require.Equal(t, "main", e.EnvRepo.Branch)
				require.Equal(t, "ARGOCD_AUTH_TOKEN", e.ArgoCD.TokenEnv)
				require.Zero(t, e.ArgoCD.ReadinessGrace, "the watch's own grace")
				require.Equal(t, "", e.Terraform.Binary)
				require.Equal(t, approval.Policy{}, e.Approvals, "without a people file approvals are unsigned")
			},
		},
		{
			name:  "an omitted classify category keeps its default",
			extra: "classify: {identity: [\"*_principal*\"]}\n",
			check: func(t *testing.T, p *workflow.Project) {
				require.Equal(t, []string{"*_principal*"}, p.Classify.Identity)
				require.Equal(t, tfplan.DefaultClassify().DataService, p.Classify.DataService)
			},
		},
		{
			name:  "an explicit empty category turns it off",
			extra: "classify: {data_service: []}\n",
			check: func(t *testing.T, p *workflow.Project) {
				require.Equal(t, tfplan.DefaultClassify().Identity, p.Classify.Identity)
				require.Equal(t, []string{}, p.Classify.DataService)
			},
		},
		{
			name:  "new optional keys",
			extra: "plans: {expiry: 36h}\ncompatibility: {schema: 4, min_schema: 3, max_schema: 5}\n",
			check: func(t *testing.T, p *workflow.Project) {
				require.Equal(t, 36*time.Hour, p.Plans.Expiry)
				require.Equal(t, workflow.Compatibility{Schema: 4, MinSchema: 3, MaxSchema: 5}, p.Compatibility)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse("/repo/relcap.yaml", []byte(minimalConfig+tt.extra))
			require.NoError(t, err)
			tt.check(t, p)
		})
	}
}

func TestParseResolvesPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		from    string
		to      string
		check   func(t *testing.T, e workflow.Environment)
		options []Option
	}{
		{
			name: "relative paths resolve against the config's directory",
			from: "{dir: infra}", to: "{dir: infra/staging, var_files: [a.tfvars, /abs/b.tfvars], binary: ./bin/tofu}",
			check: func(t *testing.T, e workflow.Environment) {
				require.Equal(t, "/repo/infra/staging", e.Terraform.Dir)
				require.Equal(t, []string{"/repo/infra/staging/a.tfvars", "/abs/b.tfvars"}, e.Terraform.VarFiles)
				require.Equal(t, "/repo/bin/tofu", e.Terraform.Binary)
				require.Equal(t, "/env", e.EnvRepo.Path)
			},
		},
		{
			name: "WithDir overrides the base directory",
			from: "{dir: infra}", to: "{dir: infra}",
			check: func(t *testing.T, e workflow.Environment) {
				require.Equal(t, "/elsewhere/infra", e.Terraform.Dir)
				require.Equal(t, "/env", e.EnvRepo.Path)
			},
			options: []Option{WithDir("/elsewhere")},
		},
		{
			name: "a bare binary name is looked up on PATH later",
			from: "{dir: infra}", to: "{dir: infra, binary: tofu}",
			check: func(t *testing.T, e workflow.Environment) {
				require.Equal(t, "tofu", e.Terraform.Binary)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse("/repo/relcap.yaml", []byte(edit(t, minimalConfig, tt.from, tt.to)), tt.options...)
			require.NoError(t, err)
			tt.check(t, p.Environments[0])
		})
	}
}

// TestParseLedger: ledger: names a team's PostgreSQL by URL, kept as
// written, or an SQLite file, resolved against the config's directory;
// anything else is a problem at the key that never repeats the value (a
// URL may hold a password).
func TestParseLedger(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]string{
		"postgres://relcap@db.internal:5432/relcap?sslmode=require": "postgres://relcap@db.internal:5432/relcap?sslmode=require",
		"postgresql://db.internal/relcap":                           "postgresql://db.internal/relcap",
		"ledger.db":                                                 "/repo/ledger.db",
		"../shared/ledger.db":                                       "/shared/ledger.db",
		"/var/lib/relcap/ledger.db":                                 "/var/lib/relcap/ledger.db",
	} {
		p, err := Parse("/repo/relcap.yaml", []byte(minimalConfig+"ledger: "+value+"\n"))
		require.NoError(t, err, value)
		require.Equal(t, want, p.Ledger, value)
	}
	p, err := Parse("/repo/relcap.yaml", []byte(minimalConfig))
	require.NoError(t, err)
	require.Empty(t, p.Ledger, "no key, the default")

	for value, want := range map[string]string{
		`""`: `relcap.yaml:10:9: ledger: must not be empty; want a postgres://USER@HOST:PORT/DATABASE URL or the path of an SQLite file, or leave the key out for the default ($XDG_DATA_HOME/relcap/ledger.db)`,
		"mysql://relcap:hunter2-secret@db/relcap": `relcap.yaml:10:9: ledger: a mysql:// ledger is not supported; want a postgres://USER@HOST:PORT/DATABASE URL or the path of an SQLite file`,
		"postgres://relcap:hunter2-secret@db:x/r": `relcap.yaml:10:9: ledger: is not a URL: invalid port ":x" after host; want a postgres://USER@HOST:PORT/DATABASE URL or the path of an SQLite file`,
	} {
		_, err := Parse("relcap.yaml", []byte(minimalConfig+"ledger: "+value+"\n"))
		require.Error(t, err, value)
		require.True(t, errors.Is(err, fault.ErrUsage))
		require.Equal(t, want, err.Error())
		require.NotContains(t, err.Error(), "hunter2")
	}
}

func TestParseKeepsCloneURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"https://git.example.com/env.git",
		"ssh://git@git.example.com/env.git",
		"git@github.com:example/env.git",
		"git://git.example.com/env.git",
		"file:///srv/git/env.git",
		"deploy@git.example.com:env.git",
	} {
		t.Run(u, func(t *testing.T) {
			t.Parallel()
			// fakeStat calls anything named *.git a file, so checking a URL
			// as a local directory would fail.
			data := edit(t, minimalConfig, "path: ../env", "path: "+u)
			p, err := Parse("/repo/relcap.yaml", []byte(data), WithStat(fakeStat))
			require.NoError(t, err)
			require.Equal(t, u, p.Environments[0].EnvRepo.Path)
		})
	}
}

func TestParseMergeKeys(t *testing.T) {
	t.Parallel()
	data := configHead + `  - &staging
    name: staging
    terraform: {dir: infra/staging}
    registry: {repository: registry.example.com/web}
    envrepo: {path: ../env, file: apps/web/staging.yaml, image: web, format: kustomize}
    argocd: {server: argocd.example.com:443, app: web-staging}
  - <<: *staging
    name: prod
    terraform: {dir: infra/prod}
    approvals: {plan: 2}
`
	p, err := Parse("/repo/relcap.yaml", []byte(data))
	require.NoError(t, err)
	require.Len(t, p.Environments, 2)
	prod := p.Environments[1]
	require.Equal(t, "prod", prod.Name)
	require.Equal(t, "/repo/infra/prod", prod.Terraform.Dir)
	require.Equal(t, "web-staging", prod.ArgoCD.App)
	require.Equal(t, 2, prod.Approvals.Plan)
}

func TestParseReportsProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data func(t *testing.T) string
		want string
	}{
		{
			name: "invalid YAML gets its line",
			data: lit("version: 1\napp: [\n"),
			want: `relcap.yaml:2: invalid YAML: did not find expected node content`,
		},
		{
			name: "empty file",
			data: lit("# nothing yet\n"),
			want: `relcap.yaml: file is empty; want a mapping with version, app, ownership and environments`,
		},
		{
			name: "not a mapping",
			data: lit("- web\n"),
			want: `relcap.yaml:1:1: want a mapping, got a list`,
		},
		{
			name: "second document",
			data: appended("---\nversion: 1\n"),
			want: `relcap.yaml:10:1: a second YAML document starts here; want a single document`,
		},
		{
			name: "unknown top-level key suggests by edit distance",
			data: appended("enviroments: []\n"),
			want: `relcap.yaml:10:1: enviroments: unknown key "enviroments" (did you mean "environments"?)`,
		},
		{
			name: "unknown key suggests by shared prefix",
			data: appended("env: []\n"),
			want: `relcap.yaml:10:1: env: unknown key "env" (did you mean "environments"?)`,
		},
		{
			name: "unknown nested key in a flow mapping",
			data: edited("{dir: infra}", "{dir: infra, var_file: [a.tfvars]}"),
			want: `relcap.yaml:6:29: environments[0].terraform.var_file: unknown key "var_file" (did you mean "var_files"?)`,
		},
		{
			name: "unknown key without a near miss lists the known keys",
			data: appended("    colour: blue\n"),
			want: `relcap.yaml:10:5: environments[0].colour: unknown key "colour" (known keys: name, production, terraform, registry, envrepo, argocd, approvals, approvers, rehearsal, custody)`,
		},
		{
			name: "signed approvals without a people file",
			data: appended("    approvals: {plan: 1, signed: true}\n"),
			want: `relcap.yaml:5:5: environments[0].approvals.signed: staging's approvals are signed with each person's SSH key: name the people file (people: allowed_signers)`,
		},
		{
			name: "production approvals cannot be unsigned",
			data: appended("    production: true\n    approvals: {plan: 1, signed: false}\n"),
			want: `relcap.yaml:5:5: environments[0].approvals.signed: staging is a production environment: its approvals are signed; remove signed: false`,
		},
		{
			name: "unknown decision in approvers",
			data: appended("    approvers: {deploy: [alice]}\n"),
			want: `relcap.yaml:10:17: environments[0].approvers.deploy: unknown key "deploy" (known keys: plan, promotion, breakglass, apply)`,
		},
		{
			name: "duplicate key",
			data: appended("app: other\n"),
			want: `relcap.yaml:10:1: app: duplicate key (first at line 2)`,
		},
		{
			name: "string where an integer is expected",
			data: appended("    approvals: {plan: two}\n"),
			want: `relcap.yaml:10:23: environments[0].approvals.plan: want a non-negative integer, got "two"`,
		},
		{
			name: "negative approval count",
			data: appended("    approvals: {promotion: -1}\n"),
			want: `relcap.yaml:10:28: environments[0].approvals.promotion: want a non-negative integer, got "-1"`,
		},
		{
			name: "string where a bool is expected",
			data: appended("    production: yes\n"),
			want: `relcap.yaml:10:17: environments[0].production: want true or false, got "yes"`,
		},
		{
			name: "string where a list is expected",
			data: edited("{dir: infra}", "{dir: infra, var_files: a.tfvars}"),
			want: `relcap.yaml:6:40: environments[0].terraform.var_files: want a list of strings, got "a.tfvars"`,
		},
		{
			name: "mapping inside a list of strings",
			data: edited("{dir: infra}", "{dir: infra, var_files: [a.tfvars, {x: 1}]}"),
			want: `relcap.yaml:6:51: environments[0].terraform.var_files[1]: want a string, got a mapping`,
		},
		{
			name: "string where a mapping is expected",
			data: edited("terraform: {dir: infra}", "terraform: infra"),
			want: `relcap.yaml:6:16: environments[0].terraform: want a mapping, got "infra"`,
		},
		{
			name: "missing version",
			data: edited("version: 1\n", ""),
			want: `relcap.yaml:1:1: missing required key "version" (want version: 1)`,
		},
		{
			name: "unsupported version",
			data: edited("version: 1", "version: 2"),
			want: `relcap.yaml:1:10: version: unsupported version 2; this relcap reads version 1`,
		},
		{
			name: "version is not a number",
			data: edited("version: 1", "version: one"),
			want: `relcap.yaml:1:10: version: want 1, got "one"`,
		},
		{
			name: "missing app",
			data: edited("app: web\n", ""),
			want: `relcap.yaml:1:1: missing required key "app" (the application name, e.g. app: web)`,
		},
		{
			name: "null app",
			data: edited("app: web", "app:"),
			want: `relcap.yaml:2:1: app: must not be empty (the application name, e.g. app: web)`,
		},
		{
			name: "empty app",
			data: edited("app: web", `app: ""`),
			want: `relcap.yaml:2:6: app: must not be empty`,
		},
		{
			name: "no environments key",
			data: lit("version: 1\napp: web\nownership: ownership.yaml\n"),
			want: `relcap.yaml:1:1: missing required key "environments" (list them in promotion order)`,
		},
		{
			name: "no environments",
			data: lit(configHead[:len(configHead)-1] + " []\n"),
			want: `relcap.yaml:4:15: environments: want at least one environment`,
		},
		{
			name: "environment without a name",
			data: edited("- name: staging\n    terraform:", "- terraform:"),
			want: `relcap.yaml:5:5: environments[0]: missing required key "name" (e.g. name: staging)`,
		},
		{
			name: "environment name not matching the pattern",
			data: edited("name: staging", "name: Staging"),
			want: `relcap.yaml:5:11: environments[0].name: want lowercase letters, digits and dashes starting with a letter or digit, got "Staging"`,
		},
		{
			name: "duplicate environment name",
			data: lit(minimalConfig + configEnv),
			want: `relcap.yaml:10:11: environments[1].name: duplicate environment name "staging" (first at line 5)`,
		},
		{
			name: "missing section",
			data: edited("    argocd: {server: argocd.example.com:443, app: web-staging}\n", ""),
			want: `relcap.yaml:5:5: environments[0]: missing required key "argocd"`,
		},
		{
			name: "missing key in a section",
			data: edited(", app: web-staging}", "}"),
			want: `relcap.yaml:9:13: environments[0].argocd: missing required key "app" (the Argo CD application name, e.g. app: web-staging)`,
		},
		{
			name: "bad idle threshold",
			data: appended("effort: {idle_threshold: 2 minutes}\n"),
			want: `relcap.yaml:10:26: effort.idle_threshold: want a Go duration like 2m or 1h30m, got "2 minutes"`,
		},
		{
			name: "bad plan expiry",
			data: appended("plans: {expiry: 1d}\n"),
			want: `relcap.yaml:10:17: plans.expiry: want a Go duration like 2m or 1h30m, got "1d"`,
		},
		{
			name: "negative plan expiry",
			data: appended("plans: {expiry: -1h}\n"),
			want: `relcap.yaml:10:17: plans.expiry: want a positive duration like 2m or 1h30m, got "-1h"`,
		},
		{
			name: "baseline not a number",
			data: appended("effort: {baseline_hours_per_release: lots}\n"),
			want: `relcap.yaml:10:38: effort.baseline_hours_per_release: want a non-negative number, got "lots"`,
		},
		{
			name: "negative baseline",
			data: appended("effort: {baseline_hours_per_release: -0.5}\n"),
			want: `relcap.yaml:10:38: effort.baseline_hours_per_release: want a non-negative number, got "-0.5"`,
		},
		{
			name: "NaN baseline",
			data: appended("effort: {baseline_hours_per_release: .nan}\n"),
			want: `relcap.yaml:10:38: effort.baseline_hours_per_release: want a non-negative number, got ".nan"`,
		},
		{
			name: "unknown envrepo format",
			data: edited("format: kustomize", "format: kustomise"),
			want: `relcap.yaml:8:84: environments[0].envrepo.format: want kustomize, helm-values or manifest, got "kustomise" (did you mean "kustomize"?)`,
		},
		{
			name: "values_path is not blamed for a mistyped format",
			data: edited("format: kustomize}", "format: helm_values, values_path: image.tag}"),
			want: `relcap.yaml:8:84: environments[0].envrepo.format: want kustomize, helm-values or manifest, got "helm_values" (did you mean "helm-values"?)`,
		},
		{
			name: "helm-values with values_path is fine but an empty one is not",
			data: edited("format: kustomize}", "format: helm-values, values_path: ''}"),
			want: `relcap.yaml:8:110: environments[0].envrepo.values_path: must not be empty`,
		},
		{
			name: "helm-values without values_path",
			data: edited("format: kustomize", "format: helm-values"),
			want: `relcap.yaml:8:14: environments[0].envrepo: format helm-values needs values_path, the YAML path of the image reference, e.g. values_path: image.digest`,
		},
		{
			name: "values_path with another format",
			data: edited("format: kustomize}", "format: kustomize, values_path: image.tag}"),
			want: `relcap.yaml:8:108: environments[0].envrepo.values_path: is only used with format helm-values; remove it`,
		},
		{
			name: "envrepo file outside the repository",
			data: edited("file: apps/web/kustomization.yaml", "file: ../apps/web.yaml"),
			want: `relcap.yaml:8:35: environments[0].envrepo.file: want a path inside the environment repository, got "../apps/web.yaml"`,
		},
		{
			name: "registry repository with a tag",
			data: edited("registry.example.com/web}", "registry.example.com/web:1.0}"),
			want: `relcap.yaml:7:28: environments[0].registry.repository: want a repository without scheme, tag or digest, e.g. registry.example.com/staging/web, got "registry.example.com/web:1.0"`,
		},
		{
			name: "argocd server with a scheme",
			data: edited("server: argocd.example.com:443", "server: https://argocd.example.com"),
			want: `relcap.yaml:9:22: environments[0].argocd.server: want host:port without a scheme, e.g. argocd.example.com:443, got "https://argocd.example.com"`,
		},
		{
			name: "argocd token_env not a variable name",
			data: edited("app: web-staging}", "app: web-staging, token_env: $TOKEN}"),
			want: `relcap.yaml:9:75: environments[0].argocd.token_env: want an environment variable name like ARGOCD_AUTH_TOKEN, got "$TOKEN"`,
		},
		{
			name: "argocd grpc_web not a bool",
			data: edited("app: web-staging}", "app: web-staging, grpc_web: 1}"),
			want: `relcap.yaml:9:74: environments[0].argocd.grpc_web: want true or false, got "1"`,
		},
		{
			name: "argocd readiness_grace not a duration",
			data: edited("app: web-staging}", "app: web-staging, readiness_grace: 90}"),
			want: `relcap.yaml:9:81: environments[0].argocd.readiness_grace: want a Go duration like 2m or 1h30m, got "90"`,
		},
		{
			name: "argocd readiness_grace far too long",
			data: edited("app: web-staging}", "app: web-staging, readiness_grace: 1h}"),
			want: `relcap.yaml:9:81: environments[0].argocd.readiness_grace: want at most 30m0s: a rollout not ready after that has failed (Kubernetes' own progress deadline is 10m), got 1h0m0s`,
		},
		{
			name: "invalid classify glob",
			data: appended(`classify: {identity: ["["]}` + "\n"),
			want: `relcap.yaml:10:23: classify.identity[0]: invalid glob pattern "[": syntax error in pattern`,
		},
		{
			name: "compatibility bounds reversed",
			data: appended("compatibility: {min_schema: 5, max_schema: 3}\n"),
			want: `relcap.yaml:10:44: compatibility.max_schema: is below min_schema (5)`,
		},
		{
			name: "compatibility schema not a number",
			data: appended("compatibility: {schema: v2}\n"),
			want: `relcap.yaml:10:25: compatibility.schema: want a non-negative integer, got "v2"`,
		},
		{
			name: "compatibility schema outside its own bounds",
			data: appended("compatibility: {schema: 7, min_schema: 3, max_schema: 5}\n"),
			want: `relcap.yaml:10:25: compatibility.schema: is outside min_schema..max_schema, so a release could not run against its own data`,
		},
		{
			name: "every problem is reported, in file order",
			data: lit(`version: 2
app: web
ownership: ownership.yaml
enviroments: []
environments:
  - name: Prod
    terraform: {dir: infra, workspace: ""}
    registry: {repository: registry.example.com/web}
    envrepo: {path: ../env, file: a.yaml, image: web, format: helm}
    argocd: {server: argocd.example.com:443, app: web-prod}
    approvals: {plan: two, promotion: -1}
effort: {idle_threshold: soon}
`),
			want: strings.Join([]string{
				`relcap.yaml:1:10: version: unsupported version 2; this relcap reads version 1`,
				`relcap.yaml:4:1: enviroments: unknown key "enviroments" (did you mean "environments"?)`,
				`relcap.yaml:6:11: environments[0].name: want lowercase letters, digits and dashes starting with a letter or digit, got "Prod"`,
				`relcap.yaml:7:40: environments[0].terraform.workspace: must not be empty; leave it out for the default workspace`,
				`relcap.yaml:9:63: environments[0].envrepo.format: want kustomize, helm-values or manifest, got "helm" (did you mean "helm-values"?)`,
				`relcap.yaml:11:23: environments[0].approvals.plan: want a non-negative integer, got "two"`,
				`relcap.yaml:11:39: environments[0].approvals.promotion: want a non-negative integer, got "-1"`,
				`relcap.yaml:12:26: effort.idle_threshold: want a Go duration like 2m or 1h30m, got "soon"`,
			}, "\n"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse("relcap.yaml", []byte(tt.data(t)))
			require.Nil(t, p)
			require.ErrorIs(t, err, fault.ErrUsage)
			var errs *Errors
			require.ErrorAs(t, err, &errs)
			require.Equal(t, tt.want, err.Error())
		})
	}
}

func lit(s string) func(*testing.T) string { return func(*testing.T) string { return s } }

func appended(s string) func(*testing.T) string { return lit(minimalConfig + s) }

func edited(old, new string) func(*testing.T) string {
	return func(t *testing.T) string { return edit(t, minimalConfig, old, new) }
}

func TestLoadReportsMissingFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "relcap.yaml")
	writeTree(t, dir, map[string]string{
		"relcap.yaml": `version: 1
app: web
ownership: ownership.yaml
environments:
  - name: staging
    terraform: {dir: infra/staging, var_files: [staging.tfvars]}
    registry: {repository: registry.example.com/web}
    envrepo: {path: env, file: apps/web/kustomization.yaml, image: web, format: kustomize}
    argocd: {server: argocd.example.com:443, app: web-staging}
  - name: prod
    terraform: {dir: infra/prod, var_files: [prod.tfvars]}
    registry: {repository: registry.example.com/web}
    envrepo: {path: https://git.example.com/env.git, file: apps/web/kustomization.yaml, image: web, format: kustomize}
    argocd: {server: argocd.example.com:443, app: web-prod}
  - name: qa
    terraform: {dir: qa.tf}
    registry: {repository: registry.example.com/web}
    envrepo: {path: env.git, file: apps/web/kustomization.yaml, image: web, format: kustomize}
    argocd: {server: argocd.example.com:443, app: web-qa}
`,
		"infra/prod/": "",
		"qa.tf":       "",
		"env.git":     "",
	})

	_, err := Load(cfg)
	require.ErrorIs(t, err, fault.ErrUsage)
	want := []string{
		cfg + `:3:12: ownership: file ` + filepath.Join(dir, "ownership.yaml") + ` does not exist; create it or fix the path`,
		// The missing dir stands in for its var files.
		cfg + `:6:22: environments[0].terraform.dir: directory ` + filepath.Join(dir, "infra", "staging") + ` does not exist; create it or fix the path`,
		cfg + `:8:21: environments[0].envrepo.path: directory ` + filepath.Join(dir, "env") + ` does not exist; create it (clone the environment repository there) or fix the path`,
		cfg + `:11:46: environments[1].terraform.var_files[0]: file ` + filepath.Join(dir, "infra", "prod", "prod.tfvars") + ` does not exist; create it or fix the path (var files are relative to terraform.dir)`,
		cfg + `:16:22: environments[2].terraform.dir: ` + filepath.Join(dir, "qa.tf") + ` is not a directory; point it at a directory`,
		cfg + `:18:21: environments[2].envrepo.path: ` + filepath.Join(dir, "env.git") + ` is not a directory; point it at a directory`,
	}
	require.Equal(t, strings.Join(want, "\n"), err.Error())
}

func TestLoadReportsOwnershipProblemsToo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"relcap.yaml":    edit(t, minimalConfig, "app: web", "app: ''") + "plans: {expiry: never}\n",
		"ownership.yaml": "version: 1\nrules:\n  - match: {kind: Namespace}\n    ownr: terraform\n",
		"infra/":         "",
		"../env/":        "",
	})
	// Messages name files the way the caller named the config.
	cfg := filepath.Join(dir, "relcap.yaml")
	own := filepath.Join(dir, "ownership.yaml")
	_, err := Load(cfg)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Equal(t, strings.Join([]string{
		cfg + `:2:6: app: must not be empty`,
		cfg + `:10:17: plans.expiry: want a Go duration like 2m or 1h30m, got "never"`,
		own + `:3:5: rules[0]: missing required key "owner" (e.g. owner: terraform)`,
		own + `:4:5: rules[0].ownr: unknown key "ownr" (did you mean "owner"?)`,
	}, "\n"), err.Error())
}

func TestLoadReadErrors(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "relcap.yaml"))
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorIs(t, err, os.ErrNotExist)

	_, err = LoadOwnership(filepath.Join(t.TempDir(), "ownership.yaml"))
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestParseWithStat(t *testing.T) {
	t.Parallel()
	data := edit(t, minimalConfig, "{dir: infra}", "{dir: missing-infra}")
	_, err := Parse("/repo/relcap.yaml", []byte(data), WithStat(fakeStat))
	require.EqualError(t, err, `/repo/relcap.yaml:6:22: environments[0].terraform.dir: directory /repo/missing-infra does not exist; create it or fix the path`)

	_, err = Parse("/repo/relcap.yaml", []byte(data))
	require.NoError(t, err, "without WithStat nothing is checked on disk")
}

func TestFind(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"repo/relcap.yaml":         minimalConfig,
		"repo/infra/staging/x/":    "",
		"repo/nested/relcap.yaml/": "", // a directory is not a config file
	})
	want := filepath.Join(root, "repo", "relcap.yaml")

	for _, start := range []string{
		filepath.Join(root, "repo"),
		filepath.Join(root, "repo", "infra", "staging", "x"),
		filepath.Join(root, "repo", "nested"),
	} {
		got, err := Find(start)
		require.NoError(t, err, start)
		require.Equal(t, want, got)
	}

	if _, err := os.Stat(filepath.Join(filepath.Dir(root), FileName)); errors.Is(err, os.ErrNotExist) {
		_, err := Find(root)
		require.ErrorIs(t, err, fault.ErrUsage)
		require.ErrorContains(t, err, "no relcap.yaml in "+root+" or any parent directory")
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		want string
	}{
		{"enviroments", "environments"},
		{"Environments", "environments"},
		{"ap", "app"},
		{"ownershp", "ownership"},
		{"classification", "classify"},
		{"env", "environments"},
		{"compat", "compatibility"},
		{"effort_policy", "effort"},
		{"zzz", ""},
		{"v", ""},
		{strings.Repeat("x", 10000), ""},
	}
	for _, tt := range tests {
		t.Run(tt.key[:min(len(tt.key), 20)], func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, suggest(tt.key, topKeys))
		})
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "abc", 0},
		{"kitten", "sitting", 3},
		{"plan", "plans", 1},
		{"héllo", "hello", 1},
		{"a", "abcdef", 5},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, editDistance(tt.a, tt.b, 9), "%q %q", tt.a, tt.b)
	}
	// Capped at the limit.
	require.Equal(t, 2, editDistance("kitten", "sitting", 2))
	require.Equal(t, 3, editDistance("a", "abcdef", 3))
}

func TestParseRehearsal(t *testing.T) {
	t.Parallel()
	data := minimalConfig + `    rehearsal:
      unready_image: registry.example.com/ci/web@sha256:` + strings.Repeat("ab", 32) + `
      interrupt:
        stop: [relcap-lab, stop, --grace, 0s, argocd-application-controller]
        start: [relcap-lab, start, argocd-application-controller]
      timeout: 90s
`
	p, err := Parse("/repo/relcap.yaml", []byte(data), WithStat(fakeStat))
	require.NoError(t, err)
	r := p.Environments[0].Rehearsal
	require.Equal(t, "registry.example.com/ci/web@sha256:"+strings.Repeat("ab", 32), r.UnreadyImage)
	require.Equal(t, []string{"relcap-lab", "stop", "--grace", "0s", "argocd-application-controller"}, r.InterruptStop)
	require.Equal(t, []string{"relcap-lab", "start", "argocd-application-controller"}, r.InterruptStart)
	require.Equal(t, 90*time.Second, r.PhaseTimeout())

	p, err = Parse("/repo/relcap.yaml", []byte(minimalConfig), WithStat(fakeStat))
	require.NoError(t, err)
	require.Equal(t, workflow.DefaultRehearsalTimeout, p.Environments[0].Rehearsal.PhaseTimeout(), "4m when not set")

	for _, c := range []struct{ yaml, want string }{
		{"    rehearsal: {unready_image: registry.example.com/ci/web:2.0}\n",
			`environments[0].rehearsal.unready_image: want a digest reference (repository@sha256:<64 hex>) of a build whose pods never become ready, got "registry.example.com/ci/web:2.0"`},
		{"    rehearsal: {interrupt: {stop: [a]}}\n", "environments[0].rehearsal.interrupt: give both stop and start"},
		{"    rehearsal: {interrupt: {stop: relcap-lab stop, start: [b]}}\n", "environments[0].rehearsal.interrupt.stop: want a list of strings"},
		{"    rehearsal: {timeout: soon}\n", "environments[0].rehearsal.timeout: want a Go duration"},
		{"    rehearsal: {retries: 3}\n", `environments[0].rehearsal.retries: unknown key "retries"`},
	} {
		_, err := Parse("/repo/relcap.yaml", []byte(minimalConfig+c.yaml), WithStat(fakeStat))
		require.Error(t, err, c.yaml)
		require.Contains(t, err.Error(), c.want)
	}
}

func TestParseReadinessGrace(t *testing.T) {
	t.Parallel()
	data := strings.Replace(minimalConfig, "app: web-staging}", "app: web-staging, readiness_grace: 4m}", 1)
	p, err := Parse("/repo/relcap.yaml", []byte(data))
	require.NoError(t, err)
	require.Equal(t, 4*time.Minute, p.Environments[0].ArgoCD.ReadinessGrace)
}

func TestParseCustodyAcceptances(t *testing.T) {
	t.Parallel()
	data := minimalConfig + `    custody:
      accept:
        custody.local-backend: one operator; the state file is backed up nightly
        custody.shared-credentials: "one AWS account until Q3"
`
	p, err := Parse("/repo/relcap.yaml", []byte(data), WithStat(fakeStat))
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"custody.local-backend":      "one operator; the state file is backed up nightly",
		"custody.shared-credentials": "one AWS account until Q3",
	}, p.Environments[0].CustodyAccepted)

	for _, c := range []struct{ yaml, want string }{
		{"    custody: {accept: {custody.local-backnd: x}}\n",
			`environments[0].custody.accept.custody.local-backnd: unknown custody finding "custody.local-backnd" (did you mean "custody.local-backend"?)`},
		{"    custody: {accept: {local-backend: x}}\n", `(did you mean "custody.local-backend"?)`},
		{"    custody: {accept: {custody.local-backend: \"  \"}}\n",
			"environments[0].custody.accept.custody.local-backend: want the reason the team accepts it"},
		{"    custody: {accept: {custody.local-backend: }}\n", "want the reason the team accepts it"},
		{"    custody: {accept: [custody.local-backend]}\n", "environments[0].custody.accept: want a mapping of finding codes to reasons"},
		{"    custody: {accept: {custody.backend: fine}}\n", `unknown custody finding "custody.backend"`},
		{"    custody: {acept: {}}\n", `environments[0].custody.acept: unknown key "acept" (did you mean "accept"?)`},
	} {
		_, err := Parse("/repo/relcap.yaml", []byte(minimalConfig+c.yaml), WithStat(fakeStat))
		require.Error(t, err, c.yaml)
		require.Contains(t, err.Error(), c.want, c.yaml)
	}
}
