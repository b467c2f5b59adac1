package tlsconf

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// Attribute bits of a TLS 1.2 (and earlier) cipher suite, as OpenSSL's
// cipher-string aliases name them.
const (
	kRSA = 1 << iota
	kECDHE
	aRSA
	aECDSA
	encAES128
	encAES256
	encAESGCM128
	encAESGCM256
	encCHACHA20
	macSHA1
	macSHA256
	macSHA384
	macAEAD
	verTLS12 // needs TLS 1.2
	verSSL3  // OpenSSL lists it as SSLv3 (kRSA with SHA-1)
	verTLS1  // OpenSSL lists it as TLSv1 (ECDHE with SHA-1)
)

type suite struct {
	name     string // OpenSSL's name
	id       uint16
	attrs    int
	strength int
}

// suites are the TLS 1.2 suites Go implements that OpenSSL 3 offers, in
// the order OpenSSL's "ALL" lists them (its preference order).
var suites = []suite{
	{"ECDHE-ECDSA-AES256-GCM-SHA384", tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, kECDHE | aECDSA | encAESGCM256 | macAEAD | verTLS12, 256},
	{"ECDHE-RSA-AES256-GCM-SHA384", tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, kECDHE | aRSA | encAESGCM256 | macAEAD | verTLS12, 256},
	{"ECDHE-ECDSA-CHACHA20-POLY1305", tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, kECDHE | aECDSA | encCHACHA20 | macAEAD | verTLS12, 256},
	{"ECDHE-RSA-CHACHA20-POLY1305", tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, kECDHE | aRSA | encCHACHA20 | macAEAD | verTLS12, 256},
	{"ECDHE-ECDSA-AES128-GCM-SHA256", tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, kECDHE | aECDSA | encAESGCM128 | macAEAD | verTLS12, 128},
	{"ECDHE-RSA-AES128-GCM-SHA256", tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, kECDHE | aRSA | encAESGCM128 | macAEAD | verTLS12, 128},
	{"ECDHE-ECDSA-AES128-SHA256", tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256, kECDHE | aECDSA | encAES128 | macSHA256 | verTLS12, 128},
	{"ECDHE-RSA-AES128-SHA256", tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256, kECDHE | aRSA | encAES128 | macSHA256 | verTLS12, 128},
	{"ECDHE-ECDSA-AES256-SHA", tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, kECDHE | aECDSA | encAES256 | macSHA1 | verTLS1, 256},
	{"ECDHE-RSA-AES256-SHA", tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, kECDHE | aRSA | encAES256 | macSHA1 | verTLS1, 256},
	{"ECDHE-ECDSA-AES128-SHA", tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, kECDHE | aECDSA | encAES128 | macSHA1 | verTLS1, 128},
	{"ECDHE-RSA-AES128-SHA", tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, kECDHE | aRSA | encAES128 | macSHA1 | verTLS1, 128},
	{"AES256-GCM-SHA384", tls.TLS_RSA_WITH_AES_256_GCM_SHA384, kRSA | aRSA | encAESGCM256 | macAEAD | verTLS12, 256},
	{"AES128-GCM-SHA256", tls.TLS_RSA_WITH_AES_128_GCM_SHA256, kRSA | aRSA | encAESGCM128 | macAEAD | verTLS12, 128},
	{"AES128-SHA256", tls.TLS_RSA_WITH_AES_128_CBC_SHA256, kRSA | aRSA | encAES128 | macSHA256 | verTLS12, 128},
	{"AES256-SHA", tls.TLS_RSA_WITH_AES_256_CBC_SHA, kRSA | aRSA | encAES256 | macSHA1 | verSSL3, 256},
	{"AES128-SHA", tls.TLS_RSA_WITH_AES_128_CBC_SHA, kRSA | aRSA | encAES128 | macSHA1 | verSSL3, 128},
}

const encAny = encAES128 | encAES256 | encAESGCM128 | encAESGCM256 | encCHACHA20

// aliases are OpenSSL's cipher-string aliases, as masks over the
// attributes (a suite matches when it has one of the bits of each group
// the alias lists). Aliases that match only suites Go lacks (DHE, PSK,
// CAMELLIA, ...) are in opensslOnlyAliases.
var aliases = map[string][]int{
	"ALL":      {-1},
	"HIGH":     {-1},
	"kRSA":     {kRSA},
	"RSA":      {kRSA},
	"aRSA":     {aRSA},
	"kECDHE":   {kECDHE},
	"kEECDH":   {kECDHE},
	"ECDHE":    {kECDHE},
	"EECDH":    {kECDHE},
	"ECDH":     {kECDHE},
	"aECDSA":   {aECDSA},
	"ECDSA":    {aECDSA},
	"AES":      {encAES128 | encAES256 | encAESGCM128 | encAESGCM256},
	"AES128":   {encAES128 | encAESGCM128},
	"AES256":   {encAES256 | encAESGCM256},
	"AESGCM":   {encAESGCM128 | encAESGCM256},
	"CHACHA20": {encCHACHA20},
	"AEAD":     {macAEAD},
	"SHA1":     {macSHA1},
	"SHA":      {macSHA1},
	"SHA256":   {macSHA256},
	"SHA384":   {macSHA384},
	"TLSv1.2":  {verTLS12},
	"TLSv1.0":  {verTLS1 | verSSL3},
	"TLSv1":    {verTLS1 | verSSL3},
	"SSLv3":    {verSSL3},
	"FIPS":     {encAES128 | encAES256 | encAESGCM128 | encAESGCM256},
}

