package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow/approval"
)

// The attacks on identity of issue 26, each run through relcap's command
// line with real keys, ssh-keygen and git.

// TestAPlanIsSignedByItsAuthor (attack 7): a captain holding only their own
// key could plan as --actor bob and then approve their own plan in an
// environment with distinct_from_author, because a plan's author was the
// unverified --actor. Now a plan is signed by its author: planning as bob
// with alice's key is refused, and a plan nobody signed (made before the
// people file, or by an older relcap) can be neither approved nor applied.
func TestAPlanIsSignedByItsAuthor(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 1, true)
	unsignedCfg, err := os.ReadFile(cfg)
	require.NoError(t, err)
	keys, _, _ := withPeople(t, cfg, []string{"alice", "bob"})
	data := t.TempDir()
	asAlice := func(args ...string) (int, string, string) {
		return invokeEnv(t, data, append(env, signingEnv+"="+filepath.Join(keys, "alice"), "SSH_AUTH_SOCK="), append([]string{"-c", cfg}, args...)...)
	}

	code, out, errOut := asAlice("--actor", "bob", "--json", "plan", "--env", "staging")
	require.Equal(t, exitBlocked, code, "alice's key cannot write a plan as bob: %s%s", out, errOut)
	require.Contains(t, errOut, "cannot sign as bob")
	require.Contains(t, errOut, "distinct_from_author")

	// Her own plan is signed by her, and she may not approve it.
	code, out, errOut = asAlice("--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	code, _, errOut = asAlice("--actor", "alice", "approve", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code)
	require.Contains(t, errOut, "distinct_from_author")

	// A plan recorded as bob's without a signature: made while the
	// project had no people file (or by an older relcap, or by typing
	// --actor bob where nothing signs).
	withPeopleCfg, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfg, unsignedCfg, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(cfg), "infra/staging/extra.tf"), []byte("resource \"terraform_data\" \"extra\" {}\n"), 0o644))
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "--actor", "bob", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var forged struct{ Fingerprint string }
	require.NoError(t, json.Unmarshal([]byte(out), &forged))
	require.NoError(t, os.WriteFile(cfg, withPeopleCfg, 0o644))

	code, _, errOut = asAlice("--actor", "alice", "approve", "--plan", forged.Fingerprint)
	require.Equal(t, exitBlocked, code, "alice approving the plan she wrote as bob")
	require.Contains(t, errOut, "not signed by its author")
	require.Contains(t, errOut, "plan again with your own key")
	code, _, errOut = asAlice("--actor", "alice", "apply", "--plan", forged.Fingerprint)
	require.Equal(t, exitBlocked, code)
	require.Contains(t, errOut, "not signed by its author")
	require.NotContains(t, errOut, "applied plan")
}

