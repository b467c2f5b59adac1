//go:build linux

package proctitle

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	mu     sync.Mutex
	once   sync.Once
	mem    *os.File
	start  int64 // arg_start
	argEnd int64 // arg_end: its last byte is the arguments' final NUL
	end    int64 // env_end, or arg_end when the environment does not follow
	errSet error
)

// locate reads where the kernel keeps the arguments and the environment
// (/proc/self/stat's arg_start, arg_end, env_start, env_end).
func locate() {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		errSet = err
		return
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 49 {
		errSet = errors.New("proctitle: /proc/self/stat has no argument addresses")
		return
	}
	var v [4]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[45+i], 10, 64); err != nil {
			errSet = err
			return
		}
	}
	start, argEnd, end = v[0], v[1], v[3]
	if v[2] != argEnd || end < argEnd {
		end = argEnd
	}
	if argEnd <= start {
		errSet = errors.New("proctitle: no argument memory")
		return
	}
	mem, errSet = os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
}

// Set makes title the process's command line, cut to the room the
// arguments and the environment had.
func Set(title string) error {
	once.Do(locate)
	if errSet != nil {
		return errSet
	}
	mu.Lock()
	defer mu.Unlock()
	room := int(end - start)
	buf := make([]byte, room)
	n := copy(buf[:room-1], title)
	if last := int(argEnd - start - 1); n < last {
		// The kernel shows the whole argument area unless its final NUL
		// is overwritten, and then the string up to the first NUL: mark
		// it, as setproctitle(3) does, so that the title alone shows.
		buf[last] = '.'
	}
	_, err := mem.WriteAt(buf, start)
	return err
}
