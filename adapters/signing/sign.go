package signing

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/approval"
)

var _ workflow.Signer = (*Signer)(nil)

// literalPrefix marks a signing-key setting that is a public key itself,
// as git's user.signingkey does.
const literalPrefix = "key::"

// SignerOptions says which key signs and who may sign as whom.
type SignerOptions struct {
	// Key is the person's signing-key setting, read like git's
	// user.signingkey: the path of a private key file; the path of a
	// public key file whose private half is in ssh-agent; or a public key
	// itself, "key::ssh-ed25519 AAAA…", also held by the agent. Empty
	// means the first key in the agent that the people file gives the
	// principal. A leading ~/ is the home directory.
	Key string
	// AgentSocket is ssh-agent's socket, usually $SSH_AUTH_SOCK. Empty
	// means there is no agent.
	AgentSocket string
	// People is the path of the people file (allowed-signers format).
	People string
}

// Signer signs statements with the acting person's own SSH key.
//
// It never asks for a passphrase and never holds a private key beyond one
// Sign: a key protected by a passphrase is used through ssh-agent. Before
// signing it checks that the people file gives the key to the principal,
// so a person cannot produce a signature that would not verify. It is safe
// for concurrent use.
type Signer struct {
	opts SignerOptions
	now  func() time.Time
}

// NewSigner returns a Signer with the given options. It checks nothing
// yet: the key and the people file are read at each Sign, so a key added
// to the agent or the file later is used.
func NewSigner(opts SignerOptions) *Signer {
	return &Signer{opts: opts, now: time.Now}
}

// Sign signs message in namespace as principal and returns the armored
// signature with its key's fingerprint. The error, wrapping
// fault.ErrUsage, says what to do when no usable key is set or
// available, or when the key is not one the people file gives principal
// for namespace now. A cancelled ctx ends a signature the agent is
// holding.
func (s *Signer) Sign(ctx context.Context, principal, namespace string, message []byte) (approval.Signature, error) {
	if err := ctx.Err(); err != nil {
		return approval.Signature{}, err
	}
	if principal == "" {
		return approval.Signature{}, usagef("no principal to sign as: say who is acting (--actor)")
	}
	if namespace == "" {
		return approval.Signature{}, usagef("no signature namespace: relcap signs only within one (%s, %s)", approval.NamespaceApproval, approval.NamespaceJournal)
	}
	people, err := LoadPeople(s.opts.People)
	if err != nil {
		return approval.Signature{}, err
	}
	now := s.now()
	key, session, err := s.chooseKey(ctx, people, principal, namespace, now)
	defer session.close()
	if err != nil {
		return approval.Signature{}, err
	}
	pub := key.PublicKey()
	fp := ssh.FingerprintSHA256(pub)
	if findKey(people.KeysFor(principal, namespace, now), pub) == nil {
		return approval.Signature{}, usagef("%s", signRefusal(people.refuse(principal, namespace, pub, now), principal, namespace, people.name))
	}
	sig, err := sshsig.Sign(bytes.NewReader(message), key, sshsig.HashSHA512, namespace)
	if err != nil {
		if ctx.Err() != nil {
			return approval.Signature{}, fmt.Errorf("signing as %s with key %s: %w", principal, fp, ctx.Err())
		}
		if session != nil {
			return approval.Signature{}, fmt.Errorf("ssh-agent at %s did not sign with key %s (%w): if the key was added with ssh-add -c, confirm the request", session.socket, fp, err)
		}
		return approval.Signature{}, fmt.Errorf("signing as %s with key %s: %w", principal, fp, err)
	}
	return approval.Signature{Armored: string(sshsig.Armor(sig)), Key: fp}, nil
}

// signRefusal words a refusal for the person trying to sign.
func signRefusal(r refusal, principal, namespace, file string) string {
	switch r.kind {
	case keyOfOthers:
		if len(r.owners) == 0 {
			return fmt.Sprintf("your signing key %s is not %s's in %s: you cannot sign as %s", r.fp, principal, file, principal)
		}
		return fmt.Sprintf("your signing key %s is %s in %s, not %s's: you cannot sign as %s", r.fp, owned(r.owners), file, principal, principal)
	case namespaceExcluded:
		return r.namespaces(principal, namespace, file) + ": add it to the line's namespaces, or remove the option"
	case notYetValid:
		return r.validity(principal, file) + ": wait until then, or ask whoever keeps the file to change the line"
	case expired:
		return r.validity(principal, file) + ": ask whoever keeps the file to renew the line"
	}
	return fmt.Sprintf("your signing key %s is not in %s: add a line for %s with its public key, or set your signing key to %s's key", r.fp, file, principal, principal)
}

// chooseKey picks the key the setting names, or the agent's first key for
// principal when it names none. The session, possibly nil, is the agent
// connection the key signs through; the caller closes it.
func (s *Signer) chooseKey(ctx context.Context, people *People, principal, namespace string, now time.Time) (ssh.Signer, *agentSession, error) {
	setting := strings.TrimSpace(s.opts.Key)
	if setting == "" {
		return s.firstAgentKey(ctx, people, principal, namespace, now)
	}
	if literal, ok := strings.CutPrefix(setting, literalPrefix); ok {
		pub, err := parsePublicKeyLine(literal)
		if err != nil {
			return nil, nil, usagef("the signing key setting %s… is not a public key: write key::ssh-ed25519 AAAA… (the line of a .pub file)", literalPrefix)
		}
		return s.agentKey(ctx, pub, "the signing key set as key::…")
	}
	path, err := expandHome(setting)
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, usagef("cannot read your signing key: %v: set the signing key to a key file, or key::<public key>", err)
	}
	if block, _ := pem.Decode(data); block != nil {
		return s.privateKey(ctx, path, data)
	}
	pub, err := parsePublicKeyLine(string(data))
	if err != nil {
		return nil, nil, usagef("signing key %s is neither an SSH private key nor a public key (.pub) file", path)
	}
	return s.agentKey(ctx, pub, "the public key in "+path)
}

