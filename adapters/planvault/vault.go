// Package planvault implements workflow.PlanVault: saved Terraform plan
// files shared through the team store, encrypted with age
// (filippo.io/age) to the SSH keys the people file gives those allowed to
// apply. No age or SSH type leaves the package.
//
// age decrypts files encrypted to SSH keys with the private key file
// itself: ssh-agent has no operation for it (it signs, it does not
// decrypt). The applier's key file is their signing-key setting as relcap
// reads it for signatures (RELCAP_SIGNING_KEY, else git's user.signingkey
// when git signs with SSH); a setting naming a .pub file means the private
// key beside it. A key protected by a passphrase is decrypted with the
// passphrase the Passphrase option supplies.
package planvault

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"filippo.io/age"
	"filippo.io/age/agessh"
	"golang.org/x/crypto/ssh"

	"github.com/relcap/relcap/adapters/signing"
	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
	"github.com/relcap/relcap/workflow/tfplan"
)

var _ workflow.PlanVault = (*Vault)(nil)

// planSuffix ends a saved plan's file name in the plan store, as the
// Terraform adapter names them: <fingerprint>.tfplan.
const planSuffix = ".tfplan"

// Options configure a Vault.
type Options struct {
	// Store keeps the ciphertexts: the team's ledger.
	Store workflow.SharedPlanStore
	// Where names the store in messages and the journal, without
	// credentials (the ledger's redacted location).
	Where string
	// People is the path of the people file (allowed-signers format),
	// read at each use.
	People string
	// PlanDir is this machine's private plan store, where fetched plans
	// are written (the Terraform adapter's PlanDir).
	PlanDir string
	// Key is the applier's signing-key setting (RELCAP_SIGNING_KEY or
	// git's user.signingkey): a private key file, or a .pub file with the
	// private key beside it. A leading ~/ is the home directory.
	Key string
	// KeyFrom names where Key came from, for messages ("RELCAP_SIGNING_KEY").
	KeyFrom string
	// Passphrase returns the passphrase of a protected key file, or an
	// error saying how to give one; nil means protected keys cannot be used.
	Passphrase func(keyFile string) ([]byte, error)
	// Clock decides expiry; nil means the wall clock.
	Clock workflow.Clock
}

// Vault shares plan files through the team store. It is safe for
// concurrent use.
type Vault struct {
	opts Options
}

// New checks opts and returns a Vault.
func New(opts Options) (*Vault, error) {
	switch {
	case opts.Store == nil:
		return nil, errors.New("planvault: no store")
	case opts.People == "":
		return nil, fmt.Errorf("%w: shared plans are encrypted to the people file's keys: name one in relcap.yaml (people: allowed_signers)", fault.ErrUsage)
	case opts.PlanDir == "":
		return nil, errors.New("planvault: no plan directory")
	}
	if opts.Clock == nil {
		opts.Clock = workflow.SystemClock{}
	}
	if opts.Where == "" {
		opts.Where = "the team store"
	}
	return &Vault{opts: opts}, nil
}

// Where names the team store.
func (v *Vault) Where() string { return v.opts.Where }

