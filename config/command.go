package config

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/store"
)

// What CONFIG GET and CONFIG SET need of the table: the matching of
// names and patterns, and a set of values applied all together or not at
// all. The server writes the replies.

// Pair is one CONFIG GET result: a directive's name as matched and its
// value.
type Pair struct{ Name, Value string }

// Matching returns what CONFIG GET reports for the given names or
// patterns: exact names as given (case-insensitively), patterns against
// every name and alias except hidden ones, each name once.
func (cfg *Config) Matching(patterns []string) []Pair {
	var out []Pair
	seen := map[string]bool{}
	var names []string
	for _, pat := range patterns {
		if !strings.ContainsAny(pat, "*?[") {
			lp := strings.ToLower(pat)
			if seen[lp] {
				continue
			}
			if p := paramByName[lp]; p != nil {
				seen[lp] = true
				out = append(out, Pair{pat, cfg.get(p)})
			}
			continue
		}
		if names == nil {
			names = make([]string, 0, len(paramByName))
			for n := range paramByName {
				names = append(names, n)
			}
			sort.Strings(names)
		}
		for _, n := range names {
			p := paramByName[n]
			if p.hidden || seen[n] {
				continue
			}
			if store.Match([]byte(pat), []byte(n), true) {
				seen[n] = true
				out = append(out, Pair{n, cfg.get(p)})
			}
		}
	}
	return out
}

// ErrLoading is CONFIG SET's error for a directive that cannot change
// while the server loads its dataset (the whole reply, LOADING included).
var ErrLoading = errors.New("LOADING Redis is loading the dataset in memory")

// SetPairs is CONFIG SET's engine: args holds directive names and
// values in turn, applied together or not at all, as Redis 7.0 does
// (immutable and, unless protectedOK, protected directives refused,
// duplicates refused, every value validated before any is applied, the
// values applied so far restored when one fails). It returns the
// directives' names, or an error whose text is CONFIG SET's reply
// without "ERR ". When a hook that applies the whole set (the TLS
// configuration, the TLS port) fails, restoring is called with the
// directive it names before the previous values are restored (Redis logs
// it then). OnChange is called for each directive set.
func (cfg *Config) SetPairs(args [][]byte, protectedOK bool, restoring func(name string)) ([]string, error) {
	n := len(args) / 2
	ps := make([]*param, n)
	vals := make([]string, n)
	var unknown, errArg, errText string
	loading := false // a directive refused while loading: that error first, as Redis's
	for i := 0; i < n; i++ {
		name := string(args[2*i])
		p := paramByName[strings.ToLower(name)]
		if p == nil {
			if unknown == "" && errText == "" && !loading {
				unknown = name
			}
			continue
		}
		if unknown != "" || errText != "" || loading {
			continue
		}
		if p.immutable || p.protected && !protectedOK {
			errArg = name
			errText = "can't set immutable config"
			if !p.immutable {
				errText = "can't set protected config"
			}
			continue
		}
		if p.noLoading && cfg.Hooks.Loading != nil && cfg.Hooks.Loading() {
			loading = true
			continue
		}
		for j := 0; j < i; j++ {
			if ps[j] == p && strings.EqualFold(string(args[2*j]), name) {
				errArg, errText = name, "duplicate parameter"
			}
		}
		ps[i] = p
	}
	if loading {
		return nil, ErrLoading
	}
	if unknown != "" {
		return nil, errors.New("Unknown option or number of arguments for CONFIG SET - '" + unknown + "'")
	}
	if errText != "" {
		return nil, setError(errArg, errText)
	}
	// Validate every value before changing anything, so that the command
	// applies all of its pairs or none.
	for i, p := range ps {
		v, err := p.normalize(string(args[1+2*i]))
		if err != nil {
			return nil, setError(p.argName(args[2*i]), err.Error())
		}
		vals[i] = v
	}
	old := make([]string, n)
	for i, p := range ps {
		cfg.mu.RLock()
		old[i] = cfg.vals[p.name]
		cfg.mu.RUnlock()
	}
	hz := cfg.Hz.Load()
	for i, p := range ps {
		if err := cfg.store(p, vals[i]); err != nil {
			for j := i - 1; j >= 0; j-- {
				cfg.store(ps[j], old[j])
			}
			return nil, setError(p.argName(args[2*i]), err.Error())
		}
	}
	// What Redis's apply functions do to the values changed, in the
	// command's order (hz as each runs).
	for i, p := range ps {
		if vals[i] == old[i] {
			continue
		}
		if p.name == "hz" {
			hz, _ = strconv.ParseInt(vals[i], 10, 64)
		}
		if p.settle != nil {
			vals[i] = p.settle(vals[i], hz)
			cfg.mu.Lock()
			cfg.vals[p.name] = vals[i]
			cfg.mu.Unlock()
		}
	}
	if i, err := cfg.runLater(ps); err != nil {
		if restoring != nil {
			restoring(ps[i].name)
		}
		for j := len(ps) - 1; j >= 0; j-- {
			cfg.store(ps[j], old[j])
		}
		return nil, setError(ps[i].name, err.Error())
	}
	names := make([]string, n)
	for i, p := range ps {
		names[i] = p.name
	}
	if cfg.OnChange != nil {
		for i, p := range ps {
			cfg.OnChange(p.name, vals[i])
		}
	}
	return names, nil
}

func setError(arg, text string) error {
	return errors.New("CONFIG SET failed (possibly related to argument '" + arg + "') - " + text)
}

// argName is the directive name Redis shows in CONFIG SET errors: the
// registered name (or alias) the argument matched, in lower case.
func (p *param) argName(arg []byte) string {
	if strings.EqualFold(p.alias, string(arg)) {
		return p.alias
	}
	return p.name
}
