package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/adapters/store/pgtest"
	"github.com/relcap/relcap/workflow/fault"
)

// sharedPlanTeam is a release repository whose staging environment lets
// alice and bob apply (approvers.apply), with a people file naming alice,
// bob and carol, each with their own ed25519 key, and a PostgreSQL ledger
// the three share. Each person runs relcap on their own "machine": their
// own XDG data and state directories, so their own plan store.
type sharedPlanTeam struct {
	cfg, keys, db string
	env           []string
	data          map[string]string // machine of each person
}

func newSharedPlanTeam(t *testing.T, extraConfig string) *sharedPlanTeam {
	return newSharedPlanTeamOf(t, extraConfig, "alice, bob")
}

// newSharedPlanTeamOf is newSharedPlanTeam with appliers as
// approvers.apply.
func newSharedPlanTeamOf(t *testing.T, extraConfig, appliers string) *sharedPlanTeam {
	t.Helper()
	cfg, env, _ := tfRepo(t, 1, true)
	keys, _, _ := withPeople(t, cfg, []string{"alice", "bob", "carol"})
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	c := strings.Replace(string(b), "distinct_from_author: true}\n", "distinct_from_author: true}\n    approvers: {apply: ["+appliers+"]}\n", 1)
	require.Contains(t, c, "approvers: {apply: ["+appliers+"]}")
	require.NoError(t, os.WriteFile(cfg, []byte(c+extraConfig), 0o644))
	tm := &sharedPlanTeam{cfg: cfg, keys: keys, db: pgtest.Database(t), env: env, data: map[string]string{}}
	for _, who := range []string{"alice", "bob", "carol"} {
		tm.data[who] = t.TempDir()
	}
	return tm
}

// as runs relcap as who, on who's machine, with who's key file.
func (tm *sharedPlanTeam) as(t *testing.T, who string, args ...string) (int, string, string) {
	t.Helper()
	env := append(append([]string{}, tm.env...), signingEnv+"="+filepath.Join(tm.keys, who), "SSH_AUTH_SOCK=")
	return invokeEnv(t, tm.data[who], env, append([]string{"--ledger", tm.db, "-c", tm.cfg, "--actor", who}, args...)...)
}

// planDir is the private plan store of who's machine.
func (tm *sharedPlanTeam) planDir(who string) string {
	return filepath.Join(tm.data[who], "state", "relcap", "plans")
}

