package tlsconf

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/youmark/pkcs8"
)

// The texts below are OpenSSL 3's for the same failures, so that a log
// reads as redis-server's does.
const (
	errNoStartLine = "error:0480006C:PEM routines::no start line"
	errASN1        = "error:0488000D:PEM routines::ASN1 lib"
	errUnsupported = "error:1E08010C:DECODER routines::unsupported"
	errKeyMismatch = "error:05800074:x509 certificate routines::key values mismatch"
	errNoPassword  = "error:07880109:common libcrypto routines::interrupted or cancelled"
	errBadDecrypt  = "error:1C800064:Provider routines::bad decrypt"
	errNoCertOrCRL = "error:05800088:x509 certificate routines::no certificate or crl found"
)

// sysError formats a failed read of a file as OpenSSL reports a system
// error ("error:80000002:system library::No such file or directory").
func sysError(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Sprintf("error:%08X:system library::%s", 0x80000000|uint32(errno), strerror(errno))
	}
	return err.Error()
}

// strerror is the C library's text for errno: Go's, capitalised.
func strerror(errno syscall.Errno) string {
	s := errno.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// readPEMFile reads path for PEM blocks. A directory reads as empty, as
// OpenSSL's PEM reader sees it.
func readPEMFile(path string) ([]byte, string) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, syscall.EISDIR) {
			return nil, ""
		}
		return nil, sysError(err)
	}
	return data, ""
}

// loadKeyPair loads a certificate chain (the first certificate is the
// leaf) and its private key, decrypting the key with pass when it is
// encrypted. The error is redis-server's log line.
func loadKeyPair(certFile, keyFile, pass string) (tls.Certificate, error) {
	var out tls.Certificate
	data, msg := readPEMFile(certFile)
	if msg == "" {
		rest := data
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			if b.Type != "CERTIFICATE" && b.Type != "TRUSTED CERTIFICATE" {
				continue
			}
			if len(out.Certificate) == 0 {
				leaf, err := x509.ParseCertificate(b.Bytes)
				if err != nil {
					msg = errASN1
					break
				}
				out.Leaf = leaf
			}
			out.Certificate = append(out.Certificate, b.Bytes)
		}
		if msg == "" && len(out.Certificate) == 0 {
			msg = errNoStartLine
		}
	}
	if msg != "" {
		return out, fmt.Errorf("Failed to load certificate: %s: %s", certFile, msg)
	}
	key, msg := loadPrivateKey(keyFile, pass)
	if msg == "" && !publicKeysEqual(out.Leaf.PublicKey, key.Public()) {
		msg = errKeyMismatch
	}
	if msg != "" {
		return out, fmt.Errorf("Failed to load private key: %s: %s", keyFile, msg)
	}
	out.PrivateKey = key
	return out, nil
}

func publicKeysEqual(a crypto.PublicKey, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// loadPrivateKey reads the first private key in a PEM file: PKCS#1, SEC 1
// or PKCS#8, plain or encrypted (PKCS#8 PBES2, or the legacy PEM
// encryption of "openssl genrsa -aes256 -traditional").
func loadPrivateKey(path, pass string) (crypto.Signer, string) {
	data, msg := readPEMFile(path)
	if msg != "" {
		return nil, msg
	}
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errUnsupported
		}
		if !strings.HasSuffix(b.Type, "PRIVATE KEY") {
			continue
		}
		der := b.Bytes
		// Legacy PEM encryption (deprecated in Go, still read by OpenSSL).
		if x509.IsEncryptedPEMBlock(b) {
			if pass == "" {
				return nil, errNoPassword
			}
			var err error
			if der, err = x509.DecryptPEMBlock(b, []byte(pass)); err != nil {
				return nil, errBadDecrypt
			}
		}
		var key any
		var err error
		switch b.Type {
		case "ENCRYPTED PRIVATE KEY":
			if pass == "" {
				return nil, errNoPassword
			}
			key, err = pkcs8.ParsePKCS8PrivateKey(der, []byte(pass))
			if err != nil {
				return nil, errBadDecrypt
			}
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(der)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(der)
		default:
			key, err = x509.ParsePKCS8PrivateKey(der)
		}
		if err != nil {
			if x509.IsEncryptedPEMBlock(b) {
				return nil, errBadDecrypt // a wrong password can decrypt to garbage
			}
			return nil, errUnsupported
		}
		switch k := key.(type) {
		case *rsa.PrivateKey:
			return k, ""
		case *ecdsa.PrivateKey:
			return k, ""
		case ed25519.PrivateKey:
			return k, ""
		}
		return nil, errUnsupported
	}
}

// loadCAs builds the pool of trusted certificates from a CA file (which
// must hold at least one) and a CA directory (every PEM certificate in its
// files; a directory that cannot be read adds nothing, as OpenSSL only
// looks into it when verifying). The error is redis-server's log line.
func loadCAs(file, dir string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if file != "" {
		data, msg := readPEMFile(file)
		if msg == "" {
			if n := addPEMCerts(pool, data); n == 0 {
				msg = errNoCertOrCRL
			}
		}
		if msg != "" {
			return nil, fmt.Errorf("Failed to configure CA certificate(s) file/directory: %s", msg)
		}
	}
	if dir != "" {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			if data, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				addPEMCerts(pool, data)
			}
		}
	}
	return pool, nil
}

// addPEMCerts adds the certificates in data to pool and returns how many
// certificates and CRLs it found.
func addPEMCerts(pool *x509.CertPool, data []byte) int {
	n := 0
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return n
		}
		switch b.Type {
		case "CERTIFICATE", "TRUSTED CERTIFICATE":
			if c, err := x509.ParseCertificate(b.Bytes); err == nil {
				pool.AddCert(c)
				n++
			}
		case "X509 CRL":
			n++
		}
	}
}

// checkDHParams reads a DH parameters file as Redis does at start-up. Go's
// TLS has no finite-field Diffie-Hellman key exchange (it uses ECDHE), so
// the parameters are only checked, never used.
func checkDHParams(path string) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, syscall.EISDIR) {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return fmt.Errorf("Failed to load %s: %s", path, strerror(errno))
		}
		return fmt.Errorf("Failed to load %s: %v", path, err)
	}
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return fmt.Errorf("%s: failed to read DH params.", path)
		}
		if b.Type != "DH PARAMETERS" && b.Type != "X9.42 DH PARAMETERS" {
			continue
		}
		var params struct {
			P, G *big.Int
			Rest asn1.RawValue `asn1:"optional"`
		}
		if _, err := asn1.Unmarshal(b.Bytes, &params); err != nil || params.P == nil || params.P.Sign() <= 0 {
			return fmt.Errorf("%s: failed to read DH params.", path)
		}
		return nil
	}
}
