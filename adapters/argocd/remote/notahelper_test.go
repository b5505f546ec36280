package remote_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/remote"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/appstate"
)

// script writes an executable shell script standing in for the helper.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "relcap-argocd")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return p
}

func poolWith(helper string) *remote.Pool {
	return remote.NewPool(&workflow.Project{Environments: []workflow.Environment{{Name: "staging"}}},
		remote.Config{Build: testBuild, Env: []string{remote.EnvHelper + "=" + helper}})
}

// Not parallel: it shortens the handshake's bound for the package.
func TestAProgramThatIsNotTheHelperIsNamedNotWaitedForForever(t *testing.T) {
	remote.SetHelloTimeout(time.Second)
	defer remote.SetHelloTimeout(30 * time.Second)
	ref := appstate.AppRef{Env: "staging", Name: "web-staging"}

	silent := script(t, "exec sleep 60")
	p := poolWith(silent)
	defer p.Close()
	start := time.Now()
	_, err := p.Get(t.Context(), ref)
	require.ErrorContains(t, err, silent+" did not answer relcap within 1s")
	require.Less(t, time.Since(start), 10*time.Second)

	dying := script(t, "echo 'relcap-argocd: cannot start: out of luck' >&2; exit 3")
	p = poolWith(dying)
	defer p.Close()
	_, err = p.Get(t.Context(), ref)
	require.ErrorIs(t, err, remote.ErrHelperStopped)
	require.ErrorContains(t, err, "exit status 3")
	require.ErrorContains(t, err, "cannot start: out of luck", "its last words are in the error")
}
