package tlsconf

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/tlstest"
	"github.com/youmark/pkcs8"
)

var (
	certsOnce sync.Once
	certs     *tlstest.Certs
)

// testCerts makes one set of certificates for the package's tests (RSA
// keys are slow to generate); they live in a directory of their own.
func testCerts(t *testing.T) *tlstest.Certs {
	certsOnce.Do(func() { certs = tlstest.New(&keepTB{TB: t}) })
	return certs
}

// keepTB is a testing.TB whose TempDir outlives the test that made it.
type keepTB struct{ testing.TB }

func (k *keepTB) TempDir() string {
	d, err := os.MkdirTemp("", "tlsconf-test")
	if err != nil {
		k.Fatal(err)
	}
	return d
}

func TestMain(m *testing.M) {
	code := m.Run()
	if certs != nil {
		os.RemoveAll(certs.Dir)
	}
	os.Exit(code)
}

func settings(c *tlstest.Certs) Settings {
	return Settings{CertFile: c.ServerCert, KeyFile: c.ServerKey, CACertFile: c.CACert, NeedCA: true, SessionCaching: true, SessionCacheSize: 20480, SessionCacheTimeout: 300}
}

// TestLoadErrors checks each bad file gives the line redis-server 7.0
// logs for it (captured from Debian's redis-server with OpenSSL 3).
func TestLoadErrors(t *testing.T) {
	c := testCerts(t)
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	cases := []struct {
		name string
		edit func(s *Settings)
		want string
	}{
		{"no cert", func(s *Settings) { s.CertFile = "" }, "No tls-cert-file configured!"},
		{"no key", func(s *Settings) { s.KeyFile = "" }, "No tls-key-file configured!"},
		{"no CA", func(s *Settings) { s.CACertFile = "" }, "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!"},
		{"missing cert", func(s *Settings) { s.CertFile = "/nonexistent" }, "Failed to load certificate: /nonexistent: error:80000002:system library::No such file or directory"},
		{"key as cert", func(s *Settings) { s.CertFile = c.ServerKey }, "Failed to load certificate: " + c.ServerKey + ": error:0480006C:PEM routines::no start line"},
		{"empty cert", func(s *Settings) { s.CertFile = empty }, "Failed to load certificate: " + empty + ": error:0480006C:PEM routines::no start line"},
		{"directory as cert", func(s *Settings) { s.CertFile = c.Dir }, "Failed to load certificate: " + c.Dir + ": error:0480006C:PEM routines::no start line"},
		{"missing key", func(s *Settings) { s.KeyFile = "/nonexistent" }, "Failed to load private key: /nonexistent: error:80000002:system library::No such file or directory"},
		{"cert as key", func(s *Settings) { s.KeyFile = c.ServerCert }, "Failed to load private key: " + c.ServerCert + ": error:1E08010C:DECODER routines::unsupported"},
		{"mismatched key", func(s *Settings) { s.KeyFile = c.ClientKey }, "Failed to load private key: " + c.ClientKey + ": error:05800074:x509 certificate routines::key values mismatch"},
		{"missing CA", func(s *Settings) { s.CACertFile = "/nonexistent" }, "Failed to configure CA certificate(s) file/directory: error:80000002:system library::No such file or directory"},
		{"key as CA", func(s *Settings) { s.CACertFile = c.ServerKey }, "Failed to configure CA certificate(s) file/directory: error:05800088:x509 certificate routines::no certificate or crl found"},
		{"missing DH", func(s *Settings) { s.DHParamsFile = "/nonexistent" }, "Failed to load /nonexistent: No such file or directory"},
		{"cert as DH", func(s *Settings) { s.DHParamsFile = c.CACert }, c.CACert + ": failed to read DH params."},
		{"protocols", func(s *Settings) { s.Protocols = "foo" }, "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'."},
		{"protocols comma", func(s *Settings) { s.Protocols = "TLSv1.2,TLSv1.3" }, "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'."},
		{"ciphers", func(s *Settings) { s.Ciphers = "foo" }, "Failed to configure ciphers: foo"},
		{"ciphersuites", func(s *Settings) { s.Ciphersuites = "foo" }, "Failed to configure ciphersuites: foo"},
		{"missing client cert", func(s *Settings) { s.ClientCertFile, s.ClientKeyFile = "/nonexistent", c.ClientKey }, "Failed to load certificate: /nonexistent: error:80000002:system library::No such file or directory"},
	}
	for _, tc := range cases {
		s := settings(c)
		tc.edit(&s)
		_, err := Load(s)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v\nwant %s", tc.name, err, tc.want)
		}
	}
	// What Redis accepts: a CA directory that does not exist (OpenSSL
	// reads it only when verifying), unknown names beside known ones, a
	// client certificate without its key (unused), no CA when nothing
	// needs one.
	for _, edit := range []func(s *Settings){
		func(s *Settings) { s.CACertFile, s.CACertDir = "", "/nonexistent" },
		func(s *Settings) { s.Ciphers = "DEFAULT:foo" },
		func(s *Settings) { s.Ciphersuites = "TLS_AES_128_GCM_SHA256:foo" },
		func(s *Settings) { s.ClientCertFile = c.ClientCert },
		func(s *Settings) { s.CACertFile, s.NeedCA = "", false },
	} {
		s := settings(c)
		edit(&s)
		if _, err := Load(s); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

// TestEncryptedKeys loads keys encrypted as PKCS#8 (what OpenSSL 3's
// "openssl rsa -aes256" writes) and with legacy PEM encryption, with the
// right password, a wrong one and none, as Redis reports them.
func TestEncryptedKeys(t *testing.T) {
	c := testCerts(t)
	dir := t.TempDir()
	block, _ := pem.Decode(mustRead(t, c.ServerKey))
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := pkcs8.MarshalPrivateKey(key, []byte("1234"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p8 := filepath.Join(dir, "p8.key")
	os.WriteFile(p8, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: enc}), 0o600)
	legacy, err := x509.EncryptPEMBlock(rand.Reader, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey)), []byte("1234"), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "legacy.key")
	os.WriteFile(old, pem.EncodeToMemory(legacy), 0o600)
	files := []string{p8, old}
	if _, err := exec.LookPath("openssl"); err == nil {
		// The file the Redis suite's "encrypted keyfile" test makes.
		ossl := filepath.Join(dir, "openssl.key")
		if out, err := exec.Command("openssl", "rsa", "-in", c.ServerKey, "-out", ossl, "-aes256", "-passout", "pass:1234").CombinedOutput(); err != nil {
			t.Fatalf("openssl: %v %s", err, out)
		}
		files = append(files, ossl)
	}
	for _, f := range files {
		s := settings(c)
		s.KeyFile = f
		if _, err := Load(s); err == nil || !strings.HasSuffix(err.Error(), "error:07880109:common libcrypto routines::interrupted or cancelled") {
			t.Errorf("%s without a password: %v", f, err)
		}
		s.KeyFilePass = "wrong"
		if _, err := Load(s); err == nil || !strings.HasSuffix(err.Error(), "error:1C800064:Provider routines::bad decrypt") {
			t.Errorf("%s with a wrong password: %v", f, err)
		}
		s.KeyFilePass = "1234"
		if _, err := Load(s); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// handshake connects a client with cfg to a server with srv over a pipe;
// the server writes "ok" once its side of the handshake succeeded, which
// the client reads (with TLS 1.3 a rejected client certificate shows
// there, after the client's handshake).
func handshake(t *testing.T, srv, cfg *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		s := tls.Server(a, srv)
		if s.Handshake() == nil {
			s.Write([]byte("ok"))
		}
		a.Close()
	}()
	c := tls.Client(b, cfg)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err != nil {
		return tls.ConnectionState{}, err
	}
	buf := make([]byte, 2)
	if _, err := c.Read(buf); err != nil {
		return c.ConnectionState(), err
	}
	return c.ConnectionState(), nil
}

