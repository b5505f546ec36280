package sandbox_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd"
	argoremote "github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/adapters/argocd/remote/remotetest"
	"github.com/relcap/relcap/adapters/sandbox"
	"github.com/relcap/relcap/adapters/signing"
	"github.com/relcap/relcap/adapters/terraform"
	"github.com/relcap/relcap/adapters/terraform/terraformtest"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/appstate"
	"github.com/relcap/relcap/workflow/config"
	"github.com/relcap/relcap/workflow/finding"
	"github.com/relcap/relcap/workflow/ownership"
	"github.com/relcap/relcap/workflow/tfplan"
)

// newSandbox builds one sandbox for a test, stopped when it ends.
func newSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	remotetest.Helper(t) // the simulator runs in relcap-argocd
	sb, err := sandbox.New(t.Context(), sandbox.Options{Dir: filepath.Join(t.TempDir(), "sandbox"), Terraform: terraformtest.Binary(t), Logf: t.Logf, People: []string{"captain"},
		Helper: argoremote.Config{Build: argoremote.ResolveBuild("dev", "none")}})
	require.NoError(t, err)
	t.Cleanup(sb.Close)
	return sb
}

func ref(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	require.NoError(t, err)
	return r
}

func TestSandboxServesASignedMultiPlatformReleaseAndTwoSyncedApps(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)

	t.Run("registry holds the index, its demo signature and attestation", func(t *testing.T) {
		idx, err := remote.Index(ref(t, sb.Image), remote.WithContext(t.Context()))
		require.NoError(t, err)
		h, err := idx.Digest()
		require.NoError(t, err)
		require.Equal(t, sb.Digest, h.String())
		im, err := idx.IndexManifest()
		require.NoError(t, err)
		require.Len(t, im.Manifests, 2)
		var got []string
		for _, m := range im.Manifests {
			require.NotNil(t, m.Platform)
			got = append(got, m.Platform.String())
			img, err := idx.Image(m.Digest)
			require.NoError(t, err)
			cf, err := img.ConfigFile()
			require.NoError(t, err)
			require.Equal(t, m.Platform.Architecture, cf.Architecture, "the config names the platform too")
		}
		require.ElementsMatch(t, []string{"linux/amd64", "linux/arm64/v8"}, got)
		require.Equal(t, got, sb.Platforms)

		require.Equal(t, "sha256-"+strings.TrimPrefix(sb.Digest, "sha256:")+".sig", sb.SignatureTag)
		sig, err := remote.Image(ref(t, sb.Registry+"/ci/web:"+sb.SignatureTag), remote.WithContext(t.Context()))
		require.NoError(t, err)
		m, err := sig.Manifest()
		require.NoError(t, err)
		require.Len(t, m.Layers, 1)
		require.Equal(t, "application/vnd.dev.cosign.simplesigning.v1+json", string(m.Layers[0].MediaType))
		require.Contains(t, m.Annotations["dev.relcap.sandbox/notice"], "not cryptographically verifiable")
		layer, err := sig.LayerByDigest(m.Layers[0].Digest)
		require.NoError(t, err)
		rc, err := layer.Uncompressed()
		require.NoError(t, err)
		payload, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		require.Contains(t, string(payload), sb.Digest, "the payload names the signed digest")

		refs, err := remote.Referrers(ref(t, sb.Registry+"/ci/web@"+sb.Digest).(name.Digest), remote.WithContext(t.Context()))
		require.NoError(t, err)
		rm, err := refs.IndexManifest()
		require.NoError(t, err)
		require.Len(t, rm.Manifests, 1)
		require.Equal(t, "application/vnd.in-toto+json", rm.Manifests[0].ArtifactType)
	})

	t.Run("environment repository pins both environments on main", func(t *testing.T) {
		r, err := git.PlainOpen(sb.EnvRepo)
		require.NoError(t, err)
		cfg, err := r.Config()
		require.NoError(t, err)
		require.True(t, cfg.Core.IsBare, "bare, so relcap can land on main")
		require.Empty(t, cfg.Remotes)
		head, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
		require.NoError(t, err)
		c, err := r.CommitObject(head.Hash())
		require.NoError(t, err)
		for _, env := range sandbox.Environments {
			f, err := c.File("apps/web/" + env + "/kustomization.yaml")
			require.NoError(t, err, env)
			s, err := f.Contents()
			require.NoError(t, err)
			require.Contains(t, s, "# web in "+env+" (relcap sandbox)")
			require.Contains(t, s, "newName: "+sb.Registry+"/"+env+"/web")
		}
		_, err = c.File("apps/web/base/deployment.yaml")
		require.NoError(t, err)
	})

	t.Run("simulator serves both apps synced and healthy", func(t *testing.T) {
		ad, err := argocd.New(argocd.Options{Server: sb.ArgoCD, AuthToken: sb.Token, TokenEnv: sb.TokenEnv, PlainText: true})
		require.NoError(t, err)
		defer ad.Close()
		for _, env := range sandbox.Environments {
			st, err := ad.Get(t.Context(), appstate.AppRef{Env: env, Server: sb.ArgoCD, Name: sb.Apps[env]})
			require.NoError(t, err, env)
			require.Equal(t, appstate.SyncSynced, st.SyncStatus, env)
			require.Equal(t, appstate.HealthHealthy, st.Health, env)
			require.True(t, st.AutoSync && st.SelfHeal, env)
			require.Equal(t, []string{sb.Registry + "/" + env + "/web:1.4.1"}, st.Images)
		}
	})

	t.Run("relcap.yaml loads and points at the sandbox", func(t *testing.T) {
		p, err := config.Load(sb.Config)
		require.NoError(t, err)
		require.Len(t, p.Environments, 2)
		staging, prod := p.Environments[0], p.Environments[1]
		require.Equal(t, sb.ArgoCD, staging.ArgoCD.Server)
		require.True(t, staging.ArgoCD.PlainText)
		require.Equal(t, sb.TokenEnv, prod.ArgoCD.TokenEnv)
		require.Equal(t, sb.EnvRepo, prod.EnvRepo.Path)
		require.Equal(t, approval.Policy{Plan: 1, Signed: true}, staging.Approvals)
		require.Equal(t, approval.Policy{Plan: 1, Promotion: 1, DistinctFromAuthor: true, Signed: true}, prod.Approvals)
		require.True(t, prod.Registry.RequireSignature)
		require.Equal(t, sb.PeopleFile, p.People)
	})

	t.Run("its people sign with the keys it made, and ssh-keygen agrees", func(t *testing.T) {
		people, err := signing.LoadPeople(sb.PeopleFile)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{sandbox.Approver, "captain"}, people.Principals())
		msg := []byte("relcap approval v1\nkind: plan\n")
		sig, err := signing.NewSigner(signing.SignerOptions{Key: sb.Keys[sandbox.Approver], People: sb.PeopleFile}).
			Sign(t.Context(), sandbox.Approver, approval.NamespaceApproval, msg)
		require.NoError(t, err)
		require.NoError(t, signing.NewVerifier(sb.PeopleFile).Verify(t.Context(), sandbox.Approver, approval.NamespaceApproval, msg, sig, time.Now()))
		fi, err := os.Stat(sb.Keys["captain"])
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "private keys are the person's alone")
	})
}

