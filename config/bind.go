package config

import "strings"

// DefaultBind is redis-server 7.0's bind: every IPv4 address, and every
// IPv6 one where the machine has IPv6 ("-" marks an address whose
// failure to bind is not an error). protected-mode, on by default, keeps
// clients other than local ones out while the default user has no password.
const DefaultBind = "* -::*"

// BindAddr reads one bind entry as Redis does: a leading "-" makes it
// optional, "*" is every IPv4 address and "::*" every IPv6 one (an IPv6
// socket of its own, as Redis's, not one that also takes IPv4). network
// and host are for net.Listen.
func BindAddr(entry string) (network, host string, optional bool) {
	optional = strings.HasPrefix(entry, "-")
	host = strings.TrimPrefix(entry, "-")
	switch host {
	case "*":
		return "tcp4", "0.0.0.0", optional
	case "::*":
		return "tcp6", "::", optional
	}
	return "tcp", host, optional
}
