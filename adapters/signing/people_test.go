package signing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
)

// zone is the "local time" of parser tests, an hour east of UTC, so that a
// time read in the wrong zone is noticed whatever the machine's zone.
var zone = time.FixedZone("UTC+1", 3600)

func TestParseAllowedSignersReadsTheFormat(t *testing.T) {
	t.Parallel()
	alice, aliceKey := testKey(t, 1)
	bob, bobKey := testKey(t, 2)
	carol, carolKey := testKey(t, 3)
	file := strings.Join([]string{
		"# the release team",
		"",
		"alice " + alice + " alice@example.com",
		"  \"bob,Bob Smith\"\t" + bob + "\r",
		`carol namespaces="relcap-*,!relcap-journal",valid-after="20250101",VALID-BEFORE="20260101120000Z" ` + carol,
		"ops-* " + carol + " # wildcards are not people",
		"!alice,* " + alice,
	}, "\n")
	p, err := parseAllowedSigners("allowed_signers", []byte(file), zone)
	require.NoError(t, err)
	require.Len(t, p.entries, 5)

	require.Equal(t, []string{"Bob Smith", "alice", "bob", "carol"}, p.Principals())
	require.Equal(t, []string{"alice"}, p.PrincipalsOf(aliceKey))
	require.Equal(t, []string{"carol"}, p.PrincipalsOf(carolKey))
	_, stranger := testKey(t, 9)
	require.Empty(t, p.PrincipalsOf(stranger))

	c := p.entries[2]
	require.Equal(t, 5, c.line)
	require.Equal(t, "relcap-*,!relcap-journal", c.namespaces)
	require.Equal(t, time.Date(2025, 1, 1, 0, 0, 0, 0, zone), c.after, "a time without Z is local time")
	require.Equal(t, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), c.before)

	at := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	keys := func(principal, namespace string, at time.Time) []string {
		var fps []string
		for _, k := range p.KeysFor(principal, namespace, at) {
			fps = append(fps, ssh.FingerprintSHA256(k))
		}
		return fps
	}
	fp := ssh.FingerprintSHA256
	require.Equal(t, []string{fp(aliceKey)}, keys("alice", approval.NamespaceApproval, at))
	require.Equal(t, []string{fp(bobKey), fp(aliceKey)}, keys("Bob Smith", approval.NamespaceApproval, at), "quoted principals may hold spaces")
	require.Equal(t, []string{fp(bobKey), fp(aliceKey)}, keys("bob", approval.NamespaceApproval, at), "!alice,* gives alice's key to everyone but alice")
	require.Equal(t, []string{fp(carolKey), fp(aliceKey)}, keys("carol", approval.NamespaceApproval, at))
	require.Equal(t, []string{fp(aliceKey)}, keys("carol", approval.NamespaceJournal, at), "carol's line excludes relcap-journal")
	require.Equal(t, []string{fp(carolKey), fp(aliceKey)}, keys("carol", approval.NamespaceApproval, time.Date(2024, 12, 31, 23, 0, 0, 0, time.UTC)), "2025-01-01 local is 2024-12-31 23:00 UTC, and valid-after includes its own second")
	require.Equal(t, []string{fp(aliceKey)}, keys("carol", approval.NamespaceApproval, time.Date(2024, 12, 31, 22, 59, 59, 0, time.UTC)))
	require.Equal(t, []string{fp(carolKey), fp(aliceKey)}, keys("carol", approval.NamespaceApproval, time.Date(2026, 1, 1, 12, 0, 0, 999, time.UTC)), "valid-before includes its own second, as OpenSSH's")
	require.Equal(t, []string{fp(aliceKey)}, keys("carol", approval.NamespaceApproval, time.Date(2026, 1, 1, 12, 0, 1, 0, time.UTC)))
	require.Equal(t, []string{fp(carolKey), fp(aliceKey)}, keys("ops-eu", approval.NamespaceApproval, at))
	require.Equal(t, []string{fp(aliceKey)}, keys("alice", "any-namespace", at), "alice gets only her own key")

	var nobody *People
	require.Nil(t, nobody.KeysFor("alice", approval.NamespaceApproval, at))
	require.Nil(t, nobody.Principals())
}

