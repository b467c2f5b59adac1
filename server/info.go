package server

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/sysinfo"
	"github.com/sluicedb/sluice/store"
)

// defaultInfoSections are the sections INFO shows without arguments.
var defaultInfoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "module_list", "errorstats", "cluster", "keyspace"}

func infoCommand(c *Client, args [][]byte) {
	sections := map[string]bool{}
	all, everything := false, false
	if len(args) == 1 {
		for _, s := range defaultInfoSections {
			sections[s] = true
		}
	}
	for _, a := range args[1:] {
		s := strings.ToLower(string(a))
		switch s {
		case "default":
			for _, d := range defaultInfoSections {
				sections[d] = true
			}
		case "all":
			all = true
		case "everything":
			all, everything = true, true
		default:
			sections[s] = true
		}
	}
	_ = everything
	c.w.Verbatim("txt", c.srv.infoString(c, sections, all))
}

// Info returns the INFO text for the given sections (none: the default
// ones), for embedding programs and tests.
func (s *Server) Info(sections ...string) string {
	set := map[string]bool{}
	all := false
	if len(sections) == 0 {
		sections = defaultInfoSections
	}
	for _, x := range sections {
		if x = strings.ToLower(x); x == "all" || x == "everything" {
			all = true
		}
		set[x] = true
	}
	return s.infoString(nil, set, all)
}

