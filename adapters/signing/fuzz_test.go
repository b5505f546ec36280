package signing

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/relcap/relcap/workflow/approval"
	"github.com/relcap/relcap/workflow/fault"
)

// FuzzParseAllowedSigners: the people file is edited by hand and read on
// every verification. On any input the parser must not panic; a failure
// must wrap fault.ErrUsage, name the file and line, and quote no public
// key; a success must answer every question without panicking.
func FuzzParseAllowedSigners(f *testing.F) {
	alice, _ := testKey(f, 1)
	bob, _ := testKey(f, 2)
	for _, seed := range []string{
		"",
		"# comment only\n\n",
		"alice " + alice + "\n",
		"alice " + alice + " alice@example.com\r\nbob " + bob + "\n",
		`"alice,Bob Smith" ` + alice + "\n",
		"!alice,* " + bob + "\n",
		"a?ice,b* " + alice + "\n",
		`alice namespaces="relcap-*,!relcap-journal" ` + alice + "\n",
		`alice valid-after="20250101",valid-before="20260101120000Z" ` + alice + "\n",
		`alice valid-before="202601011200UTC",NAMESPACES="relcap-approval" ` + alice + "\n",
		`alice cert-authority ` + alice + "\n",
		`alice namespaces="a\"b" ` + alice + "\n",
		`alice namespaces="unterminated ` + alice + "\n",
		"alice bob " + alice + "\n",
		"alice ssh-ed25519 AAAA\n",
		"alice\n",
		`"alice` + "\n",
		",, " + alice + "\n",
		"alice " + alice[:len(alice)-4] + "\n",
		"alice\x00 " + alice + "\n",
		"# comment \x00\nbob " + bob + "\n",
		"alice " + alice + "\n\xff\xfe\n",
		"\x1b[31malice " + alice + "\n",
	} {
		f.Add([]byte(seed))
	}
	at := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseAllowedSigners("allowed_signers", data)
		problems := CheckAllowedSigners("allowed_signers", data)
		if (err == nil) != (len(problems) == 0) {
			t.Fatalf("validate and verification disagree: parse says %v, check says %v", err, problems)
		}
		if err != nil && problems[0].Error() != err.Error() {
			t.Fatalf("validate's first problem %v is not verification's %v", problems[0], err)
		}
		for _, pr := range problems {
			if !errors.Is(pr, fault.ErrUsage) || !strings.HasPrefix(pr.Error(), "allowed_signers:") {
				t.Fatalf("problem without file and line, or not a usage error: %v", pr)
			}
		}
		if err != nil {
			if p != nil {
				t.Fatalf("error with a result: %v", err)
			}
			if !errors.Is(err, fault.ErrUsage) {
				t.Fatalf("error does not wrap ErrUsage: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "allowed_signers:") {
				t.Fatalf("error does not name the file and line: %v", err)
			}
			for _, field := range strings.Fields(string(data)) {
				if isPublicKeyBase64(field) && strings.Contains(err.Error(), field) {
					t.Fatalf("error quotes a key: %v", err)
				}
			}
			return
		}
		for _, who := range append(p.Principals(), "alice", "bob", "") {
			for _, k := range p.KeysFor(who, approval.NamespaceApproval, at) {
				if len(p.PrincipalsOf(k)) > len(p.Principals()) {
					t.Fatalf("PrincipalsOf names more people than the file")
				}
				_ = p.refuse(who, approval.NamespaceJournal, k, at.Add(100*365*24*time.Hour))
			}
		}
		for i := range p.entries {
			_ = p.refuse("nobody", approval.NamespaceApproval, p.entries[i].key, at)
		}
	})
}

// isPublicKeyBase64 reports whether s is the base64 of an SSH public key.
func isPublicKeyBase64(s string) bool {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return false
	}
	_, err = ssh.ParsePublicKey(raw)
	return err == nil
}
