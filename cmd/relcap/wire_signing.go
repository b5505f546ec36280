package main

import (
	"context"
	"strings"

	"github.com/relcap/relcap/adapters/gitconfig"
	"github.com/relcap/relcap/adapters/signing"
	"github.com/relcap/relcap/workflow"
)

// signingEnv names the person's signing-key setting for relcap alone; it
// wins over git's user.signingkey.
const signingEnv = "RELCAP_SIGNING_KEY"

// wireSigning gives d the actor's signer and the people file's verifier
// when the project names a people file; without one approvals stay
// unsigned, as the configuration allows. The verifier counts the people
// file of the protected branch (origin's), not the working copy.
func (a *app) wireSigning(ctx context.Context, d *workflow.Deps) {
	if d.Project == nil || d.Project.People == "" {
		return
	}
	d.Verifier = signing.NewProtectedVerifier(d.Project.People)
	d.Signer = a.signer(ctx, d.Project, d.Actor)
}

// signer signs as actor with their own key, nil when the project names no
// people file.
func (a *app) signer(ctx context.Context, p *workflow.Project, actor string) workflow.Signer {
	if p == nil || p.People == "" {
		return nil
	}
	return signing.NewSigner(signing.SignerOptions{
		Key:         a.signingKey(ctx, p.Dir, actor),
		AgentSocket: a.io.Getenv("SSH_AUTH_SOCK"),
		People:      p.People,
	})
}

// signingKey is the actor's signing-key setting, found as git finds its
// own: relcap's variable, else git's user.signingkey when git signs with
// SSH (gpg.format = ssh), else empty (the agent's key for the actor). The
// demo's people use the key files its sandbox made.
func (a *app) signingKey(ctx context.Context, repoDir, actor string) string {
	if k, ok := a.demoKeys[actor]; ok {
		return k
	}
	if k := strings.TrimSpace(a.io.Getenv(signingEnv)); k != "" {
		return k
	}
	if k, ok := a.gitSigningKeys[repoDir]; ok {
		return k
	}
	k := gitconfig.SSHSigningKey(ctx, repoDir)
	if a.gitSigningKeys == nil {
		a.gitSigningKeys = map[string]string{}
	}
	a.gitSigningKeys[repoDir] = k
	return k
}