// infoString builds the INFO text: "# Section\r\nfield:value\r\n...",
// sections separated by an empty line, as Redis 7.0 writes it.
func (s *Server) infoString(c *Client, sec map[string]bool, all bool) string {
	var b strings.Builder
	b.Grow(8 << 10)
	n := 0
	want := func(name string) bool {
		if !all && !sec[name] {
			return false
		}
		if n > 0 {
			b.WriteString("\r\n")
		}
		n++
		return true
	}
	f := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteString("\r\n")
	}
	now := time.Now()
	uptime := int64(now.Sub(s.started) / time.Second)
	totals := s.statTotals()

	if want("server") {
		mode := "standalone"
		if s.cfg.Get("cluster-enabled") == "yes" {
			mode = "cluster"
		}
		port := s.cfg.Get("port")
		for _, a := range s.Addrs() {
			if ta, ok := a.(interface{ String() string }); ok && a.Network() == "tcp" {
				if i := strings.LastIndexByte(ta.String(), ':'); i >= 0 {
					port = ta.String()[i+1:]
					break
				}
			}
		}
		exe, _ := os.Executable()
		hz := s.cfg.Hz.Load()
		b.WriteString("# Server\r\n")
		f("redis_version:%s", Version)
		f("redis_git_sha1:00000000")
		f("redis_git_dirty:0")
		f("redis_build_id:0")
		f("redis_mode:%s", mode)
		f("os:%s", sysinfo.OS())
		f("arch_bits:%d", strconv.IntSize)
		f("monotonic_clock:POSIX clock_gettime")
		f("multiplexing_api:epoll")
		f("atomicvar_api:c11-builtin")
		f("gcc_version:0.0.0")
		f("process_id:%d", os.Getpid())
		f("process_supervised:no")
		f("run_id:%s", s.runID)
		f("tcp_port:%s", port)
		f("server_time_usec:%d", now.UnixMicro())
		f("uptime_in_seconds:%d", uptime)
		f("uptime_in_days:%d", uptime/(3600*24))
		f("hz:%d", hz)
		f("configured_hz:%s", s.cfg.Get("hz"))
		f("lru_clock:%d", s.ks.LRUClock()&(1<<24-1))
		f("executable:%s", exe)
		f("config_file:%s", s.cfg.File())
		f("io_threads_active:0")
		if ms, ok := s.shutdownInMillis(); ok {
			f("shutdown_in_milliseconds:%d", ms)
		}
		f("sluice_version:%s", SluiceVersion)
	}
	if want("clients") {
		blocked := 0
		s.mu.Lock()
		nclients := len(s.clients)
		for _, cl := range s.clients {
			if cl.blockedCounted.Load() {
				blocked++
			}
		}
		s.mu.Unlock()
		// Replicas are not counted, as in Redis.
		nclients -= s.repl.m.NumReplicas()
		b.WriteString("# Clients\r\n")
		f("connected_clients:%d", nclients)
		f("cluster_connections:%d", s.clusterInfo(false))
		f("maxclients:%d", s.cfg.MaxClients.Load())
		f("client_recent_max_input_buffer:0")
		f("client_recent_max_output_buffer:0")
		f("blocked_clients:%d", blocked)
		f("tracking_clients:%d", s.tracking.Clients())
		f("clients_in_timeout_table:0")
	}
	if want("memory") {
		s.infoMemory(c, f, &b)
	}
	if want("persistence") {
		b.WriteString("# Persistence\r\n")
		s.infoPersistence(f)
	}
	if want("stats") {
		var pubsubCh, pubsubPat, pubsubShard int
		if s.pubsubCounts != nil {
			pubsubCh, pubsubPat, pubsubShard = s.pubsubCounts()
		}
		b.WriteString("# Stats\r\n")
		f("total_connections_received:%d", totals.connections)
		f("total_commands_processed:%d", totals.commands)
		f("instantaneous_ops_per_sec:%d", s.opsPerSec(totals.commands))
		f("total_net_input_bytes:%d", totals.netIn)
		f("total_net_output_bytes:%d", totals.netOut)
		f("total_net_repl_input_bytes:0")
		f("total_net_repl_output_bytes:0")
		f("instantaneous_input_kbps:0.00")
		f("instantaneous_output_kbps:0.00")
		f("instantaneous_input_repl_kbps:0.00")
		f("instantaneous_output_repl_kbps:0.00")
		f("rejected_connections:%d", totals.rejectedConns)
		f("sync_full:%d", s.repl.m.SyncFull.Load())
		f("sync_partial_ok:%d", s.repl.m.SyncPartialOK.Load())
		f("sync_partial_err:%d", s.repl.m.SyncPartialErr.Load())
		f("expired_keys:%d", s.ks.ExpiredKeys.Load())
		f("expired_stale_perc:0.00")
		f("expired_time_cap_reached_count:0")
		f("expire_cycle_cpu_milliseconds:0")
		f("evicted_keys:%d", s.ev.evicted.Load())
		f("evicted_clients:%d", s.mem.evictedClients.Load())
		f("total_eviction_exceeded_time:0")
		f("current_eviction_exceeded_time:0")
		f("keyspace_hits:0")
		f("keyspace_misses:0")
		f("pubsub_channels:%d", pubsubCh)
		f("pubsub_patterns:%d", pubsubPat)
		f("pubsubshard_channels:%d", pubsubShard)
		// No fork: the time BGSAVE held the keyspace to snapshot it.
		pi := s.pe.Info()
		f("latest_fork_usec:%d", pi.ForkUsec)
		f("total_forks:%d", pi.Forks)
		f("migrate_cached_sockets:%d", s.migrate.Size())
		f("slave_expires_tracked_keys:0")
		f("active_defrag_hits:0")
		f("active_defrag_misses:0")
		f("active_defrag_key_hits:0")
		f("active_defrag_key_misses:0")
		f("total_active_defrag_time:0")
		f("current_active_defrag_time:0")
		tkeys, titems, tprefixes := s.tracking.Stats()
		f("tracking_total_keys:%d", tkeys)
		f("tracking_total_items:%d", titems)
		f("tracking_total_prefixes:%d", tprefixes)
		f("unexpected_error_replies:0")
		f("total_error_replies:%d", s.totalErrorReplies(totals))
		f("dump_payload_sanitizations:0")
		f("total_reads_processed:0")
		f("total_writes_processed:0")
		f("io_threaded_reads_processed:0")
		f("io_threaded_writes_processed:0")
		f("reply_buffer_shrinks:%d", s.replyShrinks.Load())
		f("reply_buffer_expands:%d", s.replyExpands.Load())
	}
	if want("replication") {
		b.WriteString("# Replication\r\n")
		s.infoReplication(f)
	}
	if want("cpu") {
		cpu := sysinfo.CPU()
		b.WriteString("# CPU\r\n")
		f("used_cpu_sys:%s", cpu.Sys)
		f("used_cpu_user:%s", cpu.User)
		f("used_cpu_sys_children:%s", cpu.ChildrenSys)
		f("used_cpu_user_children:%s", cpu.ChildrenUser)
		f("used_cpu_sys_main_thread:%s", cpu.Sys)
		f("used_cpu_user_main_thread:%s", cpu.User)
	}
	if all || sec["module_list"] || sec["modules"] {
		want("module_list")
		b.WriteString("# Modules\r\n")
	}
	if want("commandstats") {
		b.WriteString("# Commandstats\r\n")
		for _, st := range s.commandStats() {
			perCall := 0.0
			if st.calls > 0 {
				perCall = float64(st.usec) / float64(st.calls)
			}
			f("cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
				safeInfo(st.name), st.calls, st.usec, perCall, st.rejected, st.failed)
		}
	}
	if want("errorstats") {
		b.WriteString("# Errorstats\r\n")
		s.errStatsMu.Lock()
		codes := make([]string, 0, len(s.errStats))
		for k := range s.errStats {
			codes = append(codes, k)
		}
		sort.Strings(codes)
		for _, k := range codes {
			f("errorstat_%s:count=%d", safeInfo(k), s.errStats[k])
		}
		s.errStatsMu.Unlock()
	}
	if want("latencystats") {
		b.WriteString("# Latencystats\r\n")
		s.writeLatencyStats(&b)
	}
	if want("cluster") {
		b.WriteString("# Cluster\r\n")
		cl := 0
		if s.cfg.Get("cluster-enabled") == "yes" {
			cl = 1
		}
		f("cluster_enabled:%d", cl)
	}
	if want("keyspace") {
		b.WriteString("# Keyspace\r\n")
		for i, kv := range s.keyspaceSizes(c) {
			if kv[0] > 0 || kv[1] > 0 {
				f("db%d:keys=%d,expires=%d,avg_ttl=%d", i, kv[0], kv[1], kv[2])
			}
		}
	}
	return b.String()
}

