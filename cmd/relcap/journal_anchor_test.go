package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/gitrepo"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/audit"
	"github.com/relcap/relcap/workflow/journal"
)

// verified is what journal verify --json says of one session.
type verified struct {
	Session string
	Intact  bool
	Failed  []string
	Checks  map[string]struct{ Status, Detail string }
	// Unsigned says why a head has no signature.
	Unsigned  string
	Approvals []struct {
		Approver  string
		Signed    bool
		Signature struct{ Status string }
	}
}

// TestJournalHeadsAreSignedAndAnchoredAndEachAttackIsCaught: sessions of
// plan, approve and apply close with their heads signed by their actors'
// own keys and anchored on refs/relcap/journal of the (real, bare)
// environment repository; a head checks by hand with git and ssh-keygen
// alone; and each attack an auditor fears, done with the tools at hand on
// the real SQLite ledger and journal files, is caught by journal verify
// (exit 3), naming the session and the check that failed: the session's
// ledger row deleted; its journal and ledger head rewritten together; its
// head re-signed with a key the people file does not hold, or with
// someone else's.
func TestJournalHeadsAreSignedAndAnchoredAndEachAttackIsCaught(t *testing.T) {
	t.Parallel()
	cfg, env, _ := tfRepo(t, 1, false)
	envRepo := envRepoOf(t, cfg)
	// mallory's key is nobody's in the people file.
	keys, allowed, _ := withPeople(t, cfg, []string{"alice", "bob"}, "mallory")

	data := t.TempDir()
	ledger := filepath.Join(data, "relcap", "ledger.db")
	as := func(who string, args ...string) (int, string, string) {
		key := ""
		if who != "" {
			key = filepath.Join(keys, who)
		}
		return invokeEnv(t, data, append(env, signingEnv+"="+key, "SSH_AUTH_SOCK="), append([]string{"-c", cfg}, args...)...)
	}
	verify := func() (int, map[string]verified, string, string) {
		code, out, errOut := as("", "--json", "journal", "verify")
		var list []verified
		require.NoError(t, json.Unmarshal([]byte(out), &list), out+errOut)
		byID := map[string]verified{}
		for _, v := range list {
			byID[v.Session] = v
		}
		_, text, textErr := as("", "journal", "verify")
		return code, byID, text, textErr + errOut
	}

	code, out, errOut := as("alice", "--actor", "alice", "--json", "plan", "--env", "staging")
	require.Equal(t, 0, code, errOut)
	// The environment repository is local and has no origin: the one
	// warning is that its anchors can be rewound unnoticed.
	require.Regexp(t, `relcap: warning: the journal head of session \S+ is anchored, but anchor not protected: `+regexp.QuoteMeta(envRepo)+` has no origin; rewinds cannot be detected`, errOut)
	require.Equal(t, 1, strings.Count(errOut, "relcap: warning"), "alice's head is signed and anchored: %s", errOut)
	var plan struct{ Fingerprint, Release string }
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	code, _, errOut = as("bob", "--actor", "bob", "approve", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, errOut)
	code, _, errOut = as("alice", "--actor", "alice", "apply", "--plan", plan.Fingerprint)
	require.Equal(t, 0, code, errOut)
	// carol has no key: her session is sealed unsigned, and says so.
	code, _, errOut = as("", "--actor", "carol", "effort", "log", "--release", plan.Release, "--minutes", "5", "--what", "standup")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `relcap: warning: the journal head of session \S+ is not signed: carol could not sign: `, errOut)

	sessions := sessionsByCommand(t, data)
	planID, approveID, applyID, carolID := sessions["plan"], sessions["approve"], sessions["apply"], sessions["effort log"]

	code, byID, text, textErr := verify()
	require.Equal(t, 0, code, text+textErr)
	require.Len(t, byID, 4)
	for _, id := range []string{planID, approveID, applyID} {
		v := byID[id]
		require.True(t, v.Intact, "%s: %v", id, v.Failed)
		for _, check := range []string{"chain", "ledger_head", "ledger_copy", "recordings", "signature", "anchor"} {
			require.Equal(t, "ok", v.Checks[check].Status, "%s %s: %s", id, check, v.Checks[check].Detail)
		}
	}
	require.Len(t, byID[approveID].Approvals, 1, "bob's approval, as journaled")
	require.Equal(t, "bob", byID[approveID].Approvals[0].Approver)
	require.True(t, byID[approveID].Approvals[0].Signed)
	require.Equal(t, "ok", byID[approveID].Approvals[0].Signature.Status)
	require.True(t, byID[carolID].Intact, "unsigned is not tampering")
	require.Equal(t, "absent", byID[carolID].Checks["signature"].Status)
	require.Contains(t, byID[carolID].Unsigned, "carol could not sign")
	require.Equal(t, "ok", byID[carolID].Checks["anchor"].Status, "anchored all the same")
	require.Equal(t, 4, strings.Count(text, "ok       "), text)
	require.Contains(t, textErr, "warning  "+carolID+"  unsigned: carol could not sign")

	// By hand, with git and OpenSSH alone: the anchored head of bob's
	// session and its signature.
	show, err := exec.Command("git", "--git-dir", envRepo, "show", "refs/relcap/journal:"+gitrepo.AnchorFile(approveID)).Output()
	require.NoError(t, err)
	var anchored audit.AnchoredHead
	require.NoError(t, json.Unmarshal(show, &anchored))
	require.Equal(t, "bob", anchored.Head.Actor)
	sigFile := filepath.Join(t.TempDir(), "head.sig")
	require.NoError(t, os.WriteFile(sigFile, []byte(anchored.Signature.Armored), 0o600))
	check := exec.Command("ssh-keygen", "-Y", "verify", "-f", allowed, "-I", "bob", "-n", "relcap-journal", "-s", sigFile)
	check.Stdin = strings.NewReader(anchored.Statement)
	got, err := check.CombinedOutput()
	require.NoError(t, err, "ssh-keygen -Y verify: %s", got)
	require.Contains(t, string(got), `Good "relcap-journal" signature for bob`)
	commits, err := exec.Command("git", "--git-dir", envRepo, "rev-list", "--count", "refs/relcap/journal").Output()
	require.NoError(t, err)
	require.Equal(t, "4", strings.TrimSpace(string(commits)), "one anchor commit per session")

	db, err := sql.Open("sqlite", ledger)
	require.NoError(t, err)
	defer db.Close()
	sqlExec := func(q string, args ...any) {
		t.Helper()
		_, err := db.ExecContext(t.Context(), q, args...)
		require.NoError(t, err, q)
	}

	// (a) The captain deletes alice's plan session from the ledger. The
	// trigger that refuses it is no obstacle to someone with the file.
	sqlExec(`DROP TRIGGER sessions_no_delete`)
	sqlExec(`DELETE FROM sessions WHERE id = ?`, planID)
	code, byID, text, textErr = verify()
	require.Equal(t, exitBlocked, code, text+textErr)
	requireFailed(t, byID[planID], "ledger_head")
	require.Contains(t, byID[planID].Checks["ledger_head"].Detail, "its ledger row was deleted")
	require.Contains(t, text, "TAMPERED "+planID)
	require.Contains(t, text, "ledger_head: the ledger has no session "+planID+", but refs/relcap/journal of "+envRepo+" holds its head")
	require.Contains(t, textErr, "1 of 4 journal(s) failed verification: "+planID)

	// (b) alice's apply session: one entry rewritten, the chain re-hashed
	// after it, the file replaced, and the ledger's head moved to match.
	// The ledger's copy of the journal, left as it was, disagrees with the
	// file from the rewritten entry on.
	path := store.SessionFiles{Dir: filepath.Join(data, "relcap", "sessions")}.JournalPath(applyID)
	seq, hash := rewriteJournal(t, path)
	sqlExec(`DROP TRIGGER sessions_sealed_head`)
	sqlExec(`UPDATE sessions SET head_seq = ?, head_hash = ? WHERE id = ?`, seq, hash, applyID)
	code, byID, text, textErr = verify()
	require.Equal(t, exitBlocked, code, text+textErr)
	requireFailed(t, byID[applyID], "ledger_copy", "signature", "anchor")
	require.Equal(t, "line 2 (entry 2): differs from the ledger's copy of entry 2: one of them was rewritten", byID[applyID].Checks["ledger_copy"].Detail)
	// The forger rewrites the ledger's copy too: only the signature and
	// the anchor are left to tell.
	rewritten, err := store.ReadJournal(path)
	require.NoError(t, err)
	sqlExec(`DROP TRIGGER journal_entries_no_update`)
	for _, l := range rewritten {
		var e journal.Entry
		require.NoError(t, json.Unmarshal(l.Text, &e))
		sqlExec(`UPDATE journal_entries SET line = ?, hash = ? WHERE session_id = ? AND seq = ?`, string(l.Text), e.Hash, applyID, e.Seq)
	}
	code, byID, text, textErr = verify()
	require.Equal(t, exitBlocked, code, text+textErr)
	requireFailed(t, byID[applyID], "signature", "anchor")
	require.Equal(t, "ok", byID[applyID].Checks["chain"].Status, "the rewritten chain is a chain")
	require.Equal(t, "ok", byID[applyID].Checks["ledger_head"].Status, "and the ledger agrees with it")
	require.Contains(t, byID[applyID].Checks["signature"].Detail, "the signature does not match the statement")
	require.Contains(t, byID[applyID].Checks["anchor"].Detail, "the journal was rewritten after it was anchored")
	require.Contains(t, text, "TAMPERED "+applyID)
	require.Regexp(t, `TAMPERED `+applyID+`  \S+: entry \d+: signature: the head in the ledger is not alice's: `, text)
	require.Contains(t, text, "\n         failed anchor: the journal ends at entry")
	requireFailedList(t, textErr, 4, planID, applyID)

	// (c) bob's approval session re-signed with mallory's key, which the
	// people file does not hold; then with alice's, which is not bob's.
	l, err := store.OpenSQLite(t.Context(), ledger)
	require.NoError(t, err)
	seal, err := l.SessionSeal(t.Context(), approveID)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	statement := string(seal.Head.Statement())
	for _, signer := range []struct{ key, want string }{
		{"mallory", "is not in " + allowed},
		{"alice", "gives alice, not bob"},
	} {
		armored, fp := sshSign(t, filepath.Join(keys, signer.key), statement)
		sqlExec(`UPDATE sessions SET head_signature = ?, head_signing_key = ? WHERE id = ?`, armored, fp, approveID)
		code, byID, text, textErr = verify()
		require.Equal(t, exitBlocked, code, text+textErr)
		requireFailed(t, byID[approveID], "signature", "anchor")
		require.Contains(t, byID[approveID].Checks["signature"].Detail, signer.want, signer.key)
		require.Contains(t, byID[approveID].Checks["anchor"].Detail, "is not the anchored one", signer.key)
		require.Contains(t, text, "TAMPERED "+approveID)
		requireFailedList(t, textErr, 4, planID, approveID, applyID)
	}
	require.True(t, byID[carolID].Intact, "the untouched session still verifies")
}

