package config

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
)

// oom-score-adj: with it on, the server sets its own /proc/self/
// oom_score_adj from oom-score-adj-values (the master's value, or the
// replica's when replicaof is set), relative to the score it started with
// ("yes"/"relative") or as is ("absolute"); turning it off restores the
// original score, as Redis's setOOMScoreAdj does.

var oomState struct {
	mu       sync.Mutex
	adjusted bool
	base     int
}

const oomPath = "/proc/self/oom_score_adj"

// applyOOMScore sets the process's score for mode (oom-score-adj) and
// values (oom-score-adj-values); replica picks the replica class.
func applyOOMScore(mode, values string, replica bool) error {
	oomState.mu.Lock()
	defer oomState.mu.Unlock()
	var val int
	switch {
	case mode != "no":
		if !oomState.adjusted {
			b, err := os.ReadFile(oomPath)
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return nil // no /proc (not Linux): nothing to adjust
				}
				return err
			}
			oomState.base, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			oomState.adjusted = true
		}
		class := 0
		if replica {
			class = 1
		}
		val = oomValue(mode, values, class, oomState.base)
	case oomState.adjusted:
		oomState.adjusted = false
		val = oomState.base
	default:
		return nil
	}
	return os.WriteFile(oomPath, []byte(strconv.Itoa(val)+"\n"), 0)
}

// oomValue is the score of class (0: master, 1: replica, 2: background
// child) in values, relative to base unless mode is "absolute", within
// Linux's bounds.
func oomValue(mode, values string, class, base int) int {
	val := 0
	if vals := strings.Fields(values); class < len(vals) {
		val, _ = strconv.Atoi(vals[class])
	}
	if mode != "absolute" {
		val += base
	}
	return min(max(val, -1000), 1000)
}

// oomSettings returns oom-score-adj ("no" when unset) and
// oom-score-adj-values.
func (cfg *Config) oomSettings() (mode, values string) {
	cfg.mu.RLock()
	mode, values = cfg.vals["oom-score-adj"], cfg.vals["oom-score-adj-values"]
	cfg.mu.RUnlock()
	if mode == "" {
		mode = "no"
	}
	return mode, values
}

var errOOMSet = errors.New("Failed to set current oom_score_adj. Check server logs.")

// oomApply is the CONFIG SET / config file hook of oom-score-adj (which
// names the mode) and oom-score-adj-values.
func oomApply(cfg *Config, name, v string) error {
	cfg.mu.RLock()
	mode, values, replicaOf := cfg.vals["oom-score-adj"], cfg.vals["oom-score-adj-values"], cfg.vals["replicaof"]
	cfg.mu.RUnlock()
	if name == "oom-score-adj" {
		mode = v
	} else {
		values = v
	}
	if mode == "" {
		mode = "no"
	}
	replica := replicaOf != ""
	if cfg.Hooks.Master != nil {
		replica = cfg.Hooks.Master() != "" // REPLICAOF may have changed the role
	}
	if err := applyOOMScore(mode, values, replica); err != nil {
		return errOOMSet
	}
	return nil
}

// ApplyOOMScore sets the process's score again for the server's role
// (replica: the replica class of oom-score-adj-values), as Redis's
// setOOMScoreAdj does when REPLICAOF changes it. Nothing happens while
// oom-score-adj is off and was never on.
func (cfg *Config) ApplyOOMScore(replica bool) error {
	mode, values := cfg.oomSettings()
	return applyOOMScore(mode, values, replica)
}

// ApplyChildOOMScore gives a background child (pid) the third class of
// oom-score-adj-values, as Redis's child sets CONFIG_OOM_BGCHILD for
// itself. Nothing happens while oom-score-adj is off.
func (cfg *Config) ApplyChildOOMScore(pid int) error {
	mode, values := cfg.oomSettings()
	if mode == "no" {
		return nil
	}
	oomState.mu.Lock()
	base, adjusted := oomState.base, oomState.adjusted
	oomState.mu.Unlock()
	if !adjusted {
		return nil
	}
	val := oomValue(mode, values, 2, base)
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte(strconv.Itoa(val)+"\n"), 0)
}
