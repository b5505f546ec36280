package forgeurl

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/relcap/relcap/workflow/fault"
)

// DefaultTimeout bounds one API call when the options give none.
const DefaultTimeout = 30 * time.Second

// HTTPClient is the client a forge adapter talks through: override when a
// test gives one (its Transport is kept), else a fresh transport that
// goes through the environment's proxy and trusts the system's
// authorities plus those of caFile (a private CA). Every call is bounded
// by timeout (DefaultTimeout when zero). The client is a copy: the
// adapters' SDKs wrap its Transport, and the caller's client stays as
// it was.
func HTTPClient(override *http.Client, caFile string, timeout time.Duration) (*http.Client, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if override != nil {
		c := *override
		if c.Timeout == 0 {
			c.Timeout = timeout
		}
		return &c, nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: envrepo.review.ca_file: %w", fault.ErrUsage, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: envrepo.review.ca_file %s holds no PEM certificate", fault.ErrUsage, caFile)
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: t, Timeout: timeout}, nil
}