// requireFailed asserts that exactly the checks named failed.
func requireFailed(t *testing.T, v verified, checks ...string) {
	t.Helper()
	require.False(t, v.Intact, v.Session)
	var names []string
	for _, f := range v.Failed {
		name, _, _ := strings.Cut(f, ":")
		names = append(names, name)
	}
	require.Equal(t, checks, names, "%s: %v", v.Session, v.Failed)
}

// sessionsByCommand maps each command to its session's ID.
func sessionsByCommand(t *testing.T, data string) map[string]string {
	t.Helper()
	code, out, errOut := invokeEnv(t, data, nil, "--json", "journal", "list")
	require.Equal(t, 0, code, errOut)
	var sessions []workflow.Session
	require.NoError(t, json.Unmarshal([]byte(out), &sessions))
	byCommand := map[string]string{}
	for _, s := range sessions {
		byCommand[s.Command] = s.ID
	}
	return byCommand
}

// envRepoOf is the environment repository relcap.yaml names.
func envRepoOf(t *testing.T, cfg string) string {
	t.Helper()
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	m := regexp.MustCompile(`path: (/[^,]+),`).FindSubmatch(b)
	require.NotNil(t, m, "relcap.yaml names an absolute envrepo path")
	return string(m[1])
}

// rewriteJournal changes the actor of the journal's second entry, seals
// every entry again after it, as a forger with the journal package would,
// and returns the new head.
func rewriteJournal(t *testing.T, path string) (int64, string) {
	t.Helper()
	lines, err := store.ReadJournal(path)
	require.NoError(t, err)
	var (
		out  bytes.Buffer
		prev *journal.Entry
	)
	for i, l := range lines {
		var e journal.Entry
		require.NoError(t, json.Unmarshal(l.Text, &e))
		if i == 1 {
			e.Actor = "someone-else"
		}
		if prev != nil {
			e.Prev = prev.Hash
		}
		e.Hash = e.ComputeHash()
		b, err := json.Marshal(e)
		require.NoError(t, err)
		out.Write(append(b, '\n'))
		prev = &e
	}
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o600))
	return prev.Seq, prev.Hash
}

