// Package gitcred asks git's credential helper (`git credential fill`,
// what `git push` uses) for the user name and password of an address.
package gitcred

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
)

// Helper runs git with Env as its environment, never prompting: relcap
// runs headless as often as not.
type Helper struct {
	Env []string
}

// Fill asks for the user name and password of u (its scheme, host and,
// when git's credential.useHttpPath wants it, path). It has the shape of
// gitrepo.Credentials.
func (h Helper) Fill(ctx context.Context, u *url.URL) (user, password string, err error) {
	cmd := exec.CommandContext(ctx, "git", "credential", "fill")
	cmd.Env = append(append([]string(nil), h.Env...), "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never")
	in := fmt.Sprintf("protocol=%s\nhost=%s\n", u.Scheme, u.Host)
	if u.Path != "" {
		in += "path=" + u.Path + "\n"
	}
	cmd.Stdin = strings.NewReader(in + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		// git's message says which helper failed; it holds no password
		// (fill prints those on stdout only).
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		line, _, _ := strings.Cut(msg, "\n")
		return "", "", fmt.Errorf("git credential fill: %s", line)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "password="); ok {
			password = v
		} else if v, ok := strings.CutPrefix(sc.Text(), "username="); ok {
			user = v
		}
	}
	return user, password, nil
}

// Password asks for the password (an API token, for a forge) of u's host
// alone.
func (h Helper) Password(ctx context.Context, u *url.URL) (string, error) {
	_, password, err := h.Fill(ctx, &url.URL{Scheme: u.Scheme, Host: u.Host})
	return password, err
}
