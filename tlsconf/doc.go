// Package tlsconf builds crypto/tls configurations from Redis 7.0's tls-*
// directives: certificate and key files (with key passwords, PKCS#8 and
// legacy PEM encryption), client certificates, CA files and directories,
// tls-protocols, OpenSSL cipher strings (tls-ciphers, tls-ciphersuites) with
// tls-prefer-server-ciphers, and the server-side session cache
// (tls-session-caching, -cache-size, -cache-timeout).
//
// Load turns Settings into a Context, or fails with the line redis-server
// logs for the same files ("Failed to load certificate: ..."). A Context is
// what Redis keeps as its two SSL_CTXs:
//
//   - ServerConfig(auth) for accepted connections: the client port with
//     tls-auth-clients, and the cluster bus, which always requires a client
//     certificate (AuthYes);
//   - ClientConfig() for connections this server opens: a replica to its
//     master (tls-replication), MIGRATE and the cluster bus (tls-cluster).
//     It presents tls-client-cert-file, or tls-cert-file when none is set,
//     and verifies the peer's chain against the CAs without checking its
//     host name, as Redis does.
//
// Redis 7.0 does not map client certificates to ACL users (that came later,
// as tls-auth-clients-user): a verified certificate only admits the
// connection, which then authenticates like any other.
package tlsconf
