package planvault_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/relcap/relcap/adapters/planvault"
	"github.com/relcap/relcap/adapters/signing"
	"github.com/relcap/relcap/adapters/store"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
	"github.com/relcap/relcap/workflow/workflowtest"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// team is a people file of real keys, a real (SQLite) store and a saved
// plan file on "machine A".
type team struct {
	keys   string // directory of the key files, by principal
	people string // the people file
	ledger *store.Ledger
	clock  *workflowtest.Clock
	plan   tfplan.Summary
	bytes  []byte
}

// newTeam makes an ed25519 key for each of who (alice holds two), an
// ECDSA key for erin (age cannot take it), and a plan file.
func newTeam(t *testing.T, who ...string) *team {
	t.Helper()
	dir := t.TempDir()
	tm := &team{keys: filepath.Join(dir, "keys"), people: filepath.Join(dir, "allowed_signers"), clock: workflowtest.NewClock(t0)}
	require.NoError(t, os.MkdirAll(tm.keys, 0o700))
	var b strings.Builder
	for _, p := range who {
		line, err := signing.GenerateKeyFile(filepath.Join(tm.keys, p), p+"@laptop")
		require.NoError(t, err)
		b.WriteString(p + " " + line + "\n")
	}
	if len(who) > 0 && who[0] == "alice" {
		line, err := signing.GenerateKeyFile(filepath.Join(tm.keys, "alice-desktop"), "alice@desktop")
		require.NoError(t, err)
		b.WriteString(`alice namespaces="git" ` + line + "\n")
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	pub, err := ssh.NewPublicKey(&ec.PublicKey)
	require.NoError(t, err)
	b.WriteString("erin " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + "\n")
	require.NoError(t, os.WriteFile(tm.people, []byte(b.String()), 0o644))

	tm.ledger, err = store.OpenSQLite(t.Context(), filepath.Join(dir, "ledger.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = tm.ledger.Close() })

	tm.bytes = make([]byte, 70_000) // more than one age chunk
	_, _ = rand.Read(tm.bytes)
	planDir := filepath.Join(dir, "a-plans")
	require.NoError(t, os.MkdirAll(planDir, 0o700))
	sum := sha256.Sum256(tm.bytes)
	fp := strings.Repeat("ab", 32)
	file := filepath.Join(planDir, fp+".tfplan")
	require.NoError(t, os.WriteFile(file, tm.bytes, 0o600))
	tm.plan = tfplan.Summary{Env: "staging", Fingerprint: fp, PlanFile: file, PlanHash: hex.EncodeToString(sum[:]), CreatedAt: t0}
	return tm
}

// vault is the vault of one machine, whose plan store is planDir and whose
// key setting is key.
func (tm *team) vault(t *testing.T, planDir, key string) *planvault.Vault {
	t.Helper()
	v, err := planvault.New(planvault.Options{Store: tm.ledger, People: tm.people, PlanDir: planDir, Key: key, Clock: tm.clock})
	require.NoError(t, err)
	return v
}

func (tm *team) share(t *testing.T, appliers ...string) tfplan.Share {
	t.Helper()
	share, err := tm.vault(t, filepath.Dir(tm.plan.PlanFile), "").Share(t.Context(), tfplan.ShareRequest{
		Plan: tm.plan, Appliers: appliers, SharedBy: "alice", ExpiresAt: tm.clock.Now().Add(time.Hour)})
	require.NoError(t, err)
	return share
}

// TestASharedPlanOpensWithEachRecipientsKeyAndNoOtherKey: a plan shared
// with alice (two keys, one restricted to git signatures) and bob opens
// on another machine with each of the three keys, written 0600 with the
// reviewed bytes; carol's key, not a recipient, is refused plainly.
func TestASharedPlanOpensWithEachRecipientsKeyAndNoOtherKey(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "alice", "bob", "carol")
	share := tm.share(t, "alice", "bob")
	require.Equal(t, []string{"alice", "bob"}, share.Principals())
	require.Len(t, share.Recipients, 3, "every key of each applier")
	require.Empty(t, share.Skipped)

	for _, key := range []string{"alice", "alice-desktop", "bob"} {
		dirB := filepath.Join(t.TempDir(), "plans")
		v := tm.vault(t, dirB, filepath.Join(tm.keys, key))
		_, present := v.LocalPlanFile(tm.plan.Fingerprint)
		require.False(t, present)
		got, err := v.Fetch(t.Context(), tm.plan, "bob")
		require.NoError(t, err, key)
		require.Equal(t, filepath.Join(dirB, tm.plan.Fingerprint+".tfplan"), got.File)
		b, err := os.ReadFile(got.File)
		require.NoError(t, err)
		require.Equal(t, tm.bytes, b)
		info, err := os.Stat(got.File)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		require.Equal(t, "alice", got.Share.SharedBy)
		_, present = v.LocalPlanFile(tm.plan.Fingerprint)
		require.True(t, present)
	}

	// A .pub setting means the private key beside it.
	v := tm.vault(t, t.TempDir(), filepath.Join(tm.keys, "bob.pub"))
	_, err := v.Fetch(t.Context(), tm.plan, "bob")
	require.NoError(t, err)

	v = tm.vault(t, t.TempDir(), filepath.Join(tm.keys, "carol"))
	_, err = v.Fetch(t.Context(), tm.plan, "carol")
	require.ErrorIs(t, err, fault.ErrBlocked)
	require.NotErrorIs(t, err, fault.ErrTampered)
	require.Contains(t, err.Error(), "carol cannot decrypt plan")
	require.Contains(t, err.Error(), "encrypted to the keys of alice, bob")
	require.NotContains(t, err.Error(), "age:", "not age's stack of errors")
}

// TestKeysAgeCannotTakeAreSkippedAndNoneIsAnError: erin's ECDSA key is
// skipped with a reason naming her; a plan for erin alone is not shared.
func TestKeysAgeCannotTakeAreSkippedAndNoneIsAnError(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "alice", "bob")
	share := tm.share(t) // everyone in the people file
	require.Equal(t, []string{"alice", "bob"}, share.Principals())
	require.Len(t, share.Skipped, 1)
	require.Equal(t, "erin", share.Skipped[0].Principal)
	require.Contains(t, share.Skipped[0].Reason, "ecdsa-sha2-nistp256")

	_, err := tm.vault(t, t.TempDir(), "").Share(t.Context(), tfplan.ShareRequest{Plan: tm.plan, Appliers: []string{"erin", "zoe"}, ExpiresAt: t0.Add(time.Hour)})
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), "erin: age cannot encrypt to ecdsa-sha2-nistp256 keys")
	require.Contains(t, err.Error(), "zoe: the people file gives zoe no key")
}

