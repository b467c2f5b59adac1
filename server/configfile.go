package server

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluicedb/sluice/resp"
)

// ConfigError is an invalid directive, reported as redis-server does.
type ConfigError struct {
	Line int
	Text string
	Msg  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("\n*** FATAL CONFIG FILE ERROR (Sluice %s) ***\nReading the configuration file, at line %d\n>>> '%s'\n%s",
		SluiceVersion, e.Line, e.Text, e.Msg)
}

// LoadConfig reads directives in redis.conf syntax from r.
func (cfg *Config) LoadConfig(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		var p resp.Parser
		_, args, err := p.Next([]byte(text + "\n"))
		if err != nil {
			return &ConfigError{line, text, "Unbalanced quotes in configuration line"}
		}
		if len(args) == 0 {
			continue
		}
		if err := cfg.applyDirective(args); err != nil {
			return &ConfigError{line, text, err.Error()}
		}
	}
	return sc.Err()
}

// LoadConfigFile reads a redis.conf-style file.
func (cfg *Config) LoadConfigFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("Fatal error, can't open config file '%s': %v", path, err)
	}
	defer f.Close()
	return cfg.LoadConfig(f)
}

// ApplyArgs applies "--name value ..." command-line options, as
// redis-server accepts them after the config file.
func (cfg *Config) ApplyArgs(argv []string) error {
	var sb strings.Builder
	for i, a := range argv {
		if strings.HasPrefix(a, "--") {
			if i > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(a[2:])
			continue
		}
		sb.WriteByte(' ')
		sb.WriteString(quoteArg(a))
	}
	return cfg.LoadConfig(strings.NewReader(sb.String()))
}

func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return fmt.Sprintf("%q", s)
}

func (cfg *Config) applyDirective(args [][]byte) error {
	name := strings.ToLower(string(args[0]))
	vals := make([]string, len(args)-1)
	for i, a := range args[1:] {
		vals[i] = string(a)
	}
	switch name {
	case "include":
		if len(vals) != 1 {
			return fmt.Errorf("Bad directive or wrong number of arguments")
		}
		return cfg.LoadConfigFile(vals[0])
	case "io-threads", "event-loops":
		if len(vals) == 1 {
			var n int
			fmt.Sscanf(vals[0], "%d", &n)
			cfg.loopsWanted = n
		}
	}
	p := paramByName[name]
	if name == "event-loops" {
		return nil
	}
	if p == nil {
		return fmt.Errorf("Bad directive or wrong number of arguments")
	}
	v := strings.Join(vals, " ")
	if len(vals) != 1 && p.kind != pString && p.kind != pSpecial {
		return fmt.Errorf("Bad directive or wrong number of arguments")
	}
	return cfg.set(p, v, true)
}