// Share encrypts req.Plan's file to every key the people file gives the
// appliers now (every principal of the file when req.Appliers is empty),
// skipping keys age cannot encrypt to, and stores it until req.ExpiresAt.
// The file must still have the reviewed SHA-256. No usable key at all is
// an error wrapping fault.ErrUsage that names each applier and why.
func (v *Vault) Share(ctx context.Context, req tfplan.ShareRequest) (tfplan.Share, error) {
	p := req.Plan
	people, err := signing.LoadPeople(v.opts.People)
	if err != nil {
		return tfplan.Share{}, err
	}
	appliers := req.Appliers
	if len(appliers) == 0 {
		appliers = people.Principals()
	}
	now := v.opts.Clock.Now()
	share := tfplan.Share{SharedBy: req.SharedBy, ExpiresAt: req.ExpiresAt}
	var recipients []age.Recipient
	var used [][]byte
	for _, who := range appliers {
		keys := people.KeysOf(who, now)
		if len(keys) == 0 {
			share.Skipped = append(share.Skipped, tfplan.SkippedRecipient{Principal: who, Reason: "the people file gives " + who + " no key valid now"})
		}
		for _, k := range keys {
			fp := ssh.FingerprintSHA256(k)
			r, err := recipient(k)
			if err != nil {
				share.Skipped = append(share.Skipped, tfplan.SkippedRecipient{Principal: who, Key: fp, Reason: err.Error()})
				continue
			}
			share.Recipients = append(share.Recipients, tfplan.Recipient{Principal: who, Key: fp})
			// One key listed for two principals (a wildcard line) is
			// one recipient stanza.
			if blob := k.Marshal(); !slices.ContainsFunc(used, func(b []byte) bool { return bytes.Equal(b, blob) }) {
				used = append(used, blob)
				recipients = append(recipients, r)
			}
		}
	}
	if len(recipients) == 0 {
		why := make([]string, 0, len(share.Skipped))
		for _, s := range share.Skipped {
			why = append(why, s.Principal+": "+s.Reason)
		}
		if len(appliers) == 0 {
			why = append(why, people.Name()+" names nobody")
		}
		return tfplan.Share{}, fmt.Errorf("%w: plan %s cannot be shared: no key of anyone allowed to apply in %s can receive it (%s); give them an ssh-ed25519 or ssh-rsa key in %s",
			fault.ErrUsage, workflow.ShortHash(p.Fingerprint), p.Env, strings.Join(why, "; "), people.Name())
	}
	plain, err := os.ReadFile(p.PlanFile)
	if err != nil {
		return tfplan.Share{}, fmt.Errorf("reading plan file to share: %w", err)
	}
	if got := sha256Hex(plain); got != p.PlanHash {
		return tfplan.Share{}, fmt.Errorf("%w: plan file %s has SHA-256 %s, not the reviewed %s: run relcap plan again", fault.ErrStalePlan, p.PlanFile, got, p.PlanHash)
	}
	var sealed bytes.Buffer
	w, err := age.Encrypt(&sealed, recipients...)
	if err != nil {
		return tfplan.Share{}, fmt.Errorf("encrypting plan %s: %w", workflow.ShortHash(p.Fingerprint), err)
	}
	if _, err := w.Write(plain); err != nil {
		return tfplan.Share{}, fmt.Errorf("encrypting plan %s: %w", workflow.ShortHash(p.Fingerprint), err)
	}
	if err := w.Close(); err != nil {
		return tfplan.Share{}, fmt.Errorf("encrypting plan %s: %w", workflow.ShortHash(p.Fingerprint), err)
	}
	err = v.opts.Store.PutSharedPlan(ctx, tfplan.SharedPlan{
		Fingerprint: p.Fingerprint, Env: p.Env, Ciphertext: sealed.Bytes(), Recipients: share.Recipients,
		SharedBy: req.SharedBy, SharedAt: now, ExpiresAt: req.ExpiresAt,
	})
	if err != nil {
		return tfplan.Share{}, err
	}
	return share, nil
}

// recipient is the age recipient of an SSH public key, or why there is none.
func recipient(k ssh.PublicKey) (age.Recipient, error) {
	switch k.Type() {
	case ssh.KeyAlgoED25519:
		return agessh.NewEd25519Recipient(k)
	case ssh.KeyAlgoRSA:
		r, err := agessh.NewRSARecipient(k)
		if err != nil {
			return nil, fmt.Errorf("age cannot encrypt to this ssh-rsa key: %v", err)
		}
		return r, nil
	}
	return nil, fmt.Errorf("age cannot encrypt to %s keys, only to ssh-ed25519 and ssh-rsa ones", k.Type())
}

// LocalPlanFile is PlanDir/<fingerprint>.tfplan and whether it exists.
func (v *Vault) LocalPlanFile(fingerprint string) (string, bool) {
	path := filepath.Join(v.opts.PlanDir, fingerprint+planSuffix)
	_, err := os.Stat(path)
	return path, err == nil
}

