package signing

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
)

var keyTypes = []string{"ed25519", "ecdsa", "rsa"}

// statement is what the tests sign: bytes like an approval's.
var statement = []byte(`{"kind":"plan","subject":"sha256:0123","env":"production","approver":"bob"}` + "\n")

// TestSignerOutputVerifiesWithSSHKeygen: what relcap signs, OpenSSH
// accepts, for every key type people use.
func TestSignerOutputVerifiesWithSSHKeygen(t *testing.T) {
	t.Parallel()
	for _, typ := range keyTypes {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			alice := newKey(t, dir, "alice", "ed25519", "")
			bob := newKey(t, dir, "bob", typ, "")
			people := writeFile(t, dir, "allowed_signers", "alice "+alice.line, "bob "+bob.line)

			sig, err := NewSigner(SignerOptions{Key: bob.path, People: people}).Sign(t.Context(), "bob", approval.NamespaceApproval, statement)
			require.NoError(t, err)
			require.Equal(t, bob.fp, sig.Key)
			require.True(t, strings.HasPrefix(sig.Armored, "-----BEGIN SSH SIGNATURE-----\n"), sig.Armored)

			good, out := sshVerify(t, people, "bob", approval.NamespaceApproval, statement, sig.Armored, time.Time{})
			require.True(t, good, "ssh-keygen -Y verify: %s", out)
			require.Contains(t, out, bob.fp)
			require.NoError(t, NewVerifier(people).Verify(t.Context(), "bob", approval.NamespaceApproval, statement, sig, time.Now()))

			good, out = sshVerify(t, people, "alice", approval.NamespaceApproval, statement, sig.Armored, time.Time{})
			require.False(t, good, "ssh-keygen accepted bob's signature as alice's: %s", out)
		})
	}
}

// TestVerifierAcceptsSSHKeygenSignatures: what OpenSSH signs, relcap
// accepts, so a person may sign with ssh-keygen -Y sign by hand.
func TestVerifierAcceptsSSHKeygenSignatures(t *testing.T) {
	t.Parallel()
	for _, typ := range keyTypes {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bob := newKey(t, dir, "bob", typ, "")
			people := writeFile(t, dir, "allowed_signers", "bob "+bob.line)
			armored := sshSign(t, bob, approval.NamespaceApproval, statement)
			v := NewVerifier(people)
			require.NoError(t, v.Verify(t.Context(), "bob", approval.NamespaceApproval, statement, approval.Signature{Armored: armored}, time.Now()))
			require.NoError(t, v.Verify(t.Context(), "bob", approval.NamespaceApproval, statement, approval.Signature{Armored: armored, Key: bob.fp}, time.Now()))
		})
	}
}

// TestSignerUsesTheAgent signs through a real ssh-agent: with no key set
// (the agent's key for the principal), with the .pub file set, and with a
// key:: literal, for each key type (RSA through the agent must still sign
// rsa-sha2-512, as the SSHSIG protocol requires).
func TestSignerUsesTheAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	socket := startAgent(t)
	keys := map[string]keyFile{}
	var lines []string
	for i, typ := range keyTypes {
		name := []string{"alice", "bob", "carol"}[i]
		keys[name] = newKey(t, dir, name, typ, "")
		sshAdd(t, socket, keys[name])
		lines = append(lines, name+" "+keys[name].line)
	}
	people := writeFile(t, dir, "allowed_signers", lines...)

	for name, k := range keys {
		for setting, key := range map[string]string{"empty": "", "pub file": k.path + ".pub", "key literal": "key::" + k.line + " comment"} {
			t.Run(name+"/"+setting, func(t *testing.T) {
				t.Parallel()
				// Key never names the private key file: only the agent can sign.
				sig, err := NewSigner(SignerOptions{Key: key, AgentSocket: socket, People: people}).Sign(t.Context(), name, approval.NamespaceApproval, statement)
				require.NoError(t, err)
				require.Equal(t, k.fp, sig.Key)
				good, out := sshVerify(t, people, name, approval.NamespaceApproval, statement, sig.Armored, time.Time{})
				require.True(t, good, "ssh-keygen -Y verify: %s", out)
				require.NoError(t, NewVerifier(people).Verify(t.Context(), name, approval.NamespaceApproval, statement, sig, time.Now()))
			})
		}
	}
}