// TestATamperedSharedPlanIsRefused: a flipped byte of ciphertext fails
// age's integrity check; a ciphertext of other bytes (validly encrypted)
// fails the reviewed SHA-256. Neither is written to the plan store.
func TestATamperedSharedPlanIsRefused(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "alice", "bob")
	tm.share(t, "bob")
	sp, err := tm.ledger.SharedPlan(t.Context(), tm.plan.Fingerprint)
	require.NoError(t, err)
	flipped := sp
	flipped.Ciphertext = append([]byte(nil), sp.Ciphertext...)
	flipped.Ciphertext[len(flipped.Ciphertext)-10] ^= 1
	require.NoError(t, tm.ledger.PutSharedPlan(t.Context(), flipped))
	dirB := t.TempDir()
	v := tm.vault(t, dirB, filepath.Join(tm.keys, "bob"))
	_, err = v.Fetch(t.Context(), tm.plan, "bob")
	require.ErrorIs(t, err, fault.ErrTampered)
	require.Contains(t, err.Error(), "integrity check")
	_, present := v.LocalPlanFile(tm.plan.Fingerprint)
	require.False(t, present)

	// Other bytes, encrypted properly: the reviewed hash catches it.
	other := tm.plan
	require.NoError(t, os.WriteFile(other.PlanFile, []byte("not the reviewed plan"), 0o600))
	sum := sha256.Sum256([]byte("not the reviewed plan"))
	other.PlanHash = hex.EncodeToString(sum[:])
	_, err = tm.vault(t, t.TempDir(), "").Share(t.Context(), tfplan.ShareRequest{Plan: other, Appliers: []string{"bob"}, ExpiresAt: t0.Add(time.Hour)})
	require.NoError(t, err)
	_, err = v.Fetch(t.Context(), tm.plan, "bob")
	require.ErrorIs(t, err, fault.ErrTampered)
	require.Contains(t, err.Error(), "not the reviewed "+tm.plan.PlanHash)
	_, present = v.LocalPlanFile(tm.plan.Fingerprint)
	require.False(t, present)

	// Sharing a plan file that is no longer the reviewed one is refused.
	_, err = tm.vault(t, t.TempDir(), "").Share(t.Context(), tfplan.ShareRequest{Plan: tm.plan, Appliers: []string{"bob"}, ExpiresAt: t0.Add(time.Hour)})
	require.ErrorIs(t, err, fault.ErrStalePlan)
}