// opensslOnlyAliases select only suites Go does not implement, and
// opensslOnlyNames are OpenSSL 3's other TLS 1.2 suite names: a list made
// of them is valid for OpenSSL (no error) and leaves Go no suite.
var opensslOnlyAliases = strings.Fields(`COMPLEMENTOFALL COMPLEMENTOFDEFAULT MEDIUM LOW
	kDHE kEDH EDH DHE DH ADH AECDH aNULL eNULL NULL aDSS DSS kPSK kECDHEPSK kDHEPSK kRSAPSK PSK
	SRP kSRP aSRP aPSK CAMELLIA CAMELLIA128 CAMELLIA256 ARIA ARIA128 ARIA256 ARIAGCM CCM AESCCM
	AESCCM8 MD5 SUITEB128 SUITEB128ONLY SUITEB128C2 SUITEB192 3DES DES RC4 RC2 IDEA SEED GOST`)

var opensslOnlyNames = strings.Fields(`DHE-DSS-AES256-GCM-SHA384 DHE-RSA-AES256-GCM-SHA384
	DHE-RSA-CHACHA20-POLY1305 ECDHE-ECDSA-AES256-CCM8 ECDHE-ECDSA-AES256-CCM DHE-RSA-AES256-CCM8
	DHE-RSA-AES256-CCM ECDHE-ECDSA-ARIA256-GCM-SHA384 ECDHE-ARIA256-GCM-SHA384
	DHE-DSS-ARIA256-GCM-SHA384 DHE-RSA-ARIA256-GCM-SHA384 ADH-AES256-GCM-SHA384
	DHE-DSS-AES128-GCM-SHA256 DHE-RSA-AES128-GCM-SHA256 ECDHE-ECDSA-AES128-CCM8
	ECDHE-ECDSA-AES128-CCM DHE-RSA-AES128-CCM8 DHE-RSA-AES128-CCM ECDHE-ECDSA-ARIA128-GCM-SHA256
	ECDHE-ARIA128-GCM-SHA256 DHE-DSS-ARIA128-GCM-SHA256 DHE-RSA-ARIA128-GCM-SHA256
	ADH-AES128-GCM-SHA256 ECDHE-ECDSA-AES256-SHA384 ECDHE-RSA-AES256-SHA384 DHE-RSA-AES256-SHA256
	DHE-DSS-AES256-SHA256 ECDHE-ECDSA-CAMELLIA256-SHA384 ECDHE-RSA-CAMELLIA256-SHA384
	DHE-RSA-CAMELLIA256-SHA256 DHE-DSS-CAMELLIA256-SHA256 ADH-AES256-SHA256 ADH-CAMELLIA256-SHA256
	DHE-RSA-AES128-SHA256 DHE-DSS-AES128-SHA256 ECDHE-ECDSA-CAMELLIA128-SHA256
	ECDHE-RSA-CAMELLIA128-SHA256 DHE-RSA-CAMELLIA128-SHA256 DHE-DSS-CAMELLIA128-SHA256
	ADH-AES128-SHA256 ADH-CAMELLIA128-SHA256 DHE-RSA-AES256-SHA DHE-DSS-AES256-SHA
	DHE-RSA-CAMELLIA256-SHA DHE-DSS-CAMELLIA256-SHA AECDH-AES256-SHA ADH-AES256-SHA
	ADH-CAMELLIA256-SHA DHE-RSA-AES128-SHA DHE-DSS-AES128-SHA DHE-RSA-CAMELLIA128-SHA
	DHE-DSS-CAMELLIA128-SHA AECDH-AES128-SHA ADH-AES128-SHA ADH-CAMELLIA128-SHA
	RSA-PSK-AES256-GCM-SHA384 DHE-PSK-AES256-GCM-SHA384 RSA-PSK-CHACHA20-POLY1305
	DHE-PSK-CHACHA20-POLY1305 ECDHE-PSK-CHACHA20-POLY1305 DHE-PSK-AES256-CCM8 DHE-PSK-AES256-CCM
	RSA-PSK-ARIA256-GCM-SHA384 DHE-PSK-ARIA256-GCM-SHA384 AES256-CCM8 AES256-CCM ARIA256-GCM-SHA384
	PSK-AES256-GCM-SHA384 PSK-CHACHA20-POLY1305 PSK-AES256-CCM8 PSK-AES256-CCM PSK-ARIA256-GCM-SHA384
	RSA-PSK-AES128-GCM-SHA256 DHE-PSK-AES128-GCM-SHA256 DHE-PSK-AES128-CCM8 DHE-PSK-AES128-CCM
	RSA-PSK-ARIA128-GCM-SHA256 DHE-PSK-ARIA128-GCM-SHA256 AES128-CCM8 AES128-CCM ARIA128-GCM-SHA256
	PSK-AES128-GCM-SHA256 PSK-AES128-CCM8 PSK-AES128-CCM PSK-ARIA128-GCM-SHA256 AES256-SHA256
	CAMELLIA256-SHA256 CAMELLIA128-SHA256 ECDHE-PSK-AES256-CBC-SHA384 ECDHE-PSK-AES256-CBC-SHA
	SRP-DSS-AES-256-CBC-SHA SRP-RSA-AES-256-CBC-SHA SRP-AES-256-CBC-SHA RSA-PSK-AES256-CBC-SHA384
	DHE-PSK-AES256-CBC-SHA384 RSA-PSK-AES256-CBC-SHA DHE-PSK-AES256-CBC-SHA
	ECDHE-PSK-CAMELLIA256-SHA384 RSA-PSK-CAMELLIA256-SHA384 DHE-PSK-CAMELLIA256-SHA384
	CAMELLIA256-SHA PSK-AES256-CBC-SHA384 PSK-AES256-CBC-SHA PSK-CAMELLIA256-SHA384
	ECDHE-PSK-AES128-CBC-SHA256 ECDHE-PSK-AES128-CBC-SHA SRP-DSS-AES-128-CBC-SHA
	SRP-RSA-AES-128-CBC-SHA SRP-AES-128-CBC-SHA RSA-PSK-AES128-CBC-SHA256 DHE-PSK-AES128-CBC-SHA256
	RSA-PSK-AES128-CBC-SHA DHE-PSK-AES128-CBC-SHA ECDHE-PSK-CAMELLIA128-SHA256
	RSA-PSK-CAMELLIA128-SHA256 DHE-PSK-CAMELLIA128-SHA256 CAMELLIA128-SHA PSK-AES128-CBC-SHA256
	PSK-AES128-CBC-SHA PSK-CAMELLIA128-SHA256 ECDHE-ECDSA-NULL-SHA ECDHE-RSA-NULL-SHA AECDH-NULL-SHA
	NULL-SHA256 ECDHE-PSK-NULL-SHA384 ECDHE-PSK-NULL-SHA256 ECDHE-PSK-NULL-SHA RSA-PSK-NULL-SHA384
	RSA-PSK-NULL-SHA256 DHE-PSK-NULL-SHA384 DHE-PSK-NULL-SHA256 RSA-PSK-NULL-SHA DHE-PSK-NULL-SHA
	NULL-SHA NULL-MD5 PSK-NULL-SHA384 PSK-NULL-SHA256 PSK-NULL-SHA`)

