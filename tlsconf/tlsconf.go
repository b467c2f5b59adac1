package tlsconf

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"slices"
	"time"
)

// AuthClients is tls-auth-clients: whether accepted connections must
// present a certificate signed by one of the CAs.
type AuthClients int

const (
	AuthYes      AuthClients = iota // a verified certificate is required (the default)
	AuthNo                          // no certificate is asked for
	AuthOptional                    // a certificate is verified when one is sent
)

// ParseAuthClients maps tls-auth-clients' value ("yes", "no", "optional");
// anything else is AuthYes, as Redis fails secure.
func ParseAuthClients(v string) AuthClients {
	switch v {
	case "no":
		return AuthNo
	case "optional":
		return AuthOptional
	}
	return AuthYes
}

// Settings are the tls-* directives a Context is built from.
type Settings struct {
	CertFile, KeyFile, KeyFilePass                   string
	ClientCertFile, ClientKeyFile, ClientKeyFilePass string
	DHParamsFile                                     string
	CACertFile, CACertDir                            string
	Protocols                                        string // tls-protocols; "" is "TLSv1.2 TLSv1.3"
	Ciphers                                          string // tls-ciphers (TLS 1.2 and below); "" is Go's default
	Ciphersuites                                     string // tls-ciphersuites (TLS 1.3); "" is all
	PreferServerCiphers                              bool
	SessionCaching                                   bool
	SessionCacheSize                                 int
	SessionCacheTimeout                              int // seconds
	// NeedCA is set when tls-auth-clients is not "no", or tls-cluster or
	// tls-replication is on: Redis then requires a CA file or directory.
	NeedCA bool
}

// Context is a loaded TLS configuration, replaced as a whole when a
// directive changes (connections already open keep the one they began
// with).
type Context struct {
	server [3]*tls.Config // by AuthClients
	client *tls.Config
	cache  *sessionCache
}

// Load reads the files of s and builds a Context. The error is what
// redis-server logs for the same settings ("Failed to load certificate:
// server.crt: error:80000002:system library::No such file or directory").
func Load(s Settings) (*Context, error) {
	if s.CertFile == "" {
		return nil, errors.New("No tls-cert-file configured!")
	}
	if s.KeyFile == "" {
		return nil, errors.New("No tls-key-file configured!")
	}
	if s.NeedCA && s.CACertFile == "" && s.CACertDir == "" {
		return nil, errors.New("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!")
	}
	versions, err := ParseProtocols(s.Protocols)
	if err != nil {
		return nil, err
	}
	cert, err := loadKeyPair(s.CertFile, s.KeyFile, s.KeyFilePass)
	if err != nil {
		return nil, err
	}
	var cas *x509.CertPool
	if s.CACertFile != "" || s.CACertDir != "" {
		if cas, err = loadCAs(s.CACertFile, s.CACertDir); err != nil {
			return nil, err
		}
	}
	var ciphers, suites13 []uint16
	if s.Ciphers != "" {
		if ciphers, err = ParseCipherList(s.Ciphers); err != nil {
			return nil, err
		}
	}
	if s.Ciphersuites != "" {
		if suites13, err = ParseCipherSuites(s.Ciphersuites); err != nil {
			return nil, err
		}
	}
	if s.DHParamsFile != "" {
		if err := checkDHParams(s.DHParamsFile); err != nil {
			return nil, err
		}
	}
	clientCert := cert
	if s.ClientCertFile != "" && s.ClientKeyFile != "" {
		if clientCert, err = loadKeyPair(s.ClientCertFile, s.ClientKeyFile, s.ClientKeyFilePass); err != nil {
			return nil, err
		}
	}

	ctx := &Context{}
	base := &tls.Config{
		Certificates:                []tls.Certificate{cert},
		MinVersion:                  versions[0],
		MaxVersion:                  versions[len(versions)-1],
		CipherSuites:                ciphers,
		ClientCAs:                   cas,
		DynamicRecordSizingDisabled: true,
		SessionTicketsDisabled:      !s.SessionCaching,
	}
	if cas == nil {
		base.ClientCAs = x509.NewCertPool() // no CA: no client certificate verifies
	}
	if s.SessionCaching {
		ctx.cache = newSessionCache(s.SessionCacheSize, time.Duration(s.SessionCacheTimeout)*time.Second)
		base.WrapSession = ctx.cache.wrap
		base.UnwrapSession = ctx.cache.unwrap
	}
	sel := &selector{versions: versions, ciphers: ciphers, suites13: suites13, preferServer: s.PreferServerCiphers, certKind: keyKind(cert)}
	for _, auth := range []AuthClients{AuthYes, AuthNo, AuthOptional} {
		c := base.Clone()
		switch auth {
		case AuthYes:
			c.ClientAuth = tls.RequireAndVerifyClientCert
		case AuthOptional:
			c.ClientAuth = tls.VerifyClientCertIfGiven
		default:
			c.ClientAuth = tls.NoClientCert
		}
		if sel.needed() {
			sel := *sel
			sel.base = c
			c.GetConfigForClient = sel.forClient
		}
		ctx.server[auth] = c
	}

	roots := cas
	if roots == nil {
		roots = x509.NewCertPool()
	}
	clientCiphers := ciphers
	if clientCiphers == nil {
		// What Redis offers its masters and peers: OpenSSL's DEFAULT
		// (so a server that allows only, say, AES128-SHA256 is reached).
		// The server picks; Go's accepted servers keep Go's safer default.
		clientCiphers, _ = ParseCipherList("DEFAULT")
	}
	ctx.client = &tls.Config{
		Certificates:                []tls.Certificate{clientCert},
		MinVersion:                  versions[0],
		MaxVersion:                  versions[len(versions)-1],
		CipherSuites:                clientCiphers,
		DynamicRecordSizingDisabled: true,
		// The chain is verified below, without the host name: Redis's
		// replicas and cluster nodes check the peer's certificate
		// against the CAs only.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, roots, x509.ExtKeyUsageServerAuth)
		},
	}
	return ctx, nil
}

