package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/relcap/relcap/workflow"
	"github.com/relcap/relcap/workflow/fault"
)

// registryError is a registry failure explained for the captain: its
// message says what the registry answered and what it means; it unwraps to
// the workflow sentinel the domain reacts to (if any) and to the original
// error (a *transport.Error for registry answers).
type registryError struct {
	msg      string
	errs     []error
	terminal bool
}

func (e *registryError) Error() string   { return e.msg }
func (e *registryError) Unwrap() []error { return e.errs }

// missing says what a 404 means where it is read, when it means the named
// thing does not exist (fault.ErrNotFound).
type missing struct {
	manifest string // MANIFEST_UNKNOWN, e.g. "the digest is not in the source repository"
	repo     string // NAME_UNKNOWN, e.g. "the source repository does not exist"
}

// mismatch is the error for bytes in the target that are not the bytes
// promoted.
func mismatch(format string, args ...any) error {
	return &registryError{
		msg:      fmt.Sprintf(format, args...),
		errs:     []error{fault.ErrDigestMismatch},
		terminal: true,
	}
}

// do runs f under the retry policy and explains a final failure as an
// answer from host, the registry f talks to.
func (a *Adapter) do(ctx context.Context, host string, f func(context.Context) error) error {
	return translate(a.retry(ctx, f), host)
}

// translate turns a ggcr error into a *registryError: registry answers get
// their status and, for 401 and 403, advice about credentials on host.
// Errors already translated, and context errors, pass unchanged.
func translate(err error, host string) error {
	var rerr *registryError
	if err == nil || errors.As(err, &rerr) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	gaveUp := ""
	var ex *exhausted
	if errors.As(err, &ex) {
		gaveUp = fmt.Sprintf(" (gave up after %d attempts)", ex.attempts)
	}
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return &registryError{msg: err.Error() + gaveUp, errs: []error{err}}
	}
	status, _ := statusOf(terr)
	said := ""
	if len(terr.Errors) > 0 && terr.Errors[0].Message != "" {
		said = fmt.Sprintf(" (registry: %s)", terr.Errors[0].Message)
	}
	where := ""
	if terr.Request != nil {
		where = fmt.Sprintf(": %s %s", terr.Request.Method, terr.Request.URL.Path)
	}
	switch {
	case terr.StatusCode == http.StatusUnauthorized:
		return &registryError{
			msg: fmt.Sprintf("%s: %s did not accept the credentials relcap sent; check `docker login %s` and the entry for %s in ~/.docker/config.json",
				status, host, host, host),
			errs:     []error{err},
			terminal: true,
		}
	case terr.StatusCode == http.StatusForbidden:
		return &registryError{
			msg: fmt.Sprintf("%s: %s refused access with the credentials relcap sent; check `docker login %s`, the entry for %s in ~/.docker/config.json, and that the account may read the source and push to the target",
				status, host, host, host),
			errs:     []error{err},
			terminal: true,
		}
	case terr.StatusCode >= 400 && terr.StatusCode < 500 && !transient(err):
		return &registryError{msg: status + said + where, errs: []error{err}, terminal: true}
	default:
		return &registryError{msg: status + said + where + gaveUp, errs: []error{err}}
	}
}

// explain prefixes err with op ("copy sha256:… from host/repo"). A 404 means
// what m says, wrapping fault.ErrNotFound, where m says anything. Errors
// that retrying cannot fix come back as *workflow.TerminalError.
func explain(op string, err error, m missing) error {
	if err == nil {
		return nil
	}
	var terr *transport.Error
	if m != (missing{}) && errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
		status, code := statusOf(terr)
		text := m.manifest
		if code == string(transport.NameUnknownErrorCode) && m.repo != "" {
			text = m.repo
		}
		err = &registryError{msg: status + ": " + text, errs: []error{fault.ErrNotFound, terr}, terminal: true}
	}
	wrapped := fmt.Errorf("%s: %w", op, err)
	var rerr *registryError
	if (errors.As(err, &rerr) && rerr.terminal) || errors.Is(err, fault.ErrUsage) {
		return &workflow.TerminalError{Err: wrapped}
	}
	return wrapped
}

// statusOf renders a registry answer as "404 MANIFEST_UNKNOWN", or "404 Not
// Found" when there was no body (HEAD requests have none).
func statusOf(terr *transport.Error) (status, code string) {
	if len(terr.Errors) > 0 {
		code = string(terr.Errors[0].Code)
	}
	text := code
	if text == "" {
		text = http.StatusText(terr.StatusCode)
	}
	return fmt.Sprintf("%d %s", terr.StatusCode, text), code
}