// TestAuthClients checks tls-auth-clients: yes requires a certificate
// from the CA, optional verifies one when sent, no asks for none; a
// certificate from another CA is refused unless none is asked for.
func TestAuthClients(t *testing.T) {
	c := testCerts(t)
	ctx, err := Load(settings(c))
	if err != nil {
		t.Fatal(err)
	}
	good := c.ClientConfig(t)
	none := c.ClientConfigWith(t, "", "")
	other := c.ClientConfigWith(t, c.OtherClientCert, c.OtherClientKey)
	for _, tc := range []struct {
		auth                AuthClients
		good, none, foreign bool
	}{
		{AuthYes, true, false, false},
		{AuthOptional, true, true, false},
		{AuthNo, true, true, true},
	} {
		srv := ctx.ServerConfig(tc.auth)
		for _, x := range []struct {
			cfg  *tls.Config
			want bool
			what string
		}{{good, tc.good, "CA's client"}, {none, tc.none, "no certificate"}, {other, tc.foreign, "other CA's client"}} {
			_, err := handshake(t, srv, x.cfg)
			if (err == nil) != x.want {
				t.Errorf("auth %d, %s: err=%v, want success=%v", tc.auth, x.what, err, x.want)
			}
		}
	}
}

// TestClientConfig: the client side verifies the server's chain against
// the CAs without a host name, and presents tls-client-cert-file, or
// tls-cert-file when there is none.
func TestClientConfig(t *testing.T) {
	c := testCerts(t)
	s := settings(c)
	ctx, err := Load(s)
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, err := Load(Settings{CertFile: c.RedisCert, KeyFile: c.RedisKey, CACertFile: c.CACert, NeedCA: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, srvCtx.ServerConfig(AuthNo), ctx.ClientConfig()); err != nil {
		t.Fatal(err)
	}
	// tls-cert-file as the client certificate: a server-only one is
	// refused where a client certificate is required (OpenSSL refuses
	// Redis's server.crt too), one without restrictions is accepted.
	if _, err := handshake(t, srvCtx.ServerConfig(AuthYes), ctx.ClientConfig()); err == nil {
		t.Fatal("a server-only certificate was accepted as a client certificate")
	}
	generic, err := Load(Settings{CertFile: c.RedisCert, KeyFile: c.RedisKey, CACertFile: c.CACert, NeedCA: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, srvCtx.ServerConfig(AuthYes), generic.ClientConfig()); err != nil {
		t.Fatal(err)
	}
	// A server whose certificate another CA signed is refused.
	otherCtx, err := Load(Settings{CertFile: c.OtherClientCert, KeyFile: c.OtherClientKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, otherCtx.ServerConfig(AuthNo), ctx.ClientConfig()); err == nil {
		t.Fatal("a server certificate from another CA was accepted")
	}
	// With a client certificate configured, that one is presented.
	s.ClientCertFile, s.ClientKeyFile = c.ClientCert, c.ClientKey
	ctx2, err := Load(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := ctx2.ClientConfig().Certificates[0].Leaf.Subject.CommonName; got != "Client-only" {
		t.Fatalf("client certificate %q", got)
	}
	if got := ctx.ClientConfig().Certificates[0].Leaf.Subject.CommonName; got != "Server-only" {
		t.Fatalf("client certificate without tls-client-cert-file: %q", got)
	}
}

// TestProtocols: tls-protocols limits the versions, a gap included.
func TestProtocols(t *testing.T) {
	c := testCerts(t)
	for _, tc := range []struct {
		protocols string
		client    [2]uint16 // min, max
		want      uint16    // 0: refused
	}{
		{"", [2]uint16{tls.VersionTLS10, tls.VersionTLS13}, tls.VersionTLS13},
		{"", [2]uint16{tls.VersionTLS10, tls.VersionTLS11}, 0},
		{"TLSv1.2", [2]uint16{tls.VersionTLS12, tls.VersionTLS13}, tls.VersionTLS12},
		{"TLSv1.2", [2]uint16{tls.VersionTLS13, tls.VersionTLS13}, 0},
		{"tlsv1.3", [2]uint16{tls.VersionTLS12, tls.VersionTLS12}, 0},
		{"TLSv1 TLSv1.3", [2]uint16{tls.VersionTLS10, tls.VersionTLS12}, tls.VersionTLS10},
		{"TLSv1 TLSv1.3", [2]uint16{tls.VersionTLS11, tls.VersionTLS12}, 0},
		{"TLSv1.1 TLSv1.2", [2]uint16{tls.VersionTLS10, tls.VersionTLS13}, tls.VersionTLS12},
	} {
		s := settings(c)
		s.Protocols = tc.protocols
		ctx, err := Load(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg := c.ClientConfig(t)
		cfg.MinVersion, cfg.MaxVersion = tc.client[0], tc.client[1]
		st, err := handshake(t, ctx.ServerConfig(AuthYes), cfg)
		if tc.want == 0 {
			if err == nil {
				t.Errorf("%q with client %x-%x: connected with %x", tc.protocols, tc.client[0], tc.client[1], st.Version)
			}
			continue
		}
		if err != nil || st.Version != tc.want {
			t.Errorf("%q with client %x-%x: version %x err %v, want %x", tc.protocols, tc.client[0], tc.client[1], st.Version, err, tc.want)
		}
	}
}

// TestCipherPreference: with tls-ciphers set, a TLS 1.2 handshake picks the
// client's first allowed suite, or the server's with
// tls-prefer-server-ciphers, as OpenSSL does. (Go's client orders its
// offer itself, so the choice is checked on a hello made here, and the
// handshakes check what is allowed.)
func TestCipherPreference(t *testing.T) {
	c := testCerts(t)
	s := settings(c)
	s.Protocols = "TLSv1.2"
	s.Ciphers = "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:AES128-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384"
	hello := &tls.ClientHelloInfo{
		CipherSuites:      []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
		SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12},
		SupportedCurves:   []tls.CurveID{tls.X25519},
	}
	for _, prefer := range []bool{false, true} {
		s.PreferServerCiphers = prefer
		ctx, err := Load(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ctx.ServerConfig(AuthYes).GetConfigForClient(hello)
		if err != nil {
			t.Fatal(err)
		}
		// The ECDSA suite is skipped: the certificate is RSA.
		want := uint16(tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)
		if prefer {
			want = tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
		}
		if len(cfg.CipherSuites) != 1 || cfg.CipherSuites[0] != want || cfg.MaxVersion != tls.VersionTLS12 {
			t.Errorf("prefer-server-ciphers %v: got %x (max version %x), want %s", prefer, cfg.CipherSuites, cfg.MaxVersion, tls.CipherSuiteName(want))
		}
		client := c.ClientConfig(t)
		if st, err := handshake(t, ctx.ServerConfig(AuthYes), client); err != nil || st.Version != tls.VersionTLS12 {
			t.Errorf("handshake: %v version %x", err, st.Version)
		}
		// A suite the list leaves out is refused.
		client.CipherSuites = []uint16{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256}
		if _, err := handshake(t, ctx.ServerConfig(AuthYes), client); err == nil {
			t.Error("a suite outside tls-ciphers was accepted")
		}
		// RSA key exchange, outside Go's defaults, works when listed.
		client.CipherSuites = []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA256}
		if st, err := handshake(t, ctx.ServerConfig(AuthYes), client); err != nil || st.CipherSuite != tls.TLS_RSA_WITH_AES_128_CBC_SHA256 {
			t.Errorf("AES128-SHA256: %v %x", err, st.CipherSuite)
		}
	}
}

// TestCipherSuites13: a client that offers none of tls-ciphersuites falls
// back to TLS 1.2.
func TestCipherSuites13(t *testing.T) {
	c := testCerts(t)
	s := settings(c)
	s.Ciphersuites = "TLS_AES_128_CCM_SHA256"
	ctx, err := Load(s)
	if err != nil {
		t.Fatal(err)
	}
	st, err := handshake(t, ctx.ServerConfig(AuthYes), c.ClientConfig(t))
	if err != nil || st.Version != tls.VersionTLS12 {
		t.Fatalf("version %x err %v", st.Version, err)
	}
	s.Ciphersuites = "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"
	if ctx, err = Load(s); err != nil {
		t.Fatal(err)
	}
	st, err = handshake(t, ctx.ServerConfig(AuthYes), c.ClientConfig(t))
	if err != nil || st.Version != tls.VersionTLS13 {
		t.Fatalf("version %x err %v", st.Version, err)
	}
}

// TestSessionCache: with tls-session-caching a client resumes its session;
// the cache keeps at most tls-session-cache-size sessions for
// tls-session-cache-timeout; without caching nothing resumes.
func TestSessionCache(t *testing.T) {
	c := testCerts(t)
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		s := settings(c)
		ctx, err := Load(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg := c.ClientConfig(t)
		cfg.MaxVersion = version
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(8)
		resumed := func(ctx *Context) bool {
			st, err := handshake(t, ctx.ServerConfig(AuthYes), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return st.DidResume
		}
		if resumed(ctx) {
			t.Fatal("first connection resumed")
		}
		if !resumed(ctx) {
			t.Fatalf("version %x: second connection did not resume", version)
		}
		if n := ctx.CachedSessions(); n == 0 {
			t.Fatalf("cache holds %d sessions", n)
		}
		s.SessionCaching = false
		off, err := Load(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(8)
		resumed(off)
		if resumed(off) {
			t.Fatal("resumed with tls-session-caching no")
		}
		s.SessionCaching, s.SessionCacheTimeout = true, 0
		expired, err := Load(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(8)
		resumed(expired)
		time.Sleep(10 * time.Millisecond)
		if resumed(expired) {
			t.Fatal("resumed an expired session")
		}
	}
	// A cache of one session: a second client's session pushes out the
	// first's, which then cannot resume.
	s := settings(c)
	s.SessionCacheSize = 1
	ctx, err := Load(s)
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.ClientConfig(t), c.ClientConfig(t)
	a.ClientSessionCache, b.ClientSessionCache = tls.NewLRUClientSessionCache(8), tls.NewLRUClientSessionCache(8)
	a.MaxVersion, b.MaxVersion = tls.VersionTLS12, tls.VersionTLS12 // one ticket per handshake
	connect := func(cfg *tls.Config) bool {
		st, err := handshake(t, ctx.ServerConfig(AuthYes), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return st.DidResume
	}
	connect(a)
	if !connect(a) {
		t.Fatal("no resumption with a cache of one")
	}
	connect(b)
	if connect(a) {
		t.Fatal("resumed a session the cache of one had dropped")
	}
	if n := ctx.CachedSessions(); n != 1 {
		t.Fatalf("cache of one holds %d", n)
	}
}

// TestCipherListLikeOpenSSL evaluates cipher strings as the openssl
// command does, restricted to the suites Go has.
func TestCipherListLikeOpenSSL(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	names := map[uint16]string{}
	known := map[string]bool{}
	for _, s := range suites {
		names[s.id] = s.name
		known[s.name] = true
	}
	for _, str := range []string{
		"DEFAULT", "ALL", "HIGH", "DEFAULT:-AES128-SHA256", "-ALL:AES128-SHA256", "AES128-SHA256:AES256-SHA256",
		"ECDHE+AESGCM:ECDHE+CHACHA20", "kRSA", "aECDSA:aRSA", "AES256:AES128", "ALL:+kRSA", "ALL:-AES:AES128",
		"HIGH:!aNULL:!MD5", "ECDHE-RSA-AES128-SHA:AES256-SHA", "ALL:@STRENGTH", "SHA1", "TLSv1.2:!AESGCM",
		"DEFAULT:!kRSA", "AES128-SHA,AES256-SHA", "CHACHA20:AESGCM+ECDSA", "DHE-RSA-AES128-SHA:AES128-SHA",
	} {
		out, err := exec.Command("openssl", "ciphers", "-s", "-tls1_2", "--", str).Output()
		var want []string
		if err == nil {
			for _, n := range strings.Split(strings.TrimSpace(string(out)), ":") {
				if known[n] {
					want = append(want, n)
				}
			}
		}
		ids, perr := ParseCipherList(str)
		var got []string
		for _, id := range ids {
			got = append(got, names[id])
		}
		if (err != nil) != (perr != nil) || strings.Join(got, ":") != strings.Join(want, ":") {
			t.Errorf("%q:\n got %v (%v)\nwant %v (%v)", str, got, perr, want, err)
		}
	}
}