// safeInfo replaces the characters INFO cannot carry in a field name.
func safeInfo(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '#', ':', '\n', '\r':
			return '_'
		}
		return r
	}, s)
}

type statTotals struct {
	commands, connections, rejectedConns, errorReplies, netIn, netOut int64
}

func (s *Server) statTotals() statTotals {
	var t statTotals
	for i := range s.stats {
		st := &s.stats[i]
		t.commands += st.commands.Load()
		t.connections += st.connections.Load()
		t.rejectedConns += st.rejectedConns.Load()
		t.errorReplies += st.errorReplies.Load()
		t.netIn += st.netIn.Load()
		t.netOut += st.netOut.Load()
	}
	return t
}

// totalErrorReplies counts error replies: every error written when the
// error hook tracks them, else the failed and rejected commands.
func (s *Server) totalErrorReplies(t statTotals) int64 {
	s.errStatsMu.Lock()
	defer s.errStatsMu.Unlock()
	if s.errStats == nil {
		return t.errorReplies
	}
	var n int64
	for _, v := range s.errStats {
		n += v
	}
	return n
}

// countError records an error reply by its code (the first word) for INFO
// errorstats.
func (s *Server) countError(msg string) {
	code := msg
	if i := strings.IndexByte(code, ' '); i >= 0 {
		code = code[:i]
	}
	code = strings.TrimPrefix(code, "-")
	s.errStatsMu.Lock()
	if s.errStats == nil {
		s.errStats = map[string]int64{}
	}
	if _, ok := s.errStats[code]; ok || len(s.errStats) < 128 {
		s.errStats[code]++
	}
	s.errStatsMu.Unlock()
}

