package config

import (
	"errors"
	"slices"
	"strconv"

	"github.com/sluicedb/sluice/tlsconf"
)

// TLSWanted reports whether the configuration needs TLS set up: a TLS
// port, or TLS for replication or the cluster bus, as Redis decides.
func (cfg *Config) TLSWanted() bool {
	return cfg.Get("tls-port") != "0" || cfg.Get("tls-replication") == "yes" || cfg.Get("tls-cluster") == "yes"
}

// TLSSettings gathers the tls-* directives for tlsconf.
func (cfg *Config) TLSSettings() tlsconf.Settings {
	atoi := func(name string) int { n, _ := strconv.Atoi(cfg.Get(name)); return n }
	return tlsconf.Settings{
		CertFile:            cfg.Get("tls-cert-file"),
		KeyFile:             cfg.Get("tls-key-file"),
		KeyFilePass:         cfg.Get("tls-key-file-pass"),
		ClientCertFile:      cfg.Get("tls-client-cert-file"),
		ClientKeyFile:       cfg.Get("tls-client-key-file"),
		ClientKeyFilePass:   cfg.Get("tls-client-key-file-pass"),
		DHParamsFile:        cfg.Get("tls-dh-params-file"),
		CACertFile:          cfg.Get("tls-ca-cert-file"),
		CACertDir:           cfg.Get("tls-ca-cert-dir"),
		Protocols:           cfg.Get("tls-protocols"),
		Ciphers:             cfg.Get("tls-ciphers"),
		Ciphersuites:        cfg.Get("tls-ciphersuites"),
		PreferServerCiphers: cfg.Get("tls-prefer-server-ciphers") == "yes",
		SessionCaching:      cfg.Get("tls-session-caching") == "yes",
		SessionCacheSize:    atoi("tls-session-cache-size"),
		SessionCacheTimeout: atoi("tls-session-cache-timeout"),
		NeedCA:              cfg.Get("tls-auth-clients") != "no" || cfg.Get("tls-cluster") == "yes" || cfg.Get("tls-replication") == "yes",
	}
}

// applyTLSConfig is CONFIG SET's hook for the tls-* directives, run once
// after all of a command's values are set, as Redis's applyTlsCfg: the
// whole TLS configuration is loaded again (new connections use it,
// certificate files included) when TLS is in use; a failure keeps the one
// in force.
func applyTLSConfig(cfg *Config) error {
	if cfg.Hooks.LoadTLS == nil || !cfg.TLSWanted() {
		return nil
	}
	if err := cfg.Hooks.LoadTLS(); err != nil {
		return errors.New("Unable to update TLS configuration. Check server logs.")
	}
	return nil
}

// applyTLSPort is CONFIG SET tls-port's hook: TLS is configured if it was
// not, then the TLS listeners move to the new port (0: none).
func applyTLSPort(cfg *Config) error {
	if cfg.Hooks.LoadTLS == nil {
		return nil
	}
	if cfg.Hooks.TLSLoaded != nil && !cfg.Hooks.TLSLoaded() {
		if err := cfg.Hooks.LoadTLS(); err != nil {
			return errors.New("Unable to update TLS configuration. Check server logs.")
		}
	}
	if cfg.Hooks.ListenTLS != nil {
		if err := cfg.Hooks.ListenTLS(SplitList(cfg.Get("bind")), cfg.Get("tls-port")); err != nil {
			return errors.New("Unable to listen on this port. Check server logs.")
		}
	}
	return nil
}

// laterHook is a hook CONFIG SET runs once after all of its values are
// set (see param.later).
type laterHook struct{ fn func(*Config) error }

// The TLS hooks (filled in by init: they read the configuration table
// that names them).
var tlsConfigHook, tlsPortHook = &laterHook{}, &laterHook{}

func init() {
	tlsConfigHook.fn = applyTLSConfig
	tlsPortHook.fn = applyTLSPort
}

// runLater runs the hooks of the directives a CONFIG SET changed that
// apply only after all of its values are set (each hook once, in order),
// as Redis applies its configs. On failure it returns the error and the
// index of the directive whose hook failed.
func (cfg *Config) runLater(ps []*param) (int, error) {
	if !cfg.Running.Load() {
		return 0, nil
	}
	var ran []*laterHook
	for i, p := range ps {
		if p.later == nil || slices.Contains(ran, p.later) {
			continue
		}
		ran = append(ran, p.later)
		if err := p.later.fn(cfg); err != nil {
			return i, err
		}
	}
	return 0, nil
}
