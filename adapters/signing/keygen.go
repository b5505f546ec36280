package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
)

// GenerateKeyFile writes a new ed25519 key without a passphrase, in
// OpenSSH's format, to path (mode 0600) and its public half to path.pub, as
// ssh-keygen -t ed25519 would, and returns the public key line
// ("ssh-ed25519 AAAA… comment") for the people file. The zero-set-up demo makes its
// people's keys with it. It refuses to overwrite either file, so nobody's
// key is replaced by accident.
func GenerateKeyFile(path, comment string) (authorizedLine string, err error) {
	if strings.ContainsAny(comment, "\r\n") {
		return "", usagef("key comment %s: a comment is one line", clip(comment))
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("generating an ed25519 key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return "", fmt.Errorf("encoding the key for %s: %w", path, err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encoding the public key for %s: %w", path, err)
	}
	line := strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(sshPub)), "\n")
	if comment != "" {
		line += " " + comment
	}
	if err := writeNew(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return "", err
	}
	if err := writeNew(path+".pub", []byte(line+"\n"), 0o644); err != nil {
		_ = os.Remove(path)
		return "", err
	}
	return line, nil
}

// writeNew creates path with data, failing if it exists.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("writing key file: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("writing key file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("writing key file %s: %w", path, err)
	}
	return nil
}
