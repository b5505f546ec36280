package input_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/input"
)

func TestReferencesOf(t *testing.T) {
	t.Parallel()
	env := func(v string) input.GivenFlag { return input.GivenFlag{Name: "env", Values: []string{v}} }
	release := func(v string) input.GivenFlag { return input.GivenFlag{Name: "release", Values: []string{v}} }

	refs := input.ReferencesOf("relcap effort log", []input.GivenFlag{release("web-prod-1")}, nil, false)
	require.Equal(t, []input.Reference{{As: "--release", Value: "web-prod-1"}}, refs.Releases, "time is logged only against a recorded release")

	refs = input.ReferencesOf("relcap report effort", []input.GivenFlag{env("qa")}, nil, true)
	require.Equal(t, []input.Reference{{As: "--env", Value: "qa"}}, refs.Envs, "a report's environment is checked too")
	require.True(t, refs.EnvsMayBeRecorded, "in relcap.yaml or in the ledger")
	require.False(t, refs.ArgoCD)

	refs = input.ReferencesOf("relcap release", []input.GivenFlag{env("prod")}, nil, false)
	require.Equal(t, []input.Reference{{As: "--env", Value: "prod"}}, refs.Envs)
	require.False(t, refs.EnvsMayBeRecorded, "a command that records needs the environment in relcap.yaml")
	require.True(t, refs.ArgoCD)
	require.True(t, refs.Terraform, "release reads the Terraform root first")
	require.True(t, input.ReferencesOf("relcap plan", []input.GivenFlag{env("prod")}, nil, false).Terraform)
	require.False(t, input.ReferencesOf("relcap converge", []input.GivenFlag{env("prod")}, nil, false).Terraform, "converge never reads Terraform")

	refs = input.ReferencesOf("relcap release abandon", nil, []string{"web-prod-2"}, false)
	require.Equal(t, []input.Reference{{As: string(input.IDRelease), Value: "web-prod-2"}}, refs.Releases)

	refs = input.ReferencesOf("relcap plan", []input.GivenFlag{env("")}, nil, false)
	require.Empty(t, refs.Envs, "an empty value is the command's own default")
}
