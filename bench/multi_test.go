package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

func TestMultiSideBySide(t *testing.T) {
	_, sluice := redistest.StartSluice(t)
	redis := redistest.StartRedis(t)
	cfg := DefaultMultiConfig()
	cfg.Pair.Target, cfg.Pair.Reference = sluice, redis
	cfg.Clients = 4
	cfg.Duration = 150 * time.Millisecond
	cfg.Rounds = 1
	rep, err := RunMulti(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Results[0].Case != caseMulti || rep.Results[1].Case != casePlain {
		t.Fatalf("results %+v", rep.Results)
	}
	for _, r := range rep.Results {
		for _, run := range append(r.Target, r.Reference...) {
			if run.PerSec <= 0 || !(run.P99Ms >= run.P50Ms) {
				t.Errorf("%s: %+v", r.Case, run)
			}
		}
	}
	var md bytes.Buffer
	rep.WriteMarkdown(&md, "")
	if !strings.Contains(md.String(), "| MULTI/SET/EXEC | ") {
		t.Errorf("report:\n%s", md.String())
	}
}

// Inside a transaction EXEC's reply is checked: a server in a state where
// MULTI fails (already in MULTI) makes the run fail.
func TestMultiOnceChecksReplies(t *testing.T) {
	_, sluice := redistest.StartSluice(t, "maxclients", "1")
	c := redistest.Dial(t, sluice)
	if _, err := c.Do("PING"); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultMultiConfig()
	cfg.Clients = 1
	cfg.Duration = 50 * time.Millisecond
	if _, err := MultiOnce(context.Background(), sluice, true, cfg); err == nil {
		t.Fatal("MultiOnce succeeded against a server refusing the connection (max clients)")
	}
}