// TestSignerUsesTheAgentForAPassphraseProtectedKeyFile: when the signing
// key is a passphrase-protected file the agent holds, relcap signs through
// the agent (as ssh-keygen -Y sign does) instead of asking.
func TestSignerUsesTheAgentForAPassphraseProtectedKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bob := newKey(t, dir, "bob", "ed25519", "correct horse")
	people := writeFile(t, dir, "allowed_signers", "bob "+bob.line)
	socket := startAgent(t)
	askpass := writeFile(t, dir, "askpass", "#!/bin/sh", "echo 'correct horse'")
	require.NoError(t, os.Chmod(askpass, 0o700))
	out, code := run(t, nil, []string{"SSH_AUTH_SOCK=" + socket, "SSH_ASKPASS=" + askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=none"}, "ssh-add", bob.path)
	require.Zero(t, code, "ssh-add: %s", out)

	sig, err := NewSigner(SignerOptions{Key: bob.path, AgentSocket: socket, People: people}).Sign(t.Context(), "bob", approval.NamespaceApproval, statement)
	require.NoError(t, err)
	good, out := sshVerify(t, people, "bob", approval.NamespaceApproval, statement, sig.Armored, time.Time{})
	require.True(t, good, "ssh-keygen -Y verify: %s", out)
}

// TestSignerRefuses covers each way a person cannot sign, asserting that
// the error says why and what to do, and leaks no key material.
func TestSignerRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	alice := newKey(t, dir, "alice", "ed25519", "")
	bob := newKey(t, dir, "bob", "ed25519", "")
	locked := newKey(t, dir, "locked", "ed25519", "correct horse")
	stranger := newKey(t, dir, "stranger", "ed25519", "")
	old := newKey(t, dir, "old", "ed25519", "")
	people := writeFile(t, dir, "allowed_signers",
		"alice "+alice.line,
		"bob "+bob.line,
		"locked "+locked.line,
		`gitonly namespaces="git" `+stranger.line,
		`retired valid-before="20200101Z" `+old.line,
	)
	socket := startAgent(t)
	sshAdd(t, socket, alice)
	emptyAgent := startAgent(t)

	for _, tc := range []struct {
		name      string
		opts      SignerOptions
		principal string
		want      []string
	}{
		{"alice's key as bob", SignerOptions{Key: alice.path}, "bob",
			[]string{"your signing key " + alice.fp + " is alice's in " + people + ", not bob's: you cannot sign as bob"}},
		{"agent key as bob", SignerOptions{Key: alice.path + ".pub", AgentSocket: socket}, "bob",
			[]string{"is alice's in", "you cannot sign as bob"}},
		{"key not in the file", SignerOptions{Key: stranger.path}, "bob",
			[]string{"is gitonly's in", "not bob's"}},
		{"namespace excluded", SignerOptions{Key: stranger.path}, "gitonly",
			[]string{people + ":4 allows gitonly's key " + stranger.fp + ` only for namespaces "git", not relcap-approval`}},
		{"expired line", SignerOptions{Key: old.path}, "retired",
			[]string{"retired's key " + old.fp + " in " + people + " is valid only before 2020-01-01T00:00:00Z (line 5)"}},
		{"passphrase without agent", SignerOptions{Key: locked.path}, "locked",
			[]string{"signing key " + locked.path + " is protected by a passphrase, and relcap never asks for one: add it to ssh-agent (ssh-add " + locked.path + ") and set the signing key to " + locked.path + ".pub"}},
		{"passphrase, agent without it", SignerOptions{Key: locked.path, AgentSocket: socket}, "locked",
			[]string{"protected by a passphrase", "ssh-add " + locked.path}},
		{"agent lacks the named key", SignerOptions{Key: bob.path + ".pub", AgentSocket: socket}, "bob",
			[]string{"ssh-agent at " + socket + " does not hold the public key in " + bob.path + ".pub (key " + bob.fp + "): ssh-add its private key"}},
		{"agent lacks the literal key", SignerOptions{Key: "key::" + bob.line, AgentSocket: socket}, "bob",
			[]string{"does not hold the signing key set as key::…", bob.fp}},
		{"public key without agent", SignerOptions{Key: bob.path + ".pub"}, "bob",
			[]string{"needs its private half in ssh-agent, and there is no agent"}},
		{"no key, no agent", SignerOptions{}, "bob",
			[]string{"no signing key is set and there is no ssh-agent"}},
		{"no key, agent has only others'", SignerOptions{AgentSocket: socket}, "bob",
			[]string{"none of the keys in ssh-agent at " + socket + " is one " + people + " gives bob for relcap-approval now (the agent holds " + alice.fp + " (alice's))"}},
		{"no key, empty agent", SignerOptions{AgentSocket: emptyAgent}, "bob",
			[]string{"ssh-agent at " + emptyAgent + " holds no keys"}},
		{"agent not running", SignerOptions{AgentSocket: filepath.Join(dir, "no-agent.sock")}, "bob",
			[]string{"cannot reach ssh-agent at " + filepath.Join(dir, "no-agent.sock")}},
		{"key file missing", SignerOptions{Key: filepath.Join(dir, "nope")}, "bob",
			[]string{"cannot read your signing key", filepath.Join(dir, "nope")}},
		{"people file as key file", SignerOptions{Key: people}, "bob",
			[]string{"is neither an SSH private key nor a public key"}},
		{"key file not a key", SignerOptions{Key: askpassLike(t, dir)}, "bob",
			[]string{"is neither an SSH private key nor a public key"}},
		{"bad literal", SignerOptions{Key: "key::ssh-ed25519 nonsense"}, "bob",
			[]string{"is not a public key: write key::ssh-ed25519"}},
		{"no people file", SignerOptions{Key: bob.path, People: filepath.Join(dir, "missing")}, "bob",
			[]string{"people file " + filepath.Join(dir, "missing") + " does not exist"}},
		{"no principal", SignerOptions{Key: bob.path}, "",
			[]string{"no principal to sign as"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.opts.People == "" {
				tc.opts.People = people
			}
			_, err := NewSigner(tc.opts).Sign(t.Context(), tc.principal, approval.NamespaceApproval, statement)
			require.Error(t, err)
			require.ErrorIs(t, err, fault.ErrUsage)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			noKeyMaterial(t, err, dir)
		})
	}
}