func (tm *sharedPlanTeam) plan(t *testing.T) string {
	t.Helper()
	code, out, errOut := tm.as(t, "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	var plan struct{ Fingerprint string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.Contains(t, errOut, "shared in the team store with alice, bob until", "who can apply it, and until when")
	return plan.Fingerprint
}

// TestAPlanMadeOnOneMachineIsAppliedOnAnotherBySomeoneAllowedTo: alice
// plans on her machine; the plan file is shared in PostgreSQL encrypted to
// alice's and bob's keys. bob approves and applies on his machine, which
// never had the file: relcap fetches it, decrypts it with bob's key,
// checks it is the reviewed plan and applies it; then the shared copy is
// gone. carol, in the people file but not in approvers.apply, is refused
// before anything is decrypted, and her machine never holds the plan.
func TestAPlanMadeOnOneMachineIsAppliedOnAnotherBySomeoneAllowedTo(t *testing.T) {
	t.Parallel()
	tm := newSharedPlanTeam(t, "")
	fp := tm.plan(t)
	require.FileExists(t, filepath.Join(tm.planDir("alice"), fp+".tfplan"))

	l, err := store.OpenPostgres(t.Context(), tm.db)
	require.NoError(t, err)
	defer l.Close()
	shared, err := l.SharedPlan(t.Context(), fp)
	require.NoError(t, err)
	require.Equal(t, "alice", shared.SharedBy)
	principals := map[string]bool{}
	for _, r := range shared.Recipients {
		principals[r.Principal] = true
	}
	require.Equal(t, map[string]bool{"alice": true, "bob": true}, principals, "carol is not a recipient")
	plan, err := l.LoadPlan(t.Context(), fp)
	require.NoError(t, err)
	require.NotContains(t, string(shared.Ciphertext), "terraform_data", "the store holds ciphertext only")

	code, _, errOut := tm.as(t, "bob", "approve", "--plan", fp, "--comment", "checked")
	require.Equal(t, 0, code, errOut)

	code, _, errOut = tm.as(t, "carol", "apply", "--plan", fp)
	require.Equal(t, exitBlocked, code, errOut)
	require.Contains(t, errOut, "carol may not apply plans in staging: approvers.apply lists alice, bob")
	_, err = os.Stat(filepath.Join(tm.planDir("carol"), fp+".tfplan"))
	require.True(t, os.IsNotExist(err), "nothing decrypted on carol's machine")

	// Allowed to apply after the plan was shared, carol still cannot
	// decrypt it: her key is not one it is encrypted to.
	b, err := os.ReadFile(tm.cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tm.cfg, []byte(strings.Replace(string(b), "apply: [alice, bob]", "apply: [alice, bob, carol]", 1)), 0o644))
	code, _, errOut = tm.as(t, "carol", "apply", "--plan", fp)
	require.Equal(t, exitBlocked, code, errOut)
	require.Contains(t, errOut, "carol cannot decrypt plan")
	require.Contains(t, errOut, "encrypted to the keys of alice, bob")
	require.NotContains(t, errOut, "age:", "not age's own stack of errors")
	_, err = os.Stat(filepath.Join(tm.planDir("carol"), fp+".tfplan"))
	require.True(t, os.IsNotExist(err))

	_, err = os.Stat(filepath.Join(tm.planDir("bob"), fp+".tfplan"))
	require.True(t, os.IsNotExist(err), "bob's machine never had the plan")
	code, out, errOut := tm.as(t, "bob", "apply", "--plan", fp)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied plan "+fp)

	_, err = l.SharedPlan(t.Context(), fp)
	require.ErrorIs(t, err, fault.ErrNotFound, "deleted after apply")
	applied, err := l.LoadPlan(t.Context(), fp)
	require.NoError(t, err)
	require.False(t, applied.AppliedAt.IsZero())
	require.NotEqual(t, filepath.Dir(plan.PlanFile), tm.planDir("bob"), "the ledger's path is alice's")

	// bob's journal says where the plan came from; alice's, with whom it
	// was shared.
	requireJournaled(t, tm.data["bob"], `"kind":"plan.fetched"`, `"shared_by":"alice"`, "the team store postgres://")
	requireJournaled(t, tm.data["alice"], `"kind":"plan.shared"`, `"principals":["alice","bob"]`, `"expires_at"`)

	code, _, errOut = tm.as(t, "alice", "apply", "--plan", fp)
	require.Equal(t, exitBlocked, code, "never applied twice")
	require.Contains(t, errOut, "already applied")
}

// TestAnExpiredSharedPlanIsRefusedAndDeleted: past plans.expiry, bob's
// apply on his machine is refused saying to plan again, nothing is
// applied, and the shared copy is deleted.
func TestAnExpiredSharedPlanIsRefusedAndDeleted(t *testing.T) {
	t.Parallel()
	tm := newSharedPlanTeam(t, "plans: {expiry: 1s}\n")
	fp := tm.plan(t)
	code, _, errOut := tm.as(t, "bob", "approve", "--plan", fp)
	require.Equal(t, 0, code, errOut)
	time.Sleep(1500 * time.Millisecond) // past the configured expiry, on the real clock

	code, _, errOut = tm.as(t, "bob", "apply", "--plan", fp)
	require.Equal(t, exitBlocked, code, errOut)
	require.Contains(t, errOut, "expired at")
	require.Contains(t, errOut, "relcap plan --env staging again")
	_, err := os.Stat(filepath.Join(tm.planDir("bob"), fp+".tfplan"))
	require.True(t, os.IsNotExist(err))

	l, err := store.OpenPostgres(t.Context(), tm.db)
	require.NoError(t, err)
	defer l.Close()
	_, err = l.SharedPlan(t.Context(), fp)
	require.ErrorIs(t, err, fault.ErrNotFound, "deleted when found expired")
	p, err := l.LoadPlan(t.Context(), fp)
	require.NoError(t, err)
	require.True(t, p.AppliedAt.IsZero(), "nothing applied")
}