// sshSign signs statement in namespace relcap-journal with the key file,
// as ssh-keygen -Y sign does, and returns the signature and the key's
// SHA-256 fingerprint.
func sshSign(t *testing.T, key, statement string) (string, string) {
	t.Helper()
	msg := filepath.Join(t.TempDir(), "head.txt")
	require.NoError(t, os.WriteFile(msg, []byte(statement), 0o600))
	out, err := exec.Command("ssh-keygen", "-Y", "sign", "-f", key, "-n", "relcap-journal", msg).CombinedOutput()
	require.NoError(t, err, string(out))
	sig, err := os.ReadFile(msg + ".sig")
	require.NoError(t, err)
	fp, err := exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", key+".pub").Output()
	require.NoError(t, err)
	return string(sig), strings.Fields(string(fp))[1]
}

// TestAHeadThatCannotBeAnchoredSaysWhy: where the environment repository
// cannot be reached, the command still succeeds and says its head is not
// anchored; journal verify says it could not read the anchors (so a
// deleted row would go unnoticed) instead of passing; once the repository
// is there, the session is reported as unanchored, not as tampered.
func TestAHeadThatCannotBeAnchoredSaysWhy(t *testing.T) {
	t.Parallel()
	dir := releaseRepo(t, validConfig) // envrepo.path env: a directory, no repository
	cfg := filepath.Join(dir, "relcap.yaml")
	data := t.TempDir()
	seedRelease(t, filepath.Join(data, "relcap", "ledger.db"), "web-prod-1", "prod")
	code, _, errOut := invoke(t, data, "-c", cfg, "effort", "log", "--release", "web-prod-1", "--minutes", "30", "--what", "go/no-go call")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `relcap: warning: the journal head of session \S+ is not anchored: .*envrepo.path `+regexp.QuoteMeta(filepath.Join(dir, "env"))+` is not a git repository`, errOut)
	require.NotContains(t, errOut, "not signed", "no people file: unsigned by design, not worth a warning")

	code, out, errOut := invoke(t, data, "-c", cfg, "journal", "verify")
	require.Equal(t, exitUsage, code, out+errOut)
	require.Contains(t, out, "ok       ", "what could be checked is printed")
	require.Contains(t, errOut, "could not be read, so no session's anchor was checked and a deleted ledger row would go unnoticed")

	gitInit := exec.Command("git", "init", "-q", "--bare", filepath.Join(dir, "env"))
	require.NoError(t, gitInit.Run())
	code, out, errOut = invoke(t, data, "-c", cfg, "--json", "journal", "verify")
	require.Equal(t, 0, code, out+errOut)
	var list []verified
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list, 1)
	require.True(t, list[0].Intact)
	require.Equal(t, "absent", list[0].Checks["anchor"].Status)
	require.Contains(t, list[0].Checks["anchor"].Detail, "is not a git repository", "why it was not anchored, as recorded")
	require.Contains(t, list[0].Unsigned, "no people file")
}

// requireFailedList checks journal verify's summary names exactly the
// sessions failed, of total, in whatever order: sessions are listed by
// start, and two started in the same second by the random end of their
// IDs.
func requireFailedList(t *testing.T, textErr string, total int, failed ...string) {
	t.Helper()
	prefix := fmt.Sprintf("%d of %d journal(s) failed verification: ", len(failed), total)
	i := strings.Index(textErr, prefix)
	require.GreaterOrEqual(t, i, 0, "%q in:\n%s", prefix, textErr)
	line, _, _ := strings.Cut(textErr[i+len(prefix):], "\n")
	require.ElementsMatch(t, failed, strings.Split(line, ", "), textErr)
}