// askpassLike writes a file that is no key at all.
func askpassLike(t *testing.T, dir string) string {
	return writeFile(t, dir, "notes.txt", "#!/bin/sh", "echo hello")
}

// noKeyMaterial fails when err quotes any key file of dir: private key
// bytes or public key base64 (keys are named by fingerprint only).
func noKeyMaterial(t *testing.T, err error, dir string) {
	t.Helper()
	msg := err.Error()
	require.NotContains(t, msg, "PRIVATE KEY")
	require.NotContains(t, msg, "correct horse")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			if len(field) >= 20 && !strings.Contains(field, dir) {
				require.NotContains(t, msg, field[:20], "the error quotes %s", f)
			}
		}
	}
}

// TestVerifierRefuses covers each way a signature does not count.
func TestVerifierRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	alice := newKey(t, dir, "alice", "ed25519", "")
	bob := newKey(t, dir, "bob", "ecdsa", "")
	people := writeFile(t, dir, "allowed_signers", "alice "+alice.line, "bob "+bob.line)
	now := time.Now()
	bobSigns := func(namespace string) approval.Signature {
		return approval.Signature{Armored: sshSign(t, bob, namespace, statement), Key: bob.fp}
	}
	aliceSig := approval.Signature{Armored: sshSign(t, alice, approval.NamespaceApproval, statement), Key: alice.fp}
	good := bobSigns(approval.NamespaceApproval)

	for _, tc := range []struct {
		name      string
		file      []string // the people file at verification, when not the original
		principal string
		message   []byte
		sig       approval.Signature
		at        time.Time
		want      string
	}{
		{name: "alice's key as bob", principal: "bob", sig: aliceSig,
			want: "signed with key " + alice.fp + ", which " + people + " gives alice, not bob"},
		{name: "wrong namespace", principal: "bob", sig: bobSigns(approval.NamespaceJournal),
			want: `the signature is for namespace "relcap-journal", not relcap-approval`},
		{name: "tampered statement", principal: "bob", sig: good, message: []byte(strings.Replace(string(statement), "production", "staging", 1)),
			want: "the signature does not match the statement (changed after signing): key " + bob.fp + " did not sign these bytes"},
		{name: "key removed from the file", file: []string{"alice " + alice.line}, principal: "bob", sig: good,
			want: "key " + bob.fp + " is not in " + people + " (removed, or never added)"},
		{name: "key given to someone else now", file: []string{"alice " + alice.line, "carol " + bob.line}, principal: "bob", sig: good,
			want: "which " + people + " gives carol, not bob"},
		{name: "valid-before in the past", file: []string{`bob valid-before="20200101Z" ` + bob.line}, principal: "bob", sig: good,
			want: "bob's key " + bob.fp + " in " + people + " is valid only before 2020-01-01T00:00:00Z (line 1); the statement is dated " + now.Format(time.RFC3339)},
		{name: "valid-after in the future", file: []string{`bob valid-after="29990101Z" ` + bob.line}, principal: "bob", sig: good,
			want: "is valid only from 2999-01-01T00:00:00Z (line 1)"},
		{name: "namespaces excludes relcap-approval", file: []string{`bob namespaces="git,relcap-journal" ` + bob.line}, principal: "bob", sig: good,
			want: people + `:1 allows bob's key ` + bob.fp + ` only for namespaces "git,relcap-journal", not relcap-approval`},
		{name: "negated namespace", file: []string{`bob namespaces="relcap-*,!relcap-approval" ` + bob.line}, principal: "bob", sig: good,
			want: "only for namespaces"},
		{name: "recorded key differs", principal: "bob", sig: approval.Signature{Armored: good.Armored, Key: alice.fp},
			want: "the signature was made with key " + bob.fp + ", but the record says \"" + alice.fp + "\": the record was altered"},
		{name: "unsigned", principal: "bob", sig: approval.Signature{},
			want: "bob's statement is not signed"},
		{name: "not a signature", principal: "bob", sig: approval.Signature{Armored: "-----BEGIN PGP SIGNATURE-----\nAAAA\n-----END PGP SIGNATURE-----\n"},
			want: "the signature is not an armored SSH signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := people
			if tc.file != nil {
				// The file as it reads when the signature is used.
				path = filepath.Join(t.TempDir(), "allowed_signers")
				require.NoError(t, os.WriteFile(path, []byte(strings.Join(tc.file, "\n")+"\n"), 0o644))
				tc.want = strings.ReplaceAll(tc.want, people, path)
			}
			msg := statement
			if tc.message != nil {
				msg = tc.message
			}
			at := now
			if !tc.at.IsZero() {
				at = tc.at
			}
			err := NewVerifier(path).Verify(t.Context(), tc.principal, approval.NamespaceApproval, msg, tc.sig, at)
			require.Error(t, err)
			require.ErrorIs(t, err, ErrUnverified)
			require.ErrorIs(t, err, fault.ErrBlocked)
			require.NotErrorIs(t, err, fault.ErrUsage)
			require.Contains(t, err.Error(), tc.want)
			noKeyMaterial(t, err, dir)

			// OpenSSH, given the same file, agrees the signature does not count.
			if !tc.sig.IsZero() && strings.Contains(tc.sig.Armored, "SSH SIGNATURE") && tc.name != "recorded key differs" {
				ok, out := sshVerify(t, path, tc.principal, approval.NamespaceApproval, msg, tc.sig.Armored, at)
				require.False(t, ok, "ssh-keygen accepted what relcap refused: %s", out)
			}
		})
	}
}

