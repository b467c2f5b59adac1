package cluster_test

import (
	"bufio"
	"crypto/tls"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/internal/tlstest"
)

// TestClusterBusTLS: with tls-cluster yes, a Sluice node and a
// redis-server node meet and gossip over a TLS bus, and each lists the
// other with its TLS port.
func TestClusterBusTLS(t *testing.T) {
	certs := tlstest.New(t)
	rbus, sbus := freePort(t), freePort(t)
	raddr := redistest.StartRedisTLS(t, certs, "cluster-enabled", "yes", "tls-cluster", "yes", "cluster-port", strconv.Itoa(rbus),
		"cluster-node-timeout", "2000")
	_, saddr := redistest.StartSluiceTLS(t, certs, "cluster-enabled", "yes", "tls-cluster", "yes", "cluster-port", strconv.Itoa(sbus),
		"cluster-config-file", filepath.Join(t.TempDir(), "nodes.conf"), "cluster-node-timeout", "2000")
	dial := func(addr string) *redistest.Conn {
		c, err := tls.Dial("tcp", addr, certs.ClientConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return &redistest.Conn{Conn: c, R: bufio.NewReader(c)}
	}
	rc, sc := dial(raddr), dial(saddr)
	rport := raddr[strings.LastIndexByte(raddr, ':')+1:]
	sport := saddr[strings.LastIndexByte(saddr, ':')+1:]
	if r, _ := sc.Do("CLUSTER", "MEET", "127.0.0.1", rport, strconv.Itoa(rbus)); r != "+OK\r\n" {
		t.Fatalf("MEET: %q", r)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		rn, _ := rc.Do("CLUSTER", "NODES")
		sn, _ := sc.Do("CLUSTER", "NODES")
		if strings.Contains(rn, "127.0.0.1:"+sport+"@"+strconv.Itoa(sbus)+" master - ") &&
			strings.Contains(sn, "127.0.0.1:"+rport+"@"+strconv.Itoa(rbus)+" master - ") &&
			!strings.Contains(rn+sn, "handshake") && strings.Count(rn, " connected") == 2 && strings.Count(sn, " connected") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no TLS cluster:\nredis-server:\n%s\nsluice:\n%s", rn, sn)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
