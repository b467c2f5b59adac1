package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/internal/sdsargs"
)

// Version is the server's version, which Error names; the server
// sets it.
var Version string

// Error is an invalid directive, reported as redis-server does.
type Error struct {
	Line int
	Text string
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("\n*** FATAL CONFIG FILE ERROR (Sluice %s) ***\nReading the configuration file, at line %d\n>>> '%s'\n%s",
		Version, e.Line, e.Text, e.Msg)
}

// deprecatedDirectives are accepted and ignored, as Redis 7.0 does.
var deprecatedDirectives = map[string]bool{
	"list-max-ziplist-entries": true,
	"list-max-ziplist-value":   true,
	"lua-replicate-commands":   true,
}

// LoadConfig reads directives in redis.conf syntax from r.
func (cfg *Config) LoadConfig(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.Trim(sc.Text(), " \t\r\n")
		if text == "" || text[0] == '#' {
			continue
		}
		args, ok := splitConfigArgs(text)
		if !ok {
			return &Error{line, text, "Unbalanced quotes in configuration line"}
		}
		if len(args) == 0 {
			continue
		}
		if err := cfg.applyDirective(args); err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				return err // from an included file
			}
			return &Error{line, text, err.Error()}
		}
	}
	// As Redis's start-up does, watchdog-period is at least two of hz's
	// periods (hz itself is kept within its range as it is read).
	if p := paramByName["watchdog-period"]; cfg.Given(p.name) {
		cfg.mu.Lock()
		cfg.vals[p.name] = p.settle(cfg.vals[p.name], cfg.Hz.Load())
		cfg.mu.Unlock()
	}
	return sc.Err()
}

// LoadConfigFile reads a redis.conf-style file; "-" reads standard input.
func (cfg *Config) LoadConfigFile(path string) error {
	var f *os.File
	if path == "-" {
		f = os.Stdin
	} else {
		var err error
		if f, err = os.Open(path); err != nil {
			return fmt.Errorf("Fatal error, can't open config file '%s': %s", path, strerror(err))
		}
		defer f.Close()
		if cfg.file == "" {
			if abs, err := filepath.Abs(path); err == nil {
				cfg.file = abs
			}
		}
	}
	return cfg.LoadConfig(f)
}

// ApplyArgs applies "--name value ..." command-line options, as
// redis-server accepts them after the config file: each "--name" starts a
// directive and the words after it are its arguments.
func (cfg *Config) ApplyArgs(argv []string) error {
	var sb strings.Builder
	haveArg := true // the last directive has at least one argument
	for i, a := range argv {
		if haveArg && strings.HasPrefix(a, "--") {
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(a[2:])
			sb.WriteByte(' ')
			if words, _ := splitConfigArgs(a); len(words) == 1 {
				haveArg = false
				last := i == len(argv)-1
				if strings.EqualFold(a, "--save") && (last || strings.HasPrefix(argv[i+1], "--")) {
					// "--save" without a value means no snapshots.
					sb.WriteString(`""`)
					haveArg = !last
				}
			}
			continue
		}
		sb.WriteString(sdsargs.Repr(a))
		sb.WriteByte(' ')
		haveArg = true
	}
	return cfg.LoadConfig(strings.NewReader(sb.String()))
}

// splitConfigArgs splits a line into words as Redis's sdssplitargs does
// (see package sdsargs).
func splitConfigArgs(line string) ([]string, bool) { return sdsargs.Split(line) }

func (cfg *Config) applyDirective(args []string) error {
	name := strings.ToLower(args[0])
	vals := args[1:]
	if p := paramByName[name]; p != nil {
		if !p.multiArg && len(vals) != 1 {
			return errors.New("wrong number of arguments")
		}
		if name == "io-threads" {
			if n, err := strconv.Atoi(vals[0]); err == nil {
				cfg.LoopsWanted = n
			}
		}
		v := strings.Join(vals, " ")
		if p.multiArg && len(vals) == 1 && vals[0] != "" {
			words, ok := splitConfigArgs(vals[0])
			if !ok {
				return errors.New("Unbalanced quotes in configuration line")
			}
			v = strings.Join(words, " ")
		}
		if name == "save" && v != "" && cfg.Given("save") {
			// Start-up "save" lines add save points, as in Redis: the
			// first one replaces the default, the next ones append ("save
			// 900 1" then --save "100 100" is "900 1 100 100"), and an
			// empty one clears them.
			if cur := cfg.Get("save"); cur != "" {
				v = cur + " " + v
			}
		}
		if err := cfg.set(p, v, true); err != nil {
			return err
		}
		cfg.markGiven(p.name)
		return nil
	}
	if deprecatedDirectives[name] && len(args) == 2 {
		return nil
	}
	switch {
	case name == "include" && len(vals) == 1:
		return cfg.include(vals[0])
	case name == "event-loops" && len(vals) == 1:
		// Sluice's own: the number of event loops (0: one per CPU).
		n, err := strconv.Atoi(vals[0])
		if err != nil || n < 0 {
			return errors.New("argument couldn't be parsed into an integer")
		}
		cfg.LoopsWanted = n
		return nil
	case name == "rename-command" && len(vals) == 2:
		return cfg.renameCommand(vals[0], vals[1])
	case name == "user" && len(vals) >= 1:
		return cfg.ACL.AddConfigUser(vals)
	case name == "loadmodule" && len(vals) >= 1:
		return errors.New("modules are not supported by Sluice")
	case name == "sentinel":
		return errors.New("sentinel directive while not in sentinel mode")
	}
	return errors.New("Bad directive or wrong number of arguments")
}

// include loads another file, or every file matching a pattern (no match
// is not an error for a pattern).
func (cfg *Config) include(path string) error {
	if !strings.ContainsAny(path, "*?[") {
		return cfg.loadIncluded(path)
	}
	files, _ := filepath.Glob(path)
	for _, f := range files {
		if err := cfg.loadIncluded(f); err != nil {
			return err
		}
	}
	return nil
}

func (cfg *Config) loadIncluded(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("Fatal error, can't open config file '%s': %s", path, strerror(err))
	}
	defer f.Close()
	return cfg.LoadConfig(f)
}