// defaultCipherList is OpenSSL 3's DEFAULT.
const defaultCipherList = "ALL:!COMPLEMENTOFDEFAULT:!eNULL"

// ParseCipherList evaluates an OpenSSL cipher string (tls-ciphers) as
// OpenSSL's SSL_CTX_set_cipher_list does, over the suites Go implements,
// and returns their IDs in the resulting preference order. Elements are
// separated by ':', ',', ';' or spaces; "!" removes suites for good, "-"
// removes them, "+" moves them to the end, no prefix appends them;
// aliases combine with '+' ("ECDHE+AESGCM"); "DEFAULT" at the start is
// OpenSSL's default list; "@STRENGTH" sorts by key length. The list fails,
// as OpenSSL's does, when it names nothing OpenSSL knows. A list that
// names only suites Go lacks (DHE, CCM, CAMELLIA, ...) is accepted and
// leaves TLS 1.2 without a suite (TLS 1.3 still works).
func ParseCipherList(s string) ([]uint16, error) {
	rules := s
	if strings.HasPrefix(rules, "DEFAULT") {
		rules = defaultCipherList + rules[len("DEFAULT"):]
	}
	type entry struct {
		s            *suite
		active, dead bool
	}
	list := make([]*entry, len(suites))
	for i := range suites {
		list[i] = &entry{s: &suites[i]}
	}
	known := false
	moveToEnd := func(match func(e *entry) bool) {
		var moved, kept []*entry
		for _, e := range list {
			if match(e) {
				moved = append(moved, e)
			} else {
				kept = append(kept, e)
			}
		}
		list = append(kept, moved...)
	}
	for _, el := range strings.FieldsFunc(rules, func(r rune) bool { return r == ':' || r == ',' || r == ';' || r == ' ' }) {
		op := byte(0)
		if el[0] == '!' || el[0] == '-' || el[0] == '+' {
			op, el = el[0], el[1:]
		}
		if el == "" {
			continue
		}
		if el[0] == '@' {
			if el == "@STRENGTH" {
				slices.SortStableFunc(list, func(a, b *entry) int { return b.s.strength - a.s.strength })
			}
			continue
		}
		match, ok := cipherMatcher(el)
		if !ok {
			continue
		}
		known = true
		switch op {
		case 0:
			moveToEnd(func(e *entry) bool {
				if !e.dead && !e.active && match(e.s) {
					e.active = true
					return true
				}
				return false
			})
		case '-':
			for _, e := range list {
				if e.active && match(e.s) {
					e.active = false
				}
			}
		case '!':
			for _, e := range list {
				if match(e.s) {
					e.active, e.dead = false, true
				}
			}
		case '+':
			moveToEnd(func(e *entry) bool { return e.active && match(e.s) })
		}
	}
	var out []uint16
	for _, e := range list {
		if e.active {
			out = append(out, e.s.id)
		}
	}
	if len(out) == 0 && !known {
		return nil, fmt.Errorf("Failed to configure ciphers: %s", s)
	}
	if out == nil {
		out = []uint16{} // explicit and empty: no TLS 1.2 suite
	}
	return out, nil
}

