package server

import (
	"strconv"
	"strings"
)

// SetProcTitle has the server keep its process's title (Redis's
// redisSetProcTitle), for sluice-server's main: an embedded server leaves
// its host's alone. set sets the title; argv0 is what {title} expands to.
// The title is set as the server starts when set-proc-title is yes, and
// each time proc-title-template changes.
func (s *Server) SetProcTitle(argv0 string, set func(string) error) {
	s.procTitle = func() {
		if err := set(s.expandProcTitle(argv0)); err != nil {
			s.Logf("Unable to set the process title: %v", err)
		}
	}
	prev := s.cfg.OnChange
	s.cfg.OnChange = func(name, value string) {
		if prev != nil {
			prev(name, value)
		}
		if name == "proc-title-template" {
			s.procTitle()
		}
	}
}

// expandProcTitle expands proc-title-template (expandProcTitleTemplate,
// sdstemplate): "{{" is a brace, the variables Redis's, and the result is
// trimmed of spaces.
func (s *Server) expandProcTitle(title string) string {
	cfg := s.cfg
	vars := func(name string) string {
		switch name {
		case "title":
			return title
		case "listen-addr":
			port, tlsPort := cfg.Get("port"), cfg.Get("tls-port")
			if port == "0" && tlsPort == "0" || port == "" && tlsPort == "" {
				return "unixsocket:" + cfg.Get("unixsocket")
			}
			if port == "0" {
				port = tlsPort
			}
			addr := "*"
			if f := strings.Fields(cfg.Get("bind")); len(f) > 0 {
				addr = f[0]
			}
			return addr + ":" + port
		case "server-mode":
			if cfg.Get("cluster-enabled") == "yes" {
				return "[cluster]"
			}
			return ""
		case "config-file":
			if f := cfg.File(); f != "" {
				return f
			}
			return "-"
		case "port":
			return strconv.Itoa(atoiOr(cfg.Get("port")))
		case "tls-port":
			return strconv.Itoa(atoiOr(cfg.Get("tls-port")))
		case "unixsocket":
			return cfg.Get("unixsocket")
		}
		return ""
	}
	t := cfg.Get("proc-title-template")
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		switch {
		case t[i] == '{' && i+1 < len(t) && t[i+1] == '{':
			b.WriteByte('{')
			i++
		case t[i] == '{':
			j := strings.IndexByte(t[i:], '}')
			if j < 0 {
				b.WriteString(t[i:])
				i = len(t)
				break
			}
			b.WriteString(vars(t[i+1 : i+j]))
			i += j
		default:
			b.WriteByte(t[i])
		}
	}
	return strings.Trim(b.String(), " ")
}

func atoiOr(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
