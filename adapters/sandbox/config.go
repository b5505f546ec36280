package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/adapters/signing"
)

// relcapYAML is the sandbox's relcap.yaml. Staging needs one plan approval
// the captain may give; prod needs a plan and a promotion approval from
// someone else, and an image signature (the demo one). Every approval is
// signed with the approver's own SSH key, made by the sandbox.
const relcapYAML = `# relcap.yaml of the relcap sandbox, written by relcap demo. Everything it
# names runs on this machine: an OCI registry and an Argo CD API simulator
# on 127.0.0.1 (they stop when relcap demo exits), a bare environment
# repository and Terraform roots of built-in terraform_data resources.
version: 1
app: web
# A sandbox's releases are practice: reports never count them as releases,
# saved hours or deployments, and say how many they left out.
sandbox: true
ownership: ownership.yaml
# Who is who, by SSH key (git's allowed-signers format): the sandbox made a
# key for the captain and for demo-approver, kept in people/.
people: allowed_signers
environments:
  - name: staging
    terraform: {dir: infra/staging, workspace: default, var_files: [staging.tfvars]{{binary}}}
    registry: {repository: {{registry}}/staging/web, require_signature: false}
    envrepo: {path: env.git, branch: main, file: apps/web/staging/kustomization.yaml, image: web, format: kustomize}
    argocd: {server: "{{argocd}}", app: web-staging, token_env: {{token_env}}, plaintext: true}
    approvals: {plan: 1, promotion: 0, distinct_from_author: false}
    # The sandbox keeps each environment's Terraform state in a local file:
    # fine for practice, a blocker in a real production. Accepted here, with
    # the reason, so every review shows it (docs/CUSTODY.md).
    custody: {accept: {custody.local-backend: "the sandbox: practice state in a local file"}}
  - name: prod
    production: true
    terraform: {dir: infra/prod, workspace: default, var_files: [prod.tfvars]{{binary}}}
    registry: {repository: {{registry}}/prod/web, require_signature: true}
    envrepo: {path: env.git, branch: main, file: apps/web/prod/kustomization.yaml, image: web, format: kustomize}
    argocd: {server: "{{argocd}}", app: web-prod, token_env: {{token_env}}, plaintext: true}
    approvals: {plan: 1, promotion: 1, distinct_from_author: true}
    custody: {accept: {custody.local-backend: "the sandbox: practice state in a local file"}}
effort: {idle_threshold: 2m, baseline_hours_per_release: 3}
`

// ownershipHeader opens both versions of ownership.yaml.
const ownershipHeader = `# ownership.yaml of the relcap sandbox: one owner for every object and
# field the sandbox's tools manage. The first matching rule wins.
version: 1
rules:
`

// ownershipConflict is the rule that makes the sandbox's ownership check
// block: it gives a resource Terraform manages to Argo CD.
const ownershipConflict = `  # "The schema migration moved to an Argo CD PreSync hook" - but it never
  # did: Terraform still runs terraform_data.db_migration. This rule is the
  # sandbox's ownership conflict, on purpose; relcap demo resolves it.
  - match: {terraform_address: terraform_data.db_migration}
    owner: argocd
`

// ownershipRules are the rules both versions share.
const ownershipRules = `  # What Terraform applies in infra/<env>, the schema migration included.
  - match: {terraform_type: terraform_data}
    owner: terraform
  # The web workload, deployed by Argo CD from the environment repository.
  - match: {group: apps, kind: Deployment, namespace: web}
    owner: argocd
`

// OwnershipBroken and OwnershipFixed are ownership.yaml as the sandbox
// writes it and as FixOwnership leaves it.
var (
	OwnershipBroken = ownershipHeader + ownershipConflict + ownershipRules
	OwnershipFixed  = ownershipHeader + ownershipRules
)

// startSimulator serves one automated, self-healing application per
// environment, following the environment repository's main and already
// synced at its tip, as Argo CD would be before the release. The
// simulator runs in relcap's Argo CD helper (relcap-argocd simulate).
func (s *Sandbox) startSimulator(ctx context.Context, helper remote.Config, logf func(string, ...any)) error {
	var spec remote.SimSpec
	for _, env := range Environments {
		name := App + "-" + env
		spec.Apps = append(spec.Apps, remote.SimApp{
			Name: name, RepoPath: s.EnvRepo, Branch: "main", Path: kustomizationPath(env),
			Namespace: "web", Workload: App, Replicas: 2,
			Automated: true, SelfHeal: true, InitiallySynced: true, TimeToHealthy: timeToHealthy,
		})
		s.Apps[env] = name
	}
	sim, err := remote.StartSimulator(ctx, spec, helper, logf)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	s.sim, s.ArgoCD, s.Token = sim, sim.Addr, sim.Token
	return nil
}

