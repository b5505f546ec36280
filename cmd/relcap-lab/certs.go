package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI are the files the lab's TLS needs, generated fresh for each lab.
type PKI struct {
	CACert, ServingCert, ServingKey string // paths
	SAKey, SAPub                    string // service-account signing key pair
	// ArgoCert and ArgoKey are argocd-server's serving certificate;
	// ClientCert and ClientKey a client certificate, both signed by the
	// CA (the client pair is for client-certificate tests: the server
	// does not ask for one).
	ArgoCert, ArgoKey     string
	ClientCert, ClientKey string
	// WebhookCert and WebhookKey are the image webhook's serving
	// certificate, which the apiserver verifies with the CA (the
	// caBundle of its MutatingWebhookConfiguration).
	WebhookCert, WebhookKey string
	CAPEM                   []byte
}

// GeneratePKI writes, into dir: a CA; a serving certificate for 127.0.0.1,
// localhost and kubernetes.default.svc signed by it; one for argocd-server
// on 127.0.0.1 and localhost; one for the image webhook on the same; a
// client certificate; and the RSA key pair
// kube-apiserver signs service-account tokens with (kube-controller-manager
// gets the private half).
func GeneratePKI(dir string) (PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return PKI{}, err
	}
	p := PKI{
		CACert: filepath.Join(dir, "ca.crt"), ServingCert: filepath.Join(dir, "apiserver.crt"), ServingKey: filepath.Join(dir, "apiserver.key"),
		SAKey: filepath.Join(dir, "sa.key"), SAPub: filepath.Join(dir, "sa.pub"),
		ArgoCert: filepath.Join(dir, "argocd-server.crt"), ArgoKey: filepath.Join(dir, "argocd-server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
		WebhookCert: filepath.Join(dir, "image-webhook.crt"), WebhookKey: filepath.Join(dir, "image-webhook.key"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return PKI{}, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "relcap-lab-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return PKI{}, fmt.Errorf("create lab CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return PKI{}, err
	}
	leaf := func(cn string, usage x509.ExtKeyUsage, dns []string, ips []net.IP) *x509.Certificate {
		return &x509.Certificate{
			SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(30 * 24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: dns, IPAddresses: ips,
		}
	}
	loopback := net.IPv4(127, 0, 0, 1)
	leaves := []struct {
		what, cert, key string
		tmpl            *x509.Certificate
	}{
		{"apiserver", p.ServingCert, p.ServingKey, leaf("kube-apiserver", x509.ExtKeyUsageServerAuth,
			[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}, []net.IP{loopback, net.IPv4(10, 96, 0, 1)})},
		{"argocd-server", p.ArgoCert, p.ArgoKey, leaf("argocd-server", x509.ExtKeyUsageServerAuth,
			[]string{"localhost", "argocd-server", "argocd-server.argocd.svc"}, []net.IP{loopback})},
		{"image-webhook", p.WebhookCert, p.WebhookKey, leaf("relcap-lab-image-webhook", x509.ExtKeyUsageServerAuth,
			[]string{"localhost"}, []net.IP{loopback})},
		{"client", p.ClientCert, p.ClientKey, leaf("relcap-lab-client", x509.ExtKeyUsageClientAuth, nil, nil)},
	}
	p.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	files := []pemFile{{p.CACert, p.CAPEM}}
	for _, l := range leaves {
		certPEM, keyPEM, err := issue(l.tmpl, ca, caKey)
		if err != nil {
			return PKI{}, fmt.Errorf("create %s certificate: %w", l.what, err)
		}
		files = append(files, pemFile{l.cert, certPEM}, pemFile{l.key, keyPEM})
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return PKI{}, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return PKI{}, err
	}
	files = append(files,
		pemFile{p.SAKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})},
		pemFile{p.SAPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})})
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return PKI{}, err
		}
	}
	return p, nil
}

type pemFile struct {
	path string
	data []byte
}

// issue creates a P-256 key and a certificate from tmpl signed by ca, both
// PEM-encoded.
func issue(tmpl, ca *x509.Certificate, caKey crypto.Signer) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// randomToken returns 32 random hex characters.
func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