// TestAnExpiredKeyCannotApproveByBackDating (attack 8): bob's key expired
// yesterday (valid-before). A statement dated two days ago, signed with
// that key, used to count for a plan made today: the signature was checked
// at the time the statement claims. Now it is checked at the time the
// ledger received it, never before the plan was made, and a statement
// dated far from its receipt or before its plan does not count.
func TestAnExpiredKeyCannotApproveByBackDating(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 1, true)
	keys, allowed, people := withPeople(t, cfg, []string{"alice", "bob"})
	yesterday := time.Now().UTC().Add(-24 * time.Hour)
	lines := strings.SplitAfter(people, "\n")
	require.True(t, strings.HasPrefix(lines[1], "bob "))
	lines[1] = `bob valid-before="` + yesterday.Format("20060102150405") + `Z" ` + strings.TrimPrefix(lines[1], "bob ")
	require.NoError(t, os.WriteFile(allowed, []byte(strings.Join(lines, "")), 0o644))

	data := t.TempDir()
	as := func(who string, args ...string) (int, string, string) {
		return invokeEnv(t, data, append(env, signingEnv+"="+filepath.Join(keys, who), "SSH_AUTH_SOCK="), append([]string{"-c", cfg, "--actor", who}, args...)...)
	}
	code, out, errOut := as("alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))

	code, _, errOut = as("bob", "approve", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "relcap approve with the expired key is refused, as before")
	require.Contains(t, errOut, "valid only before")

	// Bob signs, by hand, a statement dated two days ago, when his key
	// was valid, and it reaches the ledger as relcap approve with a clock
	// set back would record it.
	backdated := approval.Approval{Kind: approval.Plan, Subject: plan.Fingerprint, Env: "staging", Approver: "bob", At: yesterday.Add(-24 * time.Hour)}
	sign := exec.Command("ssh-keygen", "-Y", "sign", "-q", "-f", filepath.Join(keys, "bob"), "-n", approval.NamespaceApproval)
	sign.Stdin = bytes.NewReader(backdated.Statement())
	sig, err := sign.Output()
	require.NoError(t, err)
	backdated.Signature = approval.Signature{Armored: string(sig)}
	ledgerPath := filepath.Join(data, "relcap", "ledger.db")
	l, err := store.OpenSQLite(t.Context(), ledgerPath)
	require.NoError(t, err)
	require.NoError(t, l.RecordApproval(t.Context(), backdated))
	require.NoError(t, l.Close())

	code, _, errOut = as("alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "the back-dated approval must not count")
	require.Contains(t, errOut, "not counted: bob")
	require.NotContains(t, errOut, "applied plan")

	// The captain owns an SQLite ledger, so she back-dates the receipt
	// too: the plan's creation still bounds when the signature is checked.
	db, err := sql.Open("sqlite", ledgerPath)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `UPDATE approvals SET received_at = at WHERE approver = 'bob'`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	code, _, errOut = as("alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "the back-dated approval must not count")
	require.Contains(t, errOut, "before what it approves was made")
	require.NotContains(t, errOut, "applied plan")
}

// TestALocalEditOfThePeopleFileForgesNoApprover (attack 9): a captain gave
// her own key to bob in her working copy of the people file, approved her
// own plan as bob, applied it and restored the file; journal verify said
// ok. The people file that counts is now the one committed on the
// protected branch, read from origin: the edited working copy is refused,
// an approval recorded against it does not count at apply, and an
// approval verified against a revision later rewound off the branch fails
// journal verify.
func TestALocalEditOfThePeopleFileForgesNoApprover(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 1, true)
	keys, allowed, people := withPeople(t, cfg, []string{"alice", "bob"})
	dir := filepath.Dir(cfg)
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "release repository")
	origin := filepath.Join(t.TempDir(), "release.git")
	git("clone", "-q", "--bare", dir, origin)
	git("remote", "add", "origin", origin)
	git("fetch", "-q", "origin")

	data := t.TempDir()
	asAlice := func(args ...string) (int, string, string) {
		return invokeEnv(t, data, append(env, signingEnv+"="+filepath.Join(keys, "alice"), "SSH_AUTH_SOCK="), append([]string{"-c", cfg}, args...)...)
	}
	code, out, errOut := asAlice("--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, errOut, "is not protected (", "the people file comes from origin's main")
	var plan struct{ Fingerprint string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))

	// Alice's key, given to bob in her working copy.
	aliceLine := strings.TrimPrefix(strings.SplitAfter(people, "\n")[0], "alice ")
	forged := people + "bob " + aliceLine
	require.NoError(t, os.WriteFile(allowed, []byte(forged), 0o644))
	code, _, errOut = asAlice("--actor", "bob", "approve", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "approving as bob with a locally edited people file")
	require.Contains(t, errOut, "allowed_signers")
	require.Contains(t, errOut, "differs from allowed_signers at origin/main")
	require.Contains(t, errOut, "for bob")
	require.Contains(t, errOut, "push it through review")

	// The approval an older relcap recorded against the edited file.
	a := approval.Approval{Kind: approval.Plan, Subject: plan.Fingerprint, Env: "staging", Approver: "bob", At: time.Now()}
	sign := exec.Command("ssh-keygen", "-Y", "sign", "-q", "-f", filepath.Join(keys, "alice"), "-n", approval.NamespaceApproval)
	sign.Stdin = bytes.NewReader(a.Statement())
	sig, err := sign.Output()
	require.NoError(t, err)
	a.Signature = approval.Signature{Armored: string(sig)}
	l, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	require.NoError(t, l.RecordApproval(t.Context(), a))
	require.NoError(t, l.Close())
	code, _, errOut = asAlice("--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "applied with a forged approver")
	require.Contains(t, errOut, "differs from allowed_signers at origin/main")
	require.NoError(t, os.WriteFile(allowed, []byte(people), 0o644))
	code, _, errOut = asAlice("--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "applied with a forged approver")
	require.Contains(t, errOut, "not counted: bob")

	// She pushes the edit to main itself (a branch nothing protects
	// here), approves as bob, then rewinds main: the approval's recorded
	// revision is no longer the protected branch's.
	require.NoError(t, os.WriteFile(allowed, []byte(forged), 0o644))
	git("commit", "-q", "-am", "bob's key")
	git("push", "-q", "origin", "main")
	code, _, errOut = asAlice("--actor", "bob", "approve", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, errOut)
	git("reset", "-q", "--hard", "HEAD~1")
	git("push", "-q", "-f", "origin", "main")
	code, _, errOut = asAlice("--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, "applied with a forged approver")
	require.Contains(t, errOut, "not counted: bob")
	code, out, errOut = invokeEnv(t, data, env, "-c", cfg, "journal", "verify")
	require.NotEqual(t, 0, code, "journal verify passed a forged approver: %s%s", out, errOut)
	require.Contains(t, out+errOut, "does not hold against the people file it was recorded with")
	require.Contains(t, out+errOut, "not in the history of origin's main")
}

// TestAReleaseIsSignedByItsCaptain (attack 7's other path): a promotion's
// author is the release's captain, which was the unverified --actor too.
// Where promotions need approval by someone other than the captain, a
// release is signed by its captain when it starts: starting one as bob
// with alice's key is refused.
func TestAReleaseIsSignedByItsCaptain(t *testing.T) {
	t.Parallel()
	cfg, env, host := tfRepo(t, 1, true)
	keys, _, _ := withPeople(t, cfg, []string{"alice", "bob"})
	data := t.TempDir()
	pushImage(t, host+"/ci/web:1.4.2")
	code, out, errOut := invokeEnv(t, data, append(env, signingEnv+"="+filepath.Join(keys, "alice"), "SSH_AUTH_SOCK="),
		"-c", cfg, "--actor", "bob", "promote", "--env", "prod", "--image", host+"/ci/web:1.4.2")
	require.Equal(t, exitBlocked, code, out+errOut)
	require.Contains(t, errOut, "cannot sign as bob")
	require.Contains(t, errOut, "signed by their captain")
	require.NotContains(t, out+errOut, "started release")
}
