package server

import (
	"crypto/sha1"
	"encoding/hex"
	"testing"
)

// BenchmarkEvalsha runs EVALSHA of a one-GET script through Client.process
// (parse, dispatch, exclusive lock, Lua call, redis.call through the
// pseudo client, reply conversion) and reports allocations per call.
func BenchmarkEvalsha(b *testing.B) {
	c := newBenchClient(b)
	runCmd(b, c, encodeCmd("SET", "key", "value"), "+OK\r\n")
	body := "return redis.call('get', KEYS[1])"
	sum := sha1.Sum([]byte(body))
	sha := hex.EncodeToString(sum[:])
	runCmd(b, c, encodeCmd("SCRIPT", "LOAD", body), "$40\r\n"+sha+"\r\n")
	cmd := encodeCmd("EVALSHA", sha, "1", "key")
	for i := 0; i < 10; i++ {
		runCmd(b, c, cmd, "$5\r\nvalue\r\n")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.process(cmd)
		c.w.Buf = c.w.Buf[:0]
	}
}
