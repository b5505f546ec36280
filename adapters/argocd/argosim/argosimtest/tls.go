package argosimtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/argocd/argosim"
)

// CA is a throw-away certificate authority, its certificate in CAFile.
type CA struct {
	CAFile string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
}

// NewCA makes a CA named name in a temporary directory.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), name+".pem")
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	return &CA{CAFile: file, cert: cert, key: key}
}

// ServerTLS is a TLS configuration for 127.0.0.1 and localhost with a
// certificate the CA signed.
func (ca *CA) ServerTLS(t testing.TB) *tls.Config {
	t.Helper()
	return ca.ServerTLSFor(t, "127.0.0.1")
}

// ServerTLSFor is ServerTLS for the IP address ip (and localhost).
func (ca *CA) ServerTLSFor(t testing.TB, ip string) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "argosim"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(ip)}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

// StartTLS runs a simulator like Start, served over TLS with a certificate
// of ca (and gRPC-Web under pathPrefix, when set).
func StartTLS(t testing.TB, ca *CA, pathPrefix string, apps ...argosim.AppConfig) (*argosim.Server, string) {
	t.Helper()
	return startWith(t, argosim.Config{PollInterval: 50 * time.Millisecond, Logf: t.Logf, TLS: ca.ServerTLS(t), PathPrefix: pathPrefix}, apps)
}

// ClientCert writes a client certificate the CA signed, and its key, and
// returns their files.
func (ca *CA) ClientCert(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "relcap"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	return certFile, keyFile
}

// RequireClientCerts makes cfg demand a client certificate the CA signed.
func (ca *CA) RequireClientCerts(cfg *tls.Config) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	return cfg
}

// StartMutualTLS is StartTLS with client certificates of ca required.
func StartMutualTLS(t testing.TB, ca *CA, apps ...argosim.AppConfig) (*argosim.Server, string) {
	t.Helper()
	return startWith(t, argosim.Config{PollInterval: 50 * time.Millisecond, Logf: t.Logf, TLS: ca.RequireClientCerts(ca.ServerTLS(t))}, apps)
}
