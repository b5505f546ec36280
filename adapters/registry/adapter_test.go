package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/workflow/fault"
)

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	for _, opts := range []Options{
		{Retry: RetryPolicy{Attempts: -1}},
		{Retry: RetryPolicy{BaseDelay: -time.Second}},
		{Jobs: -2},
		{InsecureRegistries: []string{"http://registry.example.com"}},
		{InsecureRegistries: []string{"registry.example.com/team"}},
	} {
		_, err := New(opts)
		require.ErrorIs(t, err, fault.ErrUsage, "%+v", opts)
	}

	a, err := New(Options{})
	require.NoError(t, err)
	require.Equal(t, RetryPolicy{Attempts: DefaultAttempts, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay}, a.policy)
	require.Equal(t, DefaultJobs, a.jobs)
	require.Equal(t, remote.DefaultTransport, a.transport)
}

func TestInsecureRegistriesUsePlainHTTP(t *testing.T) {
	t.Parallel()
	const host = "registry.internal.example.com:5000"
	secure := newAdapter(t, Options{})
	ref, err := secure.parseReference(host + "/team/web:1.0")
	require.NoError(t, err)
	require.Equal(t, "https", ref.Context().Scheme())

	insecure := newAdapter(t, Options{InsecureRegistries: []string{host}})
	ref, err = insecure.parseReference(host + "/team/web:1.0")
	require.NoError(t, err)
	require.Equal(t, "http", ref.Context().Scheme())
	repo, err := insecure.parseRepository("target", host+"/prod/web")
	require.NoError(t, err)
	require.Equal(t, "http", repo.Scheme())

	all := newAdapter(t, Options{Insecure: true})
	ref, err = all.parseReference("registry.example.com/team/web:1.0")
	require.NoError(t, err)
	require.Equal(t, "http", ref.Context().Scheme())
}

// countingTransport counts the requests it carries.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestTransportCarriesEveryRequest(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, registryConfig{})
	push(t, reg.repo("ci/web:1.0"), ociImage(t, "linux/amd64", built, randomLayer(t, 10)))
	rt := &countingTransport{}
	mark := reg.log.mark()

	_, err := newAdapter(t, Options{Transport: rt}).Resolve(t.Context(), reg.repo("ci/web:1.0"))
	require.NoError(t, err)
	// The ping also tries HTTPS first, which the plain-HTTP test server
	// never sees as a request.
	answered := int64(len(reg.log.since(mark)))
	require.Positive(t, answered)
	require.GreaterOrEqual(t, rt.n.Load(), answered)
}

func TestTransientErrors(t *testing.T) {
	t.Parallel()
	status := func(code int, diag ...transport.ErrorCode) error {
		e := &transport.Error{StatusCode: code}
		for _, d := range diag {
			e.Errors = append(e.Errors, transport.Diagnostic{Code: d})
		}
		return fmt.Errorf("wrapped: %w", e)
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{status(500), true},
		{status(502), true},
		{status(503), true},
		{status(504), true},
		{status(429, transport.TooManyRequestsErrorCode), true},
		{status(408), true},
		{status(404, transport.BlobUploadUnknownErrorCode), true},
		{status(400, transport.BlobUploadInvalidErrorCode), true},
		{status(401, transport.UnauthorizedErrorCode), false},
		{status(403, transport.DeniedErrorCode), false},
		{status(404, transport.ManifestUnknownErrorCode), false},
		{status(400, transport.DigestInvalidErrorCode), false},
		{status(400, transport.UnknownErrorCode), false},
		{status(501), false},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("body: %w", io.ErrUnexpectedEOF), true},
		{&timeoutError{}, true},
		{context.Canceled, false},
		{mismatch("rewritten"), false},
		{errors.New("manifest invalid"), false},
	} {
		require.Equal(t, tc.want, transient(tc.err), "%v", tc.err)
	}
}

type timeoutError struct{}

func (*timeoutError) Error() string   { return "i/o timeout" }
func (*timeoutError) Timeout() bool   { return true }
func (*timeoutError) Temporary() bool { return true }

func TestBackoffGrowsWithJitterUpToTheCap(t *testing.T) {
	t.Parallel()
	a := newAdapter(t, Options{Retry: RetryPolicy{Attempts: 8, BaseDelay: 200 * time.Millisecond, MaxDelay: 5 * time.Second}})
	for n, base := range []time.Duration{200, 400, 800, 1600, 3200, 5000, 5000} {
		want := base * time.Millisecond
		for range 50 {
			d := a.backoff(n + 1)
			require.GreaterOrEqual(t, d, want/2, "attempt %d", n+1)
			require.LessOrEqual(t, d, want, "attempt %d", n+1)
		}
	}
}

func TestRetryStopsOnPermanentErrors(t *testing.T) {
	t.Parallel()
	a := newAdapter(t, Options{})
	calls := 0
	err := a.retry(t.Context(), func(context.Context) error {
		calls++
		return &transport.Error{StatusCode: http.StatusNotFound}
	})
	require.Error(t, err)
	require.Equal(t, 1, calls)

	calls = 0
	err = a.retry(t.Context(), func(context.Context) error {
		calls++
		if calls < 3 {
			return &transport.Error{StatusCode: http.StatusServiceUnavailable}
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, calls)
}