// TestVerifierRereadsThePeopleFile protects the policy that signatures are
// verified against the people file at the time of use: a key removed after
// signing must stop verifying, with the same Verifier.
func TestVerifierRereadsThePeopleFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	alice := newKey(t, dir, "alice", "ed25519", "")
	bob := newKey(t, dir, "bob", "ed25519", "")
	people := writeFile(t, dir, "allowed_signers", "alice "+alice.line, "bob "+bob.line)
	sig, err := NewSigner(SignerOptions{Key: bob.path, People: people}).Sign(t.Context(), "bob", approval.NamespaceApproval, statement)
	require.NoError(t, err)
	v := NewVerifier(people)
	require.NoError(t, v.Verify(t.Context(), "bob", approval.NamespaceApproval, statement, sig, time.Now()))

	writeFile(t, dir, "allowed_signers", "alice "+alice.line)
	err = v.Verify(t.Context(), "bob", approval.NamespaceApproval, statement, sig, time.Now())
	require.ErrorIs(t, err, ErrUnverified)
	require.ErrorContains(t, err, "key "+bob.fp+" is not in "+people+" (removed, or never added)")

	require.NoError(t, os.Remove(people))
	err = v.Verify(t.Context(), "bob", approval.NamespaceApproval, statement, sig, time.Now())
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "people file "+people+" does not exist")

	writeFile(t, dir, "allowed_signers", "bob nonsense")
	err = v.Verify(t.Context(), "bob", approval.NamespaceApproval, statement, sig, time.Now())
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, people+":1: ")
}

