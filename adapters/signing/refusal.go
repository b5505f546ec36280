package signing

import (
	"bytes"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"
)

// refusalKind is why the people file does not give a key to a principal.
type refusalKind int

const (
	// keyUnknown: no line lists the key.
	keyUnknown refusalKind = iota
	// keyOfOthers: lines list the key, for other principals.
	keyOfOthers
	// namespaceExcluded: the principal's line for the key restricts its
	// namespaces, and the namespace is not among them.
	namespaceExcluded
	// notYetValid: the principal's line for the key starts later.
	notYetValid
	// expired: the principal's line for the key ended earlier.
	expired
)

// refusal says why KeysFor(principal, namespace, at) leaves a key out: the
// reason of the first line that lists the key for principal, or why no
// line does. Verifier and Signer word it for their reader.
type refusal struct {
	kind   refusalKind
	fp     string   // the key's SHA-256 fingerprint
	owners []string // keyOfOthers: who the file gives the key to
	entry  *entry   // namespaceExcluded, notYetValid, expired
}

// refuse explains why the file does not give key to principal for
// namespace at time at. Call it only for a key KeysFor left out.
func (p *People) refuse(principal, namespace string, key ssh.PublicKey, at time.Time) refusal {
	r := refusal{kind: keyUnknown, fp: ssh.FingerprintSHA256(key)}
	blob := key.Marshal()
	for i := range p.entries {
		e := &p.entries[i]
		if !bytes.Equal(e.blob, blob) {
			continue
		}
		if !e.givesPrincipal(principal) {
			r.kind = keyOfOthers
			continue
		}
		r.entry = e
		switch {
		case !e.allowsNamespace(namespace):
			r.kind = namespaceExcluded
		case !e.after.IsZero() && at.Unix() < e.after.Unix():
			r.kind = notYetValid
		default:
			r.kind = expired
		}
		return r
	}
	if r.kind == keyOfOthers {
		r.owners = p.PrincipalsOf(key)
	}
	return r
}

// validity words a line's time bound that at falls outside.
func (r refusal) validity(principal, file string) string {
	e := r.entry
	if r.kind == notYetValid {
		return fmt.Sprintf("%s's key %s in %s is valid only from %s (line %d)", principal, r.fp, file, e.after.Format(time.RFC3339), e.line)
	}
	return fmt.Sprintf("%s's key %s in %s is valid only before %s (line %d)", principal, r.fp, file, e.before.Format(time.RFC3339), e.line)
}

// namespaces words a line's namespace restriction.
func (r refusal) namespaces(principal, namespace, file string) string {
	return fmt.Sprintf("%s:%d allows %s's key %s only for namespaces %s, not %s", file, r.entry.line, principal, r.fp, clip(r.entry.namespaces), namespace)
}

// owned words who a key belongs to: "alice's", "alice's and carol's".
func owned(owners []string) string {
	parts := make([]string, len(owners))
	for i, o := range owners {
		parts[i] = o + "'s"
	}
	return joinAnd(parts)
}