// writePeople makes an SSH key for each person and the people file that
// gives each their key, so the demo signs approvals like a team does.
func (s *Sandbox) writePeople(people []string) error {
	dir := filepath.Join(s.Dir, "people")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	s.PeopleFile, s.Keys = filepath.Join(s.Dir, "allowed_signers"), map[string]string{}
	var b strings.Builder
	b.WriteString("# The sandbox's people: principal, then the SSH public key relcap demo made.\n")
	for _, who := range people {
		if _, done := s.Keys[who]; done || who == "" {
			continue
		}
		key := filepath.Join(dir, who)
		line, err := signing.GenerateKeyFile(key, who+"@relcap-sandbox")
		if err != nil {
			return fmt.Errorf("sandbox: key for %s: %w", who, err)
		}
		s.Keys[who] = key
		b.WriteString(who + " " + line + "\n")
	}
	if err := os.WriteFile(s.PeopleFile, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// writeConfig writes relcap.yaml, ownership.yaml (with the conflict) and a
// README naming what is where.
func (s *Sandbox) writeConfig(binary string) error {
	bin := ""
	if binary != "" {
		bin = fmt.Sprintf(", binary: %q", binary)
	}
	cfg := strings.NewReplacer("{{registry}}", s.Registry, "{{argocd}}", s.ArgoCD, "{{token_env}}", s.TokenEnv, "{{binary}}", bin).Replace(relcapYAML)
	files := []struct{ path, content string }{
		{s.Config, cfg},
		{s.OwnershipFile, OwnershipBroken},
		{filepath.Join(s.Dir, "README.txt"), s.readme()},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, []byte(f.content), 0o644); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return nil
}

func (s *Sandbox) readme() string {
	return fmt.Sprintf(`relcap sandbox, written by relcap demo.

relcap.yaml      the release configuration (staging, then prod)
ownership.yaml   the ownership map
allowed_signers  the people file: each person's SSH public key
people/          the SSH keys the sandbox made for the captain and demo-approver
env.git          the environment repository (bare) the Argo CD simulator follows
infra/<env>      Terraform roots of terraform_data resources, with their state
ledger.db        relcap's ledger of this sandbox (unless relcap demo was given --ledger)
sessions/        the journals of the demo's sessions

While relcap demo ran, the registry served %s and the Argo CD API simulator
%s; both stopped when it exited. What they recorded stays here:

  relcap --ledger %s journal list
  relcap -c %s --ledger %s journal verify
  git -C %s log --oneline main refs/relcap/journal
`, s.Registry, s.ArgoCD, filepath.Join(s.Dir, LedgerFile), s.Config, filepath.Join(s.Dir, LedgerFile), s.EnvRepo)
}

// OwnershipFix says what FixOwnership changed.
type OwnershipFix struct {
	// File is the ownership map that was rewritten.
	File string
	// Reason explains the fix in one sentence.
	Reason string
	// Removed and Added are the lines that went and came, in file order.
	Removed, Added []string
}

// FixOwnership rewrites ownership.yaml to the correct map: the rule that
// gave terraform_data.db_migration to Argo CD goes, so Terraform, which
// manages it, owns it. Calling it again changes nothing.
func (s *Sandbox) FixOwnership() (OwnershipFix, error) {
	fix := OwnershipFix{File: s.OwnershipFile,
		Reason: "terraform_data.db_migration is managed by Terraform, not by Argo CD: the rule giving it to argocd is removed, so the terraform_data rule gives it to terraform"}
	before, err := os.ReadFile(s.OwnershipFile)
	if err != nil {
		return fix, fmt.Errorf("sandbox: read %s: %w", s.OwnershipFile, err)
	}
	fix.Removed, fix.Added = lineDiff(string(before), OwnershipFixed)
	if len(fix.Removed) == 0 && len(fix.Added) == 0 {
		return fix, nil
	}
	if err := os.WriteFile(s.OwnershipFile, []byte(OwnershipFixed), 0o644); err != nil {
		return fix, fmt.Errorf("sandbox: write %s: %w", s.OwnershipFile, err)
	}
	return fix, nil
}

// lineDiff returns the lines of a that are not in b and the lines of b
// that are not in a, by a longest common subsequence of lines, in order.
// The files are a few dozen lines, so the quadratic table is nothing.
func lineDiff(a, b string) (removed, added []string) {
	al := strings.Split(strings.TrimRight(a, "\n"), "\n")
	bl := strings.Split(strings.TrimRight(b, "\n"), "\n")
	// lcs[i][j] is the LCS length of al[i:] and bl[j:].
	lcs := make([][]int, len(al)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(bl)+1)
	}
	for i := len(al) - 1; i >= 0; i-- {
		for j := len(bl) - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(al) && j < len(bl) {
		switch {
		case al[i] == bl[j]:
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			removed = append(removed, al[i])
			i++
		default:
			added = append(added, bl[j])
			j++
		}
	}
	removed = append(removed, al[i:]...)
	added = append(added, bl[j:]...)
	return removed, added
}