func TestParseAllowedSignersExplainsMistakes(t *testing.T) {
	t.Parallel()
	key, _ := testKey(t, 1)
	keyType, blob, _ := strings.Cut(key, " ")
	for _, tc := range []struct {
		name, line, want string
	}{
		{"no key", "alice", "no key after the principals"},
		{"quoted principals but no key", `"alice bob"  `, "no key after the principals"},
		{"unclosed quote", `"alice ` + key, "no closing quote"},
		{"no space after quote", `"alice"` + key, "put a space after the closing quote"},
		{"stray quote", `al"ice ` + key, "stray quote in the principals"},
		{"empty principal", "alice,," + key[:0] + " " + key, "empty principal"},
		{"leading comma", ",alice " + key, "empty principal"},
		{"bare negation", "alice,! " + key, "empty principal"},
		{"corrupt base64", "alice " + keyType + " " + blob[:20] + "!" + blob[21:], "not valid base64"},
		{"truncated key", "alice " + keyType + " " + blob[:len(blob)-8], "no valid public key"},
		{"type mismatch", "alice ssh-rsa " + blob, "no valid public key"},
		{"two principal fields", "alice bob " + key, `unknown option "bob"`},
		{"unknown option", `alice no-touch-required,restrict ` + key, `unknown option "no-touch-required"`},
		{"flag given a value", `alice cert-authority="yes" ` + key, `unknown option "cert-authority"`},
		{"certificate authority", "alice cert-authority " + key, "cert-authority lines (a certificate authority's key) are not supported by relcap yet"},
		{"certificate authority in any case", "alice Cert-Authority " + key, "not supported by relcap yet"},
		{"unquoted namespaces", "alice namespaces=relcap-approval " + key, "double quotes, as ssh-keygen requires"},
		{"empty namespaces", `alice namespaces="" ` + key, `namespaces="" allows no namespace`},
		{"namespaces without value", `alice namespaces ` + key, "needs a value"},
		{"namespaces twice", `alice namespaces="a",namespaces="b" ` + key, "namespaces is given twice"},
		{"stray quote in value", `alice namespaces="a"b"c" ` + key, "stray quote inside the value"},
		{"escaped quote is odd", `alice namespaces="a\"b ` + key, "quotes are unbalanced"},
		{"unquoted time", `alice valid-after=20250101 ` + key, "double quotes"},
		{"short time", `alice valid-after="2025" ` + key, "not a time: write YYYYMMDD"},
		{"ten-digit time", `alice valid-before="2025010112" ` + key, "not a time"},
		{"impossible date", `alice valid-before="20250230" ` + key, "not a time"},
		{"letters in time", `alice valid-before="2025O101" ` + key, "not a time"},
		{"just Z", `alice valid-before="Z" ` + key, "not a time"},
		{"never valid", `alice valid-after="20260101Z",valid-before="20250101Z" ` + key, "never valid"},
		{"equal bounds", `alice valid-after="20250101Z",valid-before="20250101Z" ` + key, "never valid"},
		{"unbalanced option quotes", `alice namespaces="relcap-approval ` + key, "quotes are unbalanced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := "# people\n\nbob " + key + "\n" + tc.line + "\n"
			_, err := parseAllowedSigners("team/allowed_signers", []byte(file), zone)
			require.Error(t, err)
			require.ErrorIs(t, err, fault.ErrUsage)
			require.True(t, strings.HasPrefix(err.Error(), "team/allowed_signers:4: "), "error names file and line: %v", err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), blob[:16], "errors never quote key material")
			require.NotContains(t, err.Error(), "invalid input", "the message reads plainly, without the sentinel's text")
		})
	}
}

func TestParseTimeFormats(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Time{
		"20250304":          time.Date(2025, 3, 4, 0, 0, 0, 0, zone),
		"202503041506":      time.Date(2025, 3, 4, 15, 6, 0, 0, zone),
		"20250304150607":    time.Date(2025, 3, 4, 15, 6, 7, 0, zone),
		"20250304Z":         time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC),
		"20250304150607z":   time.Date(2025, 3, 4, 15, 6, 7, 0, time.UTC),
		"202503041506UTC":   time.Date(2025, 3, 4, 15, 6, 0, 0, time.UTC),
		"20250304150607utc": time.Date(2025, 3, 4, 15, 6, 7, 0, time.UTC),
	} {
		got, err := parseTime(in, zone)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%s: got %s, want %s", in, got, want)
	}
	for _, in := range []string{"", "Z", "UTC", "2025", "2025030415", "20251301", "20250304256000", "+2025030", "2025-03-04", "20250304ZZ"} {
		_, err := parseTime(in, zone)
		require.Error(t, err, in)
	}
}

func TestMatchListFollowsOpenSSH(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s, list string
		want    int
	}{
		{"alice", "alice", 1},
		{"alice", "bob,alice", 1},
		{"alice", "bob", 0},
		{"alice", "a*", 1},
		{"alice", "*", 1},
		{"alice", "a?ice", 1},
		{"alice", "a?ce", 0},
		{"alice", "*e", 1},
		{"alice", "*x*", 0},
		{"", "*", 1},
		{"", "?", 0},
		{"alice", "!alice,*", -1},
		{"bob", "!alice,*", 1},
		{"alice", "*,!alice", -1},
		{"alice", "!bob", 0},
		{"relcap-approval", "relcap-*,!relcap-journal", 1},
		{"relcap-journal", "relcap-*,!relcap-journal", -1},
		{"a*b", "a*b", 1},
		{"aXbXb", "a*b", 1},
		{"abab", "*ab*ab", 1},
		{"mississippi", "m*iss*ppi", 1},
		{"mississippi", "m*iss*pi*x", 0},
		{"alice", strings.Repeat("*", maxSubpattern+1), 0},
	} {
		require.Equal(t, tc.want, matchList(tc.s, tc.list), "%q against %q", tc.s, tc.list)
	}
}

// TestMatchPatternIsNotExponential protects against a people file that
// makes matching take exponential time, as a naive recursive matcher does
// on many stars against a long near-miss.
func TestMatchPatternIsNotExponential(t *testing.T) {
	t.Parallel()
	start := time.Now()
	require.False(t, matchPattern(strings.Repeat("a", 1000)+"b", strings.Repeat("*a", 100)+"c"))
	require.Less(t, time.Since(start), time.Second)
}

func TestLoadPeopleNamesTheFile(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "allowed_signers")
	_, err := LoadPeople(missing)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "people file "+missing+" does not exist")

	_, err = LoadPeople("")
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "no people file is configured")

	dir := t.TempDir()
	_, err = LoadPeople(dir)
	require.ErrorIs(t, err, fault.ErrUsage)
	require.ErrorContains(t, err, "cannot read people file "+dir)

	key, _ := testKey(t, 1)
	path := filepath.Join(t.TempDir(), "allowed_signers")
	require.NoError(t, os.WriteFile(path, []byte("alice "+key+"\n"), 0o644))
	p, err := LoadPeople(path)
	require.NoError(t, err)
	require.Equal(t, []string{"alice"}, p.Principals())
	require.Equal(t, path, p.Name())
}