// ServerConfig is the configuration for connections accepted with the
// given tls-auth-clients setting (the cluster bus uses AuthYes).
func (c *Context) ServerConfig(auth AuthClients) *tls.Config {
	if auth < 0 || int(auth) >= len(c.server) {
		auth = AuthYes
	}
	return c.server[auth]
}

// ClientConfig is the configuration for connections this server opens
// (replication, MIGRATE, the cluster bus).
func (c *Context) ClientConfig() *tls.Config { return c.client }

// CachedSessions reports how many sessions the server-side cache holds.
func (c *Context) CachedSessions() int {
	if c.cache == nil {
		return 0
	}
	return c.cache.len()
}

func verifyChain(certs []*x509.Certificate, roots *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return errors.New("tls: peer sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// keyKind is the authentication a certificate's key gives TLS 1.2 suites.
func keyKind(c tls.Certificate) int {
	switch c.PrivateKey.(type) {
	case *rsa.PrivateKey:
		return aRSA
	case *ecdsa.PrivateKey, ed25519.PrivateKey:
		return aECDSA
	}
	return 0
}

// selector makes the per-connection choices Go's Config cannot express:
// OpenSSL's order of preference among TLS 1.2 suites (the client's, or
// the server's with tls-prefer-server-ciphers), a tls-protocols list with
// a gap, and tls-ciphersuites.
type selector struct {
	base         *tls.Config
	versions     []uint16
	ciphers      []uint16 // nil: Go's default suites and choice
	suites13     []uint16 // nil: every TLS 1.3 suite
	preferServer bool
	certKind     int
}

func (s *selector) needed() bool {
	gap := int(s.versions[len(s.versions)-1]-s.versions[0]) != len(s.versions)-1
	return s.ciphers != nil || s.suites13 != nil || gap
}

func (s *selector) forClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	// The version: the highest the client offers among those enabled.
	var version uint16
	for _, v := range hello.SupportedVersions {
		if slices.Contains(s.versions, v) && v > version {
			version = v
		}
	}
	if version == tls.VersionTLS13 && s.suites13 != nil && !offersAny(hello.CipherSuites, s.suites13) {
		// None of the allowed TLS 1.3 suites: fall back to an older version.
		version = 0
		for _, v := range hello.SupportedVersions {
			if slices.Contains(s.versions, v) && v < tls.VersionTLS13 && v > version {
				version = v
			}
		}
	}
	if version == 0 {
		return nil, errors.New("tls: no protocol version in common with the client")
	}
	c := s.base.Clone()
	c.GetConfigForClient = nil
	c.MinVersion, c.MaxVersion = version, version
	if version < tls.VersionTLS13 && s.ciphers != nil {
		if id, ok := s.pickSuite(hello, version); ok {
			c.CipherSuites = []uint16{id}
		}
	}
	return c, nil
}

func offersAny(offered, allowed []uint16) bool {
	for _, id := range offered {
		if slices.Contains(allowed, id) {
			return true
		}
	}
	return false
}

// pickSuite chooses the suite OpenSSL would: the first in the client's
// order (or the server's, with tls-prefer-server-ciphers) that both allow
// and this certificate and version can use.
func (s *selector) pickSuite(hello *tls.ClientHelloInfo, version uint16) (uint16, bool) {
	usable := func(id uint16) bool {
		for i := range suites {
			su := &suites[i]
			if su.id != id {
				continue
			}
			if su.attrs&(aRSA|aECDSA)&s.certKind == 0 {
				return false
			}
			if su.attrs&verTLS12 != 0 && version < tls.VersionTLS12 {
				return false
			}
			return su.attrs&kECDHE == 0 || len(hello.SupportedCurves) > 0
		}
		return false
	}
	first, second := hello.CipherSuites, s.ciphers
	if s.preferServer {
		first, second = second, first
	}
	for _, id := range first {
		if slices.Contains(second, id) && usable(id) {
			return id, true
		}
	}
	return 0, false
}
