package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/signing"
)

// TestSignedApprovalsCountOnlyWithTheApproversOwnKey: with a people file,
// an approval typed as --actor bob by someone holding alice's key is
// refused; bob's own signed approval counts and verifies with ssh-keygen
// -Y verify; once bob's key leaves the people file his approval no longer
// counts at apply time, and counts again when it is back.
func TestSignedApprovalsCountOnlyWithTheApproversOwnKey(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 1, true)
	keys, allowed, people := withPeople(t, cfg, []string{"alice", "bob"})

	data := t.TempDir()
	as := func(key string, args ...string) (int, string, string) {
		return invokeEnv(t, data, append(env, signingEnv+"="+key, "SSH_AUTH_SOCK="), append([]string{"-c", cfg}, args...)...)
	}
	code, out, errOut := as(filepath.Join(keys, "alice"), "--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))

	code, _, errOut = as(filepath.Join(keys, "alice"), "--actor", "bob", "approve", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "alice's key cannot approve as bob")
	require.Contains(t, errOut, "cannot sign as bob")
	require.Contains(t, errOut, "alice", "the refusal says whose key it is")
	code, _, errOut = as("", "--actor", "bob", "approve", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "no key at all: refused, not recorded unsigned")
	require.Contains(t, errOut, "cannot sign as bob")

	code, out, errOut = as(filepath.Join(keys, "bob"), "--actor", "bob", "--json", "approve", "--plan", plan.Fingerprint, "--comment", "checked the replacement")
	require.Equal(t, 0, code, errOut)
	var approved struct {
		Approval struct {
			Signature struct{ Armored, Key string }
		}
		Statement string
		Satisfied bool
	}
	require.NoError(t, json.Unmarshal([]byte(out), &approved))
	require.True(t, approved.Satisfied)
	require.Contains(t, approved.Statement, "subject: "+plan.Fingerprint)
	require.Contains(t, approved.Approval.Signature.Armored, "BEGIN SSH SIGNATURE")

	// By hand, with OpenSSH alone.
	sig := filepath.Join(t.TempDir(), "approval.sig")
	require.NoError(t, os.WriteFile(sig, []byte(approved.Approval.Signature.Armored), 0o600))
	verify := exec.Command("ssh-keygen", "-Y", "verify", "-f", allowed, "-I", "bob", "-n", "relcap-approval", "-s", sig)
	verify.Stdin = bytes.NewReader([]byte(approved.Statement))
	got, err := verify.CombinedOutput()
	require.NoError(t, err, "ssh-keygen -Y verify: %s", got)
	require.Contains(t, string(got), `Good "relcap-approval" signature for bob`)

	// Bob's key leaves the people file: his approval no longer counts.
	require.NoError(t, os.WriteFile(allowed, []byte(strings.SplitAfter(people, "\n")[0]), 0o644))
	code, _, errOut = as(filepath.Join(keys, "alice"), "--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "verified at the time of use")
	require.Contains(t, errOut, "not counted: bob: signature does not verify")

	require.NoError(t, os.WriteFile(allowed, []byte(people), 0o644))
	code, out, errOut = as(filepath.Join(keys, "alice"), "--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied plan")

	// The measures say the decision was signed.
	code, out, errOut = as("", "report", "measures", "--format", "json")
	require.Equal(t, 0, code, errOut)
	var measures struct {
		Approvals struct {
			Signed   int
			Unsigned []struct{ Approver string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &measures), out)
	require.Equal(t, 1, measures.Approvals.Signed)
	require.Empty(t, measures.Approvals.Unsigned)
}

// withPeople gives the release repository of cfg a people file naming
// listed, makes a real SSH key under keys/ for each of listed and unlisted
// (keys the file does not name), and names the file in relcap.yaml. It
// returns the keys' directory, the file and what it holds.
func withPeople(t *testing.T, cfg string, listed []string, unlisted ...string) (keys, allowed, people string) {
	t.Helper()
	keys = filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.MkdirAll(keys, 0o700))
	var b strings.Builder
	for _, who := range append(slices.Clone(listed), unlisted...) {
		line, err := signing.GenerateKeyFile(filepath.Join(keys, who), who+"@laptop")
		require.NoError(t, err)
		if slices.Contains(listed, who) {
			b.WriteString(who + " " + line + "\n")
		}
	}
	allowed = filepath.Join(filepath.Dir(cfg), "allowed_signers")
	require.NoError(t, os.WriteFile(allowed, []byte(b.String()), 0o644))
	c, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(string(c), "environments:", "people: allowed_signers\nenvironments:", 1)), 0o644))
	return keys, allowed, b.String()
}