// cipherMatcher parses one element (a suite name, or aliases joined by
// '+') into a predicate; ok is false when OpenSSL would not know it.
func cipherMatcher(el string) (func(*suite) bool, bool) {
	for i := range suites {
		if suites[i].name == el {
			id := suites[i].id
			return func(s *suite) bool { return s.id == id }, true
		}
	}
	if slices.Contains(opensslOnlyNames, el) {
		return func(*suite) bool { return false }, true
	}
	var groups []int
	none := false
	for _, part := range strings.Split(el, "+") {
		if g, ok := aliases[part]; ok {
			groups = append(groups, g...)
			continue
		}
		if slices.Contains(opensslOnlyAliases, part) {
			none = true
			continue
		}
		return nil, false
	}
	return func(s *suite) bool {
		if none {
			return false
		}
		for _, g := range groups {
			if g != -1 && s.attrs&g == 0 {
				return false
			}
		}
		return true
	}, true
}

// TLS 1.3 suites by OpenSSL's names (tls-ciphersuites); those Go lacks
// (the CCM ones) map to 0.
var suites13 = map[string]uint16{
	"TLS_AES_128_GCM_SHA256":       tls.TLS_AES_128_GCM_SHA256,
	"TLS_AES_256_GCM_SHA384":       tls.TLS_AES_256_GCM_SHA384,
	"TLS_CHACHA20_POLY1305_SHA256": tls.TLS_CHACHA20_POLY1305_SHA256,
	"TLS_AES_128_CCM_SHA256":       0,
	"TLS_AES_128_CCM_8_SHA256":     0,
}

// ParseCipherSuites parses tls-ciphersuites (TLS 1.3 suite names separated
// by ':'); unknown names are skipped and none known fails, as in OpenSSL.
func ParseCipherSuites(s string) ([]uint16, error) {
	out := []uint16{}
	known := false
	for _, name := range strings.Split(s, ":") {
		id, ok := suites13[name]
		if !ok {
			continue
		}
		known = true
		if id != 0 && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if !known {
		return nil, fmt.Errorf("Failed to configure ciphersuites: %s", s)
	}
	return out, nil
}

// versions in tls-protocols order.
var protocolNames = []struct {
	name string
	v    uint16
}{{"tlsv1", tls.VersionTLS10}, {"tlsv1.1", tls.VersionTLS11}, {"tlsv1.2", tls.VersionTLS12}, {"tlsv1.3", tls.VersionTLS13}}

// ParseProtocols parses tls-protocols ("TLSv1.2 TLSv1.3", the default when
// empty) into the set of enabled versions.
func ParseProtocols(s string) ([]uint16, error) {
	if s == "" {
		return []uint16{tls.VersionTLS12, tls.VersionTLS13}, nil
	}
	var out []uint16
	for _, tok := range strings.Split(s, " ") {
		found := false
		for _, p := range protocolNames {
			if strings.EqualFold(tok, p.name) {
				found = true
				if !slices.Contains(out, p.v) {
					out = append(out, p.v)
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
		}
	}
	slices.Sort(out)
	return out, nil
}