// TestAnExpiredSharedPlanIsRefusedAndDeleted: past its expiry a fetch is
// refused as stale and deletes it; Purge deletes the expired ones only.
func TestAnExpiredSharedPlanIsRefusedAndDeleted(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "alice", "bob")
	tm.share(t, "bob")
	tm.clock.Advance(time.Hour + time.Second)
	v := tm.vault(t, t.TempDir(), filepath.Join(tm.keys, "bob"))
	_, err := v.Fetch(t.Context(), tm.plan, "bob")
	require.ErrorIs(t, err, fault.ErrStalePlan)
	require.Contains(t, err.Error(), "expired at 2026-12-01T10:00:00Z")
	require.Contains(t, err.Error(), "relcap plan --env staging again")
	_, err = tm.ledger.SharedPlan(t.Context(), tm.plan.Fingerprint)
	require.ErrorIs(t, err, fault.ErrNotFound, "deleted on read")

	tm.share(t, "bob")
	tm.clock.Advance(time.Hour / 2)
	gone, err := v.Purge(t.Context())
	require.NoError(t, err)
	require.Empty(t, gone, "not yet expired")
	tm.clock.Advance(time.Hour)
	gone, err = v.Purge(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{tm.plan.Fingerprint}, gone)
	_, err = v.Fetch(t.Context(), tm.plan, "bob")
	require.ErrorIs(t, err, fault.ErrNotFound)
}

// TestAPassphraseProtectedKeyDecryptsWithItsPassphrase: the passphrase is
// asked only of a recipient's protected key; without a way to ask, or
// with a wrong one, the error says so.
func TestAPassphraseProtectedKeyDecryptsWithItsPassphrase(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "alice")
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "dana@laptop", []byte("correct horse"))
	require.NoError(t, err)
	keyFile := filepath.Join(tm.keys, "dana")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600))
	sshPub, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	f, err := os.OpenFile(tm.people, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("dana " + string(ssh.MarshalAuthorizedKey(sshPub)))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	tm.share(t, "dana")

	open := func(pass func(string) ([]byte, error)) error {
		v, err := planvault.New(planvault.Options{Store: tm.ledger, People: tm.people, PlanDir: t.TempDir(), Key: keyFile, Clock: tm.clock, Passphrase: pass})
		require.NoError(t, err)
		_, err = v.Fetch(t.Context(), tm.plan, "dana")
		return err
	}
	err = open(nil)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), "protected by a passphrase")
	err = open(func(string) ([]byte, error) { return []byte("wrong"), nil })
	require.ErrorIs(t, err, fault.ErrUsage)
	require.Contains(t, err.Error(), "wrong passphrase")
	asked := errors.New("set RELCAP_SSH_PASSPHRASE")
	require.ErrorIs(t, open(func(string) ([]byte, error) { return nil, asked }), asked)
	var askedFor string
	require.NoError(t, open(func(k string) ([]byte, error) { askedFor = k; return []byte("correct horse"), nil }))
	require.Equal(t, keyFile, askedFor)
}

// TestWithoutAKeyFileTheErrorSaysAgeNeedsOne: ssh-agent cannot decrypt,
// so an applier with no key file setting is told to set one.
func TestWithoutAKeyFileTheErrorSaysAgeNeedsOne(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "alice", "bob")
	tm.share(t, "bob")
	for _, key := range []string{"", "key::ssh-ed25519 AAAA"} {
		_, err := tm.vault(t, t.TempDir(), key).Fetch(t.Context(), tm.plan, "bob")
		require.ErrorIs(t, err, fault.ErrUsage)
		require.Contains(t, err.Error(), "not through ssh-agent")
		require.Contains(t, err.Error(), "RELCAP_SIGNING_KEY")
	}
}
