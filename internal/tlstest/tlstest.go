// Package tlstest makes TLS certificates for tests, as Redis's
// utils/gen-test-certs.sh does: a CA, a server certificate, a client
// certificate and one with no usage restrictions, each with its key, in
// PEM files in a temporary directory.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
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
)

// Certs are the paths of the files New wrote.
type Certs struct {
	Dir                   string
	CACert, CAKey         string
	ServerCert, ServerKey string // server authentication only
	ClientCert, ClientKey string // client authentication only
	RedisCert, RedisKey   string // no usage restriction
	// OtherCACert and OtherClientCert/Key are a second CA and a client
	// certificate it signed, which the first CA does not trust.
	OtherCACert                     string
	OtherClientCert, OtherClientKey string
}

// New writes a CA and certificates signed by it into a temporary
// directory removed when the test ends. Keys are RSA 2048 like Redis's
// test certificates, except the "other" CA's (ECDSA P-256).
func New(tb testing.TB) *Certs {
	tb.Helper()
	dir := tb.TempDir()
	c := &Certs{Dir: dir}
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{Organization: []string{"Sluice Test"}, CommonName: "Certificate Authority"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	c.CACert, c.CAKey = write(tb, dir, "ca", caDER, caKey)

	issue := func(name, cn string, usage []x509.ExtKeyUsage, serial int64, parent *x509.Certificate, parentKey any) (string, string) {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			tb.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{Organization: []string{"Sluice Test"}, CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  usage,
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
			DNSNames:     []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			tb.Fatal(err)
		}
		return write(tb, dir, name, der, key)
	}
	c.ServerCert, c.ServerKey = issue("server", "Server-only", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, 2, caCert, caKey)
	c.ClientCert, c.ClientKey = issue("client", "Client-only", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, 3, caCert, caKey)
	c.RedisCert, c.RedisKey = issue("redis", "Generic-cert", nil, 4, caCert, caKey)

	otherKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	otherTmpl := *caTmpl
	otherTmpl.Subject.CommonName = "Another Authority"
	otherDER, err := x509.CreateCertificate(rand.Reader, &otherTmpl, &otherTmpl, &otherKey.PublicKey, otherKey)
	if err != nil {
		tb.Fatal(err)
	}
	otherCert, _ := x509.ParseCertificate(otherDER)
	c.OtherCACert, _ = write(tb, dir, "other-ca", otherDER, otherKey)
	c.OtherClientCert, c.OtherClientKey = issue("other-client", "Client-of-another-CA", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, 5, otherCert, otherKey)
	return c
}

func write(tb testing.TB, dir, name string, der []byte, key any) (string, string) {
	tb.Helper()
	certPath := filepath.Join(dir, name+".crt")
	keyPath := filepath.Join(dir, name+".key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return certPath, keyPath
}

// ClientConfig is a tls.Config for a client of a server using these
// certificates: it trusts the CA and presents the client certificate.
func (c *Certs) ClientConfig(tb testing.TB) *tls.Config {
	tb.Helper()
	return c.clientConfig(tb, c.ClientCert, c.ClientKey)
}

// ClientConfigWith is ClientConfig presenting another certificate ("" for
// none).
func (c *Certs) ClientConfigWith(tb testing.TB, cert, key string) *tls.Config {
	tb.Helper()
	return c.clientConfig(tb, cert, key)
}

func (c *Certs) clientConfig(tb testing.TB, cert, key string) *tls.Config {
	pem, err := os.ReadFile(c.CACert)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			tb.Fatal(err)
		}
		// Sent whatever CAs the server names, as OpenSSL clients do (Go's
		// picks only a certificate one of them signed).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &kp, nil }
	}
	return cfg
}
