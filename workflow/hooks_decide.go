package workflow

import "github.com/relcap/relcap/workflow/secret"

// DefaultArgoCDTokenEnv is the variable Argo CD's token is read from when
// an environment names none.
const DefaultArgoCDTokenEnv = "ARGOCD_AUTH_TOKEN"

// Credentials are where the project keeps credentials, for the wiring to
// make secret before anything is printed (secret.Set.LearnCredentials):
// Argo CD's default token variable and each environment's own, each
// environment's forge token variable, the variables of secret_env, and
// each environment repository's URL (which may carry a password).
func (p *Project) Credentials() secret.Credentials {
	c := secret.Credentials{Env: append([]string{DefaultArgoCDTokenEnv}, p.SecretEnv...)}
	for _, env := range p.Environments {
		if env.ArgoCD.TokenEnv != "" {
			c.Env = append(c.Env, env.ArgoCD.TokenEnv)
		}
		if env.EnvRepo.Review.TokenEnv != "" {
			c.Env = append(c.Env, env.EnvRepo.Review.TokenEnv)
		}
		c.URLs = append(c.URLs, env.EnvRepo.Path)
	}
	return c
}