// TestSandboxOwnershipConflictIsRealAndFixOwnershipResolvesIt checks the
// conflict against the real sources, Terraform state and the simulator's
// managed resources, not against a fixture: the demo must stop for it.
func TestSandboxOwnershipConflictIsRealAndFixOwnershipResolvesIt(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	tf, err := terraform.New(terraform.Options{Binary: terraformtest.Binary(t), PlanDir: filepath.Join(t.TempDir(), "plans")})
	require.NoError(t, err)
	ad, err := argocd.New(argocd.Options{Server: sb.ArgoCD, AuthToken: sb.Token, PlainText: true})
	require.NoError(t, err)
	defer ad.Close()
	sources := []workflow.OwnershipSource{tf, ad.OwnershipSource()}

	check := func() []finding.Finding {
		p, err := config.Load(sb.Config)
		require.NoError(t, err)
		env, err := p.Env("staging")
		require.NoError(t, err)
		var objects []ownership.ManagedObject
		for _, src := range sources {
			objs, err := src.ManagedObjects(t.Context(), env)
			require.NoError(t, err)
			objects = append(objects, objs...)
		}
		return ownership.Check(p.Ownership, objects)
	}

	findings := check()
	require.True(t, finding.Blocking(findings), "%v", findings)
	var blockers []finding.Finding
	for _, f := range findings {
		if f.Severity == finding.Blocker {
			blockers = append(blockers, f)
		}
	}
	require.Len(t, blockers, 1, "exactly one conflict to resolve: %v", findings)
	require.Equal(t, ownership.CodeWrongOwner, blockers[0].Code)
	require.Equal(t, "terraform_data.db_migration", blockers[0].Subject)

	fix, err := sb.FixOwnership()
	require.NoError(t, err)
	require.Contains(t, strings.Join(fix.Removed, "\n"), "owner: argocd")
	require.NotEmpty(t, fix.Reason)
	require.Empty(t, check(), "the fixed map: one owner each, no warnings")

	again, err := sb.FixOwnership()
	require.NoError(t, err)
	require.Empty(t, again.Removed, "fixing twice changes nothing")
	require.Empty(t, again.Added)
}

func TestSandboxFirstPlanReplacesTheMigration(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	p, err := config.Load(sb.Config)
	require.NoError(t, err)
	tf, err := terraform.New(terraform.Options{Binary: terraformtest.Binary(t), PlanDir: filepath.Join(t.TempDir(), "plans")})
	require.NoError(t, err)
	env, err := p.Env("staging")
	require.NoError(t, err)
	facts, err := tf.Plan(t.Context(), env, "captain")
	require.NoError(t, err)
	plan := tfplan.ReviewPlan(facts, p.PlanClassify())
	require.Equal(t, 1, plan.Counts.Update, "%+v", plan.Counts)
	require.Equal(t, 1, plan.Counts.ReplaceDeleteFirst+plan.Counts.ReplaceCreateFirst, "%+v", plan.Counts)
	var replaced []string
	for _, ch := range plan.Changes {
		if len(ch.ReplacePaths) > 0 {
			replaced = append(replaced, ch.Address)
		}
	}
	require.Equal(t, []string{"terraform_data.db_migration"}, replaced)
}

func TestSandboxRefusesADirectoryThatIsNotEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644))
	_, err := sandbox.New(t.Context(), sandbox.Options{Dir: dir})
	require.ErrorContains(t, err, "not empty")
}