// TestAllowedSignersAgreesWithSSHKeygen checks relcap's reading of the
// people file against ssh-keygen -Y verify's, line by line: principal
// patterns, namespaces and validity, at chosen verification times.
func TestAllowedSignersAgreesWithSSHKeygen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bob := newKey(t, dir, "bob", "ed25519", "")
	sig := approval.Signature{Armored: sshSign(t, bob, approval.NamespaceApproval, statement)}
	at := func(s string) time.Time {
		t, err := time.Parse("20060102150405", s)
		if err != nil {
			panic(err)
		}
		return t
	}
	mid := at("20250601000000")
	for i, tc := range []struct {
		line      string // with %s for bob's key
		principal string
		at        time.Time
		want      bool
	}{
		{"bob %s", "bob", mid, true},
		{"bob %s", "alice", mid, false},
		{`"alice,bob" %s`, "bob", mid, true},
		{"b?b %s", "bob", mid, true},
		{"b* %s", "bob", mid, true},
		{"*,!bob %s", "bob", mid, false},
		{"*,!bob %s", "alice", mid, true},
		{"!bob %s", "alice", mid, false},
		{`bob namespaces="relcap-*" %s`, "bob", mid, true},
		{`bob namespaces="git,relcap-approval" %s`, "bob", mid, true},
		{`bob namespaces="git" %s`, "bob", mid, false},
		{`bob namespaces="relcap-*,!relcap-approval" %s`, "bob", mid, false},
		{`bob NAMESPACES="relcap-approval" %s`, "bob", mid, true},
		{`bob valid-after="20250101Z",valid-before="20260101Z" %s`, "bob", mid, true},
		{`bob valid-after="20250101Z",valid-before="20260101Z" %s`, "bob", at("20241231235959"), false},
		{`bob valid-after="20250101Z",valid-before="20260101Z" %s`, "bob", at("20250101000000"), true},
		{`bob valid-after="20250101Z",valid-before="20260101Z" %s`, "bob", at("20260101000000"), true},
		{`bob valid-after="20250101Z",valid-before="20260101Z" %s`, "bob", at("20260101000001"), false},
		{`bob valid-before="202506011200UTC" %s`, "bob", at("20250601115959"), true},
		{`bob valid-before="202506011200z" %s`, "bob", at("20250601120001"), false},
		// Local time: both read the zone from the same environment.
		{`bob valid-before="20250601120000" %s`, "bob", time.Date(2025, 6, 1, 12, 0, 0, 0, time.Local), true},
		{`bob valid-before="20250601120000" %s`, "bob", time.Date(2025, 6, 1, 12, 0, 1, 0, time.Local), false},
		{`bob valid-after="20250601" %s`, "bob", time.Date(2025, 5, 31, 23, 59, 59, 0, time.Local), false},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			people := writeFile(t, t.TempDir(), "allowed_signers", "alice "+newTestLine(t), fmt.Sprintf(tc.line, bob.line))
			ok, out := sshVerify(t, people, tc.principal, approval.NamespaceApproval, statement, sig.Armored, tc.at)
			require.Equal(t, tc.want, ok, "ssh-keygen, %q as %s at %s: %s", tc.line, tc.principal, tc.at, out)
			err := NewVerifier(people).Verify(t.Context(), tc.principal, approval.NamespaceApproval, statement, sig, tc.at)
			if tc.want {
				require.NoError(t, err, "%q as %s at %s", tc.line, tc.principal, tc.at)
			} else {
				require.ErrorIs(t, err, ErrUnverified, "%q as %s at %s", tc.line, tc.principal, tc.at)
			}
		})
	}
}

// newTestLine is another person's key line, so files have more than one.
func newTestLine(t *testing.T) string {
	line, _ := testKey(t, 7)
	return line
}
