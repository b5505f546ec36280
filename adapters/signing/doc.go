// Package signing implements workflow.Signer and workflow.SignatureVerifier
// with SSH signatures, the way git signs commits with gpg.format=ssh: each
// person signs with their own key, through ssh-agent or a key file they
// name, and signatures are checked against a people file in git's (and
// OpenSSH's) allowed-signers format.
//
// Signatures are the armored SSHSIG format `ssh-keygen -Y sign` writes, so
// anyone can check one with `ssh-keygen -Y verify` and the same people file,
// without relcap. The cryptography is OpenSSH's protocol as implemented by
// golang.org/x/crypto/ssh and github.com/hiddeco/sshsig; this package only
// decides which key may sign as whom.
//
// Errors say plainly why a signature does not count and what to do. Problems
// with the people file or the person's key setting wrap fault.ErrUsage; a
// signature that does not verify wraps ErrUnverified. No error carries
// private key material or a passphrase; keys are named by their SHA-256
// fingerprint.
package signing