// requireJournaled finds an entry holding every one of parts in the
// journals of the machine whose data directory is data.
func requireJournaled(t *testing.T, data string, parts ...string) {
	t.Helper()
	journals, err := filepath.Glob(filepath.Join(data, "relcap", "sessions", "*", "journal.jsonl"))
	require.NoError(t, err)
	var all strings.Builder
	for _, j := range journals {
		b, err := os.ReadFile(j)
		require.NoError(t, err)
		for line := range strings.SplitSeq(string(b), "\n") {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(line, p)
			}
			if ok && line != "" {
				return
			}
		}
		all.Write(b)
	}
	t.Fatalf("no journal entry with %q in:\n%s", parts, all.String())
}

// TestWithSQLitePlansStayOnTheirMachine: the same project on an SQLite
// ledger shares nothing (its shared_plans table stays empty) and applies
// the local plan file as before; approvers.apply holds there too.
func TestWithSQLitePlansStayOnTheirMachine(t *testing.T) {
	t.Parallel()
	tm := newSharedPlanTeam(t, "")
	data := t.TempDir() // one machine, its ledger under XDG_DATA_HOME
	as := func(who string, args ...string) (int, string, string) {
		env := append(append([]string{}, tm.env...), signingEnv+"="+filepath.Join(tm.keys, who), "SSH_AUTH_SOCK=")
		return invokeEnv(t, data, env, append([]string{"-c", tm.cfg, "--actor", who}, args...)...)
	}
	code, out, errOut := as("alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, errOut, "team store")
	var plan struct{ Fingerprint string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))

	l, err := store.OpenSQLite(t.Context(), filepath.Join(data, "relcap", "ledger.db"))
	require.NoError(t, err)
	_, err = l.SharedPlan(t.Context(), plan.Fingerprint)
	require.ErrorIs(t, err, fault.ErrNotFound, "nothing shared")
	require.NoError(t, l.Close())

	code, _, errOut = as("bob", "approve", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, errOut)
	code, _, errOut = as("carol", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitBlocked, code, errOut)
	require.Contains(t, errOut, "approvers.apply lists alice, bob")
	code, out, errOut = as("alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied plan")
	require.NotContains(t, errOut, "team store")
}

// TestAProtectedKeyDecryptsWithTheGivenPassphrase: dana's key is
// protected by a passphrase; without a terminal her apply says how to
// give it, and with RELCAP_SSH_PASSPHRASE it applies, the passphrase
// masked in what relcap writes.
func TestAProtectedKeyDecryptsWithTheGivenPassphrase(t *testing.T) {
	t.Parallel()
	tm := newSharedPlanTeamOf(t, "", "alice, dana")
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	const pass = "correct-horse-battery"
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "dana@laptop", []byte(pass))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tm.keys, "dana"), pem.EncodeToMemory(block), 0o600))
	sshPub, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	allowed := filepath.Join(filepath.Dir(tm.cfg), "allowed_signers")
	f, err := os.OpenFile(allowed, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("dana " + string(ssh.MarshalAuthorizedKey(sshPub)))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	tm.data["dana"] = t.TempDir()

	code, out, errOut := tm.as(t, "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "shared in the team store with alice, dana")
	var plan struct{ Fingerprint string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	code, _, errOut = tm.as(t, "bob", "approve", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, errOut)

	code, _, errOut = tm.as(t, "dana", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "protected by a passphrase")
	require.Contains(t, errOut, passphraseEnv)

	tm.env = append(tm.env, passphraseEnv+"="+pass)
	code, out, errOut = tm.as(t, "dana", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied plan")
	requireJournaled(t, tm.data["dana"], `"kind":"plan.fetched"`)
	journals, err := filepath.Glob(filepath.Join(tm.data["dana"], "relcap", "sessions", "*", "journal.jsonl"))
	require.NoError(t, err)
	for _, j := range journals {
		b, err := os.ReadFile(j)
		require.NoError(t, err)
		require.NotContains(t, string(b), pass)
	}
	require.NotContains(t, out+errOut, pass)
}
