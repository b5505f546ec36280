// Package gitconfig reads git's settings as git itself would in a
// repository, through the git command.
package gitconfig

import (
	"context"
	"os/exec"
	"strings"
)

// Get reads one git setting in the repository at dir; "" when git or the
// setting is absent.
func Get(ctx context.Context, dir, key string) string {
	cmd := exec.CommandContext(ctx, "git", "config", "--get", key)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// SSHSigningKey is git's user.signingkey in the repository at dir when git
// signs with SSH there (gpg.format = ssh); "" otherwise, since a GPG key is
// no SSH key.
func SSHSigningKey(ctx context.Context, dir string) string {
	if Get(ctx, dir, "gpg.format") != "ssh" {
		return ""
	}
	return Get(ctx, dir, "user.signingkey")
}
