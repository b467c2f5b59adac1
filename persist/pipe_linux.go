package persist

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe asks for a 1 MB pipe buffer (the default is 64 KB), so a relay
// passes an image in fewer, larger pieces; where the limit refuses it the
// default stays.
func growPipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20) })
}
