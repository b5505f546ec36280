package registry

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// retry runs f until it succeeds, fails permanently, runs out of attempts
// or ctx ends. Each call of f is one unit of work that is safe to repeat (a
// read, one blob copy, one manifest PUT), so a failure late in a promotion
// does not redo the parts that worked.
//
// When attempts run out the error is an *exhausted, so the message can say
// so; when ctx ends the error wraps ctx.Err().
func (a *Adapter) retry(ctx context.Context, f func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return contextError(ctx, err)
		}
		if !transient(err) {
			return err
		}
		if attempt >= a.policy.Attempts {
			return &exhausted{err: err, attempts: attempt}
		}
		t := time.NewTimer(a.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return contextError(ctx, err)
		case <-t.C:
		}
	}
}

// backoff is the wait after failed attempt n (1-based): exponential, capped,
// with "equal jitter" (half fixed, half random) so that copies failing
// together do not retry in lockstep yet still back off.
func (a *Adapter) backoff(n int) time.Duration {
	d := a.policy.BaseDelay
	for i := 1; i < n && d < a.policy.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, a.policy.MaxDelay)
	half := d / 2
	return half + rand.N(half+1) // math/rand: jitter needs no secrecy
}

// exhausted is a transient error that outlived the retry budget.
type exhausted struct {
	err      error
	attempts int
}

func (e *exhausted) Error() string { return e.err.Error() }
func (e *exhausted) Unwrap() error { return e.err }

// contextError makes sure an error seen while ctx ended satisfies
// errors.Is(err, ctx.Err()), whatever ggcr wrapped it in.
func contextError(ctx context.Context, err error) error {
	if errors.Is(err, ctx.Err()) {
		return err
	}
	return &ctxErr{ctx: ctx.Err(), last: err}
}

type ctxErr struct{ ctx, last error }

func (e *ctxErr) Error() string   { return e.ctx.Error() + " (last error: " + e.last.Error() + ")" }
func (e *ctxErr) Unwrap() []error { return []error{e.ctx, e.last} }

// transient reports whether retrying err may succeed: server errors, rate
// limits, timeouts, dropped connections, and upload sessions the registry
// lost. Client errors (401, 403, 404, 400 …) are answers, not accidents.
func transient(err error) bool {
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusRequestTimeout, http.StatusTooManyRequests,
			http.StatusInternalServerError, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		// A registry may expire or lose an upload session; a new attempt
		// opens a new one.
		for _, d := range terr.Errors {
			if d.Code == transport.BlobUploadUnknownErrorCode || d.Code == transport.BlobUploadInvalidErrorCode {
				return true
			}
		}
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return true
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}
