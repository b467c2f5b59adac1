package server

import "testing"

// BenchmarkGetSetRestricted is BenchmarkGetSet for a user whose key
// patterns the ACL check must look at (+@all ~bench:*): the dispatch path
// finds the command's keys and matches them against the patterns.
func BenchmarkGetSetRestricted(b *testing.B) {
	c := newBenchClient(b)
	runCmd(b, c, encodeCmd("ACL", "SETUSER", "app", "on", ">pw", "+@all", "~bench:*"), "+OK\r\n")
	runCmd(b, c, encodeCmd("AUTH", "app", "pw"), "+OK\r\n")
	set := encodeCmd("SET", "bench:key", "hello world value")
	get := encodeCmd("GET", "bench:key")
	runCmd(b, c, set, "+OK\r\n")
	runCmd(b, c, get, "$17\r\nhello world value\r\n")
	runCmd(b, c, encodeCmd("GET", "other"), "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n")
	for _, bc := range []struct {
		name string
		buf  []byte
	}{{"SET", set}, {"GET", get}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.process(bc.buf)
				c.w.Buf = c.w.Buf[:0]
			}
		})
	}
}