// privateKey loads a private key file. A passphrase-protected one is used
// through the agent when the agent holds it (as ssh-keygen -Y sign does);
// relcap never asks for the passphrase.
func (s *Signer) privateKey(ctx context.Context, path string, data []byte) (ssh.Signer, *agentSession, error) {
	key, err := ssh.ParsePrivateKey(data)
	if err == nil {
		return key, nil, nil
	}
	var missing *ssh.PassphraseMissingError
	if !errors.As(err, &missing) {
		return nil, nil, usagef("cannot read private key %s (%v): if it is a key relcap cannot read (a security key), ssh-add it and set the signing key to %s.pub", path, err, path)
	}
	advice := fmt.Sprintf("signing key %s is protected by a passphrase, and relcap never asks for one: add it to ssh-agent (ssh-add %s) and set the signing key to %s.pub", path, path, path)
	pub := missing.PublicKey
	if pub == nil {
		if data, err := os.ReadFile(path + ".pub"); err == nil {
			pub, _ = parsePublicKeyLine(string(data))
		}
	}
	if pub == nil || s.opts.AgentSocket == "" {
		return nil, nil, usagef("%s", advice)
	}
	session, err := dialAgent(ctx, s.opts.AgentSocket)
	if err != nil {
		return nil, nil, err
	}
	if signer := session.signer(pub); signer != nil {
		return signer, session, nil
	}
	session.close()
	return nil, nil, usagef("%s", advice)
}

// agentKey finds pub among the agent's keys.
func (s *Signer) agentKey(ctx context.Context, pub ssh.PublicKey, what string) (ssh.Signer, *agentSession, error) {
	fp := ssh.FingerprintSHA256(pub)
	if s.opts.AgentSocket == "" {
		return nil, nil, usagef("%s (key %s) needs its private half in ssh-agent, and there is no agent (SSH_AUTH_SOCK is not set): start one and ssh-add the key, or set the signing key to the private key file", what, fp)
	}
	session, err := dialAgent(ctx, s.opts.AgentSocket)
	if err != nil {
		return nil, nil, err
	}
	if signer := session.signer(pub); signer != nil {
		return signer, session, nil
	}
	session.close()
	return nil, nil, usagef("ssh-agent at %s does not hold %s (key %s): ssh-add its private key, or set the signing key to the private key file", s.opts.AgentSocket, what, fp)
}

// firstAgentKey picks the agent's first key the people file gives
// principal for namespace now.
func (s *Signer) firstAgentKey(ctx context.Context, people *People, principal, namespace string, now time.Time) (ssh.Signer, *agentSession, error) {
	if s.opts.AgentSocket == "" {
		return nil, nil, usagef("no signing key is set and there is no ssh-agent (SSH_AUTH_SOCK is not set): set your signing key to your key file (as git's user.signingkey), or start ssh-agent and ssh-add your key")
	}
	session, err := dialAgent(ctx, s.opts.AgentSocket)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range people.KeysFor(principal, namespace, now) {
		if signer := session.signer(k); signer != nil {
			return signer, session, nil
		}
	}
	held := make([]string, 0, len(session.signers))
	for _, k := range session.signers {
		desc := ssh.FingerprintSHA256(k.PublicKey())
		if owners := people.PrincipalsOf(k.PublicKey()); len(owners) > 0 {
			desc += " (" + owned(owners) + ")"
		}
		held = append(held, desc)
	}
	session.close()
	if len(held) == 0 {
		return nil, nil, usagef("no signing key is set and ssh-agent at %s holds no keys: ssh-add %s's key, or set your signing key to its file", s.opts.AgentSocket, principal)
	}
	return nil, nil, usagef("no signing key is set, and none of the keys in ssh-agent at %s is one %s gives %s for %s now (the agent holds %s): ssh-add %s's key, or set your signing key",
		s.opts.AgentSocket, people.name, principal, namespace, strings.Join(held, ", "), principal)
}

// parsePublicKeyLine reads a public key as a .pub file holds it: one line,
// "keytype base64-key [comment]". ssh.ParseAuthorizedKey alone is too
// lenient here: it skips lines it cannot read and accepts options, so it
// would find a key inside any authorized_keys or allowed_signers file.
func parsePublicKeyLine(text string) (ssh.PublicKey, error) {
	line, rest, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if strings.TrimSpace(rest) != "" {
		return nil, errors.New("more than one line")
	}
	pub, _, opts, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return nil, err
	}
	if len(opts) > 0 {
		return nil, errors.New("not a public key line")
	}
	return pub, nil
}

// expandHome resolves a leading ~/ as git does for user.signingkey.
func expandHome(path string) (string, error) {
	rest, ok := strings.CutPrefix(path, "~/")
	if !ok {
		return path, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", usagef("signing key %s: cannot find the home directory: %v", path, err)
	}
	return filepath.Join(home, rest), nil
}