// Fetch fetches the shared copy of plan p, refuses it when it expired
// (deleting it; wraps fault.ErrStalePlan), decrypts it with the
// applier's own key file, checks its SHA-256 against p.PlanHash (wrapping
// fault.ErrTampered when it differs or age finds the ciphertext
// altered) and writes it, mode 0600, into the plan store. A key the plan
// is not encrypted to is refused (fault.ErrBlocked) before any
// passphrase is asked.
func (v *Vault) Fetch(ctx context.Context, p tfplan.Summary, principal string) (tfplan.FetchedPlan, error) {
	short := workflow.ShortHash(p.Fingerprint)
	sp, err := v.opts.Store.SharedPlan(ctx, p.Fingerprint)
	if err != nil {
		return tfplan.FetchedPlan{}, err
	}
	share := tfplan.Share{Recipients: sp.Recipients, SharedBy: sp.SharedBy, ExpiresAt: sp.ExpiresAt}
	if now := v.opts.Clock.Now(); now.After(sp.ExpiresAt) {
		derr := v.opts.Store.DeleteSharedPlan(ctx, p.Fingerprint)
		return tfplan.FetchedPlan{}, errors.Join(fmt.Errorf("%w: plan %s expired at %s (plans.expiry) and is deleted from %s: run relcap plan --env %s again and have the new fingerprint approved",
			fault.ErrStalePlan, short, sp.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z"), v.opts.Where, p.Env), derr)
	}
	keyFile, err := v.keyFile()
	if err != nil {
		return tfplan.FetchedPlan{}, err
	}
	pem, err := os.ReadFile(keyFile)
	if err != nil {
		return tfplan.FetchedPlan{}, fmt.Errorf("%w: cannot read your private key %s to decrypt plan %s: %v", fault.ErrUsage, keyFile, short, err)
	}
	pub, protected, err := publicKeyOf(keyFile, pem)
	if err != nil {
		return tfplan.FetchedPlan{}, err
	}
	fp := ssh.FingerprintSHA256(pub)
	if !slices.ContainsFunc(sp.Recipients, func(r tfplan.Recipient) bool { return r.Key == fp }) {
		return tfplan.FetchedPlan{}, fmt.Errorf("%w: %s cannot decrypt plan %s: it is encrypted to the keys of %s, and your key %s (%s) is not one of them; one of them applies it, or plan again once you are allowed to apply (approvers.apply) with this key in the people file",
			fault.ErrBlocked, principal, short, strings.Join(share.Principals(), ", "), fp, keyFile)
	}
	id, err := v.identity(keyFile, pem, protected)
	if err != nil {
		return tfplan.FetchedPlan{}, err
	}
	r, err := age.Decrypt(bytes.NewReader(sp.Ciphertext), id)
	var plain []byte
	if err == nil {
		plain, err = io.ReadAll(r)
	}
	var noMatch *age.NoIdentityMatchError
	switch {
	case errors.As(err, &noMatch):
		return tfplan.FetchedPlan{}, fmt.Errorf("%w: your key %s (%s) does not open plan %s, although the team store lists it among its recipients: the shared copy was changed; plan again", fault.ErrTampered, fp, keyFile, short)
	case err != nil:
		return tfplan.FetchedPlan{}, fmt.Errorf("%w: the shared copy of plan %s in %s fails age's integrity check (%v): it was changed after it was shared; nothing was applied; plan again", fault.ErrTampered, short, v.opts.Where, err)
	}
	if got := sha256Hex(plain); got != p.PlanHash {
		return tfplan.FetchedPlan{}, fmt.Errorf("%w: the shared copy of plan %s decrypts to a file with SHA-256 %s, not the reviewed %s: it is not the plan that was approved; nothing was applied; plan again", fault.ErrTampered, short, got, p.PlanHash)
	}
	file, err := v.writePlan(p.Fingerprint, plain)
	if err != nil {
		return tfplan.FetchedPlan{}, err
	}
	return tfplan.FetchedPlan{File: file, Key: fp, Share: share}, nil
}

// writePlan writes a fetched plan into the plan store as the Terraform
// adapter writes its own: a temporary file, mode 0600, renamed into place.
func (v *Vault) writePlan(fingerprint string, plain []byte) (string, error) {
	if err := os.MkdirAll(v.opts.PlanDir, 0o700); err != nil {
		return "", fmt.Errorf("plan store %s: %w", v.opts.PlanDir, err)
	}
	tmp, err := os.CreateTemp(v.opts.PlanDir, ".plan-*.tmp")
	if err != nil {
		return "", fmt.Errorf("writing fetched plan in %s: %w", v.opts.PlanDir, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("securing fetched plan: %w", err)
	}
	if _, err := tmp.Write(plain); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing fetched plan: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("writing fetched plan: %w", err)
	}
	final := filepath.Join(v.opts.PlanDir, fingerprint+planSuffix)
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", fmt.Errorf("saving fetched plan: %w", err)
	}
	return final, nil
}

// noAgent explains why an applier needs a key file.
const noAgent = "age decrypts a shared plan with your private key file, not through ssh-agent"

// keyFile is the private key file the key setting names.
func (v *Vault) keyFile() (string, error) {
	from := v.opts.KeyFrom
	if from == "" {
		from = "your signing key setting"
	}
	setting := strings.TrimSpace(v.opts.Key)
	switch {
	case setting == "":
		return "", fmt.Errorf("%w: this machine has no copy of the plan, and %s: set RELCAP_SIGNING_KEY (or git's user.signingkey) to your private key file, e.g. ~/.ssh/id_ed25519", fault.ErrUsage, noAgent)
	case strings.HasPrefix(setting, "key::"):
		return "", fmt.Errorf("%w: this machine has no copy of the plan, and %s; %s is a public key (key::…): set RELCAP_SIGNING_KEY to the private key file instead", fault.ErrUsage, noAgent, from)
	}
	path := setting
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%w: %s %s: cannot find the home directory: %v", fault.ErrUsage, from, setting, err)
		}
		path = filepath.Join(home, rest)
	}
	if priv, ok := strings.CutSuffix(path, ".pub"); ok {
		if _, err := os.Stat(priv); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: %s names %s, and %s: its private key %s is not there; set RELCAP_SIGNING_KEY to your private key file", fault.ErrUsage, from, path, noAgent, priv)
		}
		path = priv
	}
	return path, nil
}