// opsPerSec estimates instantaneous_ops_per_sec from the commands counted
// since the previous INFO (at most once a second).
func (s *Server) opsPerSec(total int64) int64 {
	now := time.Now().UnixMilli()
	s.opsMu.Lock()
	defer s.opsMu.Unlock()
	if s.opsAt == 0 {
		s.opsAt, s.opsCount = now, total
		return 0
	}
	if dt := now - s.opsAt; dt >= 1000 {
		s.opsRate = (total - s.opsCount) * 1000 / dt
		s.opsAt, s.opsCount = now, total
	}
	return s.opsRate
}

type cmdStatLine struct {
	name                          string
	calls, usec, rejected, failed int64
}

// commandStats sums the per-slot command statistics, subcommands included.
func (s *Server) commandStats() []cmdStatLine {
	var out []cmdStatLine
	var walk func(cmds []*Command)
	walk = func(cmds []*Command) {
		for _, cmd := range cmds {
			var l cmdStatLine
			l.name = cmd.Name
			for i := range s.stats {
				if cmd.id >= len(s.stats[i].cmds) {
					continue
				}
				st := &s.stats[i].cmds[cmd.id]
				l.calls += st.calls.Load()
				l.usec += st.usec.Load()
				l.rejected += st.rejected.Load()
				l.failed += st.failed.Load()
			}
			if l.calls > 0 || l.rejected > 0 || l.failed > 0 {
				out = append(out, l)
			}
			if len(cmd.Subs) > 0 {
				walk(sortedSubs(cmd))
			}
		}
	}
	walk(sortedCommands())
	return out
}

// updateAvgTTL refreshes each database's avg_ttl estimate as Redis's
// active expire cycle does (run from cron, hz 10): the mean remaining TTL
// of up to 20 sampled keys with an expiry, folded into a running average
// (avg/50*49 + sample/50, the first sample taken as is); 0 when the
// database has no keys with an expiry.
func (s *Server) updateAvgTTL() {
	if !s.ks.Lock.TryRLock(s.goSlot) {
		return // a script or transaction holds the keyspace: next time
	}
	defer s.ks.Lock.RUnlock(s.goSlot)
	now := s.ks.Now()
	for i := 0; i < s.ks.NumDBs() && i < len(s.avgTTL); i++ {
		var sum, cnt int64
		seen := s.ks.DB(i).Sample(true, 20, func(_ string, _ *store.Entry, exp int64) {
			if exp > now {
				sum += exp - now
				cnt++
			}
		})
		a := &s.avgTTL[i]
		if seen == 0 {
			a.Store(0)
			continue
		}
		if cnt == 0 {
			continue
		}
		sample := sum / cnt
		avg := a.Load()
		if avg == 0 {
			avg = sample
		}
		a.Store(avg/50*49 + sample/50)
	}
}

func (s *Server) avgTTLOf(db int) int {
	if db < len(s.avgTTL) {
		return int(s.avgTTL[db].Load())
	}
	return 0
}

// keyspaceSizes returns keys, volatile keys and avg_ttl per database, locking each
// database's shards in turn (or nothing when c already holds the keyspace
// exclusively).
func (s *Server) keyspaceSizes(c *Client) [][3]int {
	out := make([][3]int, s.ks.NumDBs())
	exclusive := c != nil && c.inExec
	slot := s.goSlot
	if c != nil {
		slot = c.slot
	}
	if !exclusive {
		s.ks.Lock.RLock(slot)
		defer s.ks.Lock.RUnlock(slot)
	}
	for i := range out {
		db := s.ks.DB(i)
		if !exclusive {
			for sh := 0; sh < store.NShards; sh++ {
				db.LockShard(sh)
			}
		}
		out[i] = [3]int{db.Size(), db.Volatile(), 0}
		if !exclusive {
			for sh := 0; sh < store.NShards; sh++ {
				db.UnlockShard(sh)
			}
		}
		out[i][2] = s.avgTTLOf(i)
	}
	return out
}
