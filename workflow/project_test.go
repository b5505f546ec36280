package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow"
)

func TestProjectCredentialsNameEveryTokenVariableAndEnvRepoURL(t *testing.T) {
	t.Parallel()
	p := &workflow.Project{SecretEnv: []string{"DB_PASSWORD"}}
	p.Environments = []workflow.Environment{{Name: "staging"}, {Name: "prod"}}
	p.Environments[0].ArgoCD.TokenEnv = "STAGING_ARGO"
	p.Environments[0].EnvRepo.Path = "https://bot:pw@git.example/env.git"
	p.Environments[1].EnvRepo.Review.TokenEnv = "FORGE_TOKEN"
	p.Environments[1].EnvRepo.Path = "/srv/env"
	c := p.Credentials()
	require.Equal(t, []string{workflow.DefaultArgoCDTokenEnv, "DB_PASSWORD", "STAGING_ARGO", "FORGE_TOKEN"}, c.Env)
	require.Equal(t, []string{"https://bot:pw@git.example/env.git", "/srv/env"}, c.URLs)
}