// publicKeyOf reads the public key of a private key file, and whether the
// file is protected by a passphrase (its public half is then in the file,
// as OpenSSH writes it, or in the .pub beside it).
func publicKeyOf(path string, data []byte) (ssh.PublicKey, bool, error) {
	if block, _ := pem.Decode(data); block == nil {
		return nil, false, fmt.Errorf("%w: %s is not an SSH private key file (%s): set RELCAP_SIGNING_KEY to your private key file", fault.ErrUsage, path, noAgent)
	}
	raw, err := ssh.ParseRawPrivateKey(data)
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		pub := missing.PublicKey
		if pub == nil {
			if b, rerr := os.ReadFile(path + ".pub"); rerr == nil {
				pub, _, _, _, _ = ssh.ParseAuthorizedKey(b)
			}
		}
		if pub == nil {
			return nil, false, fmt.Errorf("%w: %s is protected by a passphrase and relcap cannot tell its public key: put its .pub file beside it", fault.ErrUsage, path)
		}
		return pub, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("%w: cannot read private key %s: %v (age decrypts with ssh-ed25519 and ssh-rsa key files; a security key cannot decrypt)", fault.ErrUsage, path, err)
	}
	signer, err := ssh.NewSignerFromKey(raw)
	if err != nil {
		return nil, false, fmt.Errorf("%w: private key %s: %v", fault.ErrUsage, path, err)
	}
	return signer.PublicKey(), false, nil
}

// identity is the age identity of the key file, decrypted with its
// passphrase when it has one. The passphrase is checked here, so a wrong
// one is said plainly rather than as an age error.
func (v *Vault) identity(path string, data []byte, protected bool) (age.Identity, error) {
	raw, err := ssh.ParseRawPrivateKey(data)
	if protected {
		if v.opts.Passphrase == nil {
			return nil, fmt.Errorf("%w: your key %s is protected by a passphrase and none can be asked here", fault.ErrUsage, path)
		}
		pass, perr := v.opts.Passphrase(path)
		if perr != nil {
			return nil, perr
		}
		raw, err = ssh.ParseRawPrivateKeyWithPassphrase(data, pass)
		if errors.Is(err, x509.IncorrectPasswordError) {
			return nil, fmt.Errorf("%w: wrong passphrase for %s", fault.ErrUsage, path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read private key %s: %v", fault.ErrUsage, path, err)
	}
	switch k := raw.(type) {
	case *ed25519.PrivateKey:
		return agessh.NewEd25519Identity(*k)
	case ed25519.PrivateKey:
		return agessh.NewEd25519Identity(k)
	case *rsa.PrivateKey:
		return agessh.NewRSAIdentity(k)
	}
	return nil, fmt.Errorf("%w: private key %s is of a type age cannot decrypt with: use an ssh-ed25519 or ssh-rsa key", fault.ErrUsage, path)
}

// Delete deletes the shared copy of an applied plan.
func (v *Vault) Delete(ctx context.Context, fingerprint string) error {
	return v.opts.Store.DeleteSharedPlan(ctx, fingerprint)
}

// Purge deletes the shared plans that expired.
func (v *Vault) Purge(ctx context.Context) ([]string, error) {
	return v.opts.Store.DeleteExpiredSharedPlans(ctx, v.opts.Clock.Now())
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
