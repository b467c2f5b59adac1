package server

import (
	"math"
	"math/bits"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sluicedb/sluice/internal/sysinfo"
	"github.com/sluicedb/sluice/repl"
	"github.com/sluicedb/sluice/store"
	"github.com/sluicedb/sluice/watch"
)

// Memory accounting, as Redis's used_memory counts it: what the server
// allocated for its own structures at start-up, the keyspace (counted by
// the store as its keys and values are stored, changed and removed), the
// clients' buffers (getClientMemoryUsage's parts: query buffer, pending
// output, queued MULTI commands, watched keys, subscriptions, tracking
// prefixes), the replication backlog and the replicas' pending output, and
// the AOF buffer. Garbage the Go runtime has not collected yet, and its
// headroom, are not in it: they show as the difference between
// used_memory and used_memory_rss (mem_fragmentation_ratio), as an
// allocator's overhead does for Redis. So used_memory falls the moment a
// key is deleted or a client's buffer is written out, and maxmemory evicts
// when and what Redis would.

// memState is the server's accounting beyond the keyspace.
type memState struct {
	startup  int64        // used_memory_startup: what New allocated
	normal   atomic.Int64 // mem_clients_normal: normal, pub/sub and master clients
	replicas atomic.Int64 // mem_clients_slaves: replicas' pending output
	// The replication buffer's memory, as the replication cron last read
	// it, split as maxmemory sees it: backlog is the part that counts
	// (up to repl-backlog-size), replExcess the replicas' part that does
	// not. Both come from the same reading, so used_memory and
	// mem_not_counted_for_evict move together.
	backlog    atomic.Int64
	replExcess atomic.Int64
	peak       atomic.Int64 // used_memory_peak
	// evictView is the clients' memory as maxmemory-clients sees it
	// (Redis's stat_clients_type_memory for normal and pub/sub clients):
	// an evictable client's part follows its buffers, the others' parts
	// are brought up to date by the cron only, every 100 ms (Redis's
	// clientsCron), so a no-evict client that fills its buffers and
	// disconnects straight away may never count.
	evictView atomic.Int64

	evictedClients atomic.Int64 // INFO evicted_clients
	evictMu        sync.Mutex   // held by a client eviction pass
	evictQueued    atomic.Bool  // an evictClientsSoon goroutine waits to run its pass
}

// allocatedSoFar is the runtime's count of bytes allocated since the
// process started.
func allocatedSoFar() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return int64(s[0].Value.Uint64())
	}
	return 0
}

// aofBuffer is the AOF buffer's size (mem_aof_buffer): it counts in
// used_memory, and like Redis's aof_buf it is left out of what maxmemory
// compares (mem_not_counted_for_evict).
func (s *Server) aofBuffer() int64 {
	if s.pe == nil {
		return 0
	}
	return s.pe.AOFBufferBytes()
}

// memParts splits used_memory into what maxmemory compares and what it
// leaves out (freeMemoryGetNotCountedMemory): the replicas' own output, the
// replication buffer beyond the backlog, and the AOF buffer, which
// evicting keys cannot shrink (and which evictions would grow, with the
// DELs they feed).
func (s *Server) memParts() (counted, notCounted int64) {
	m := &s.mem
	notCounted = m.replicas.Load() + m.replExcess.Load() + s.aofBuffer()
	counted = m.startup + s.ks.DatasetBytes() + m.normal.Load() + m.backlog.Load()
	s.notePeak(counted + notCounted)
	return counted, notCounted
}

func (s *Server) notePeak(n int64) {
	m := &s.mem
	for {
		p := m.peak.Load()
		if n <= p || m.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// usedMemory is INFO's used_memory.
func (s *Server) usedMemory() int64 {
	c, n := s.memParts()
	return c + n
}

// notCountedForEvict is mem_not_counted_for_evict.
func (s *Server) notCountedForEvict() int64 {
	_, n := s.memParts()
	return n
}

// evictUsed is the figure maxmemory is compared with.
func (s *Server) evictUsed() int64 {
	c, _ := s.memParts()
	return c
}

// storeReplMemory records the replication buffer's memory total.
func (s *Server) storeReplMemory(total int64) {
	c, n := repl.CountedForEvict(total, s.backlogSize())
	storeIfChanged(&s.mem.backlog, c)
	storeIfChanged(&s.mem.replExcess, n)
}

// keysOverhead returns what the databases' tables take for their keys
// (Redis's overhead_ht_main and overhead_ht_expires), per database with
// keys. Exclusive lock or not: the counts may be a moment old.
type dbOverhead struct {
	id, keys, main, expires int64
}

func (s *Server) keysOverhead() (dbs []dbOverhead, total int64) {
	for i := 0; i < s.ks.NumDBs(); i++ {
		db := s.ks.DB(i)
		n := int64(db.Size())
		if n == 0 {
			continue
		}
		d := dbOverhead{id: int64(i), keys: n, main: n * store.KeyOverhead, expires: int64(db.Volatile()) * store.ExpireOverhead}
		dbs = append(dbs, d)
		total += d.main + d.expires
	}
	return dbs, total
}

// memoryOverhead is used_memory_overhead: everything but the values.
func (s *Server) memoryOverhead() int64 {
	m := &s.mem
	_, keys := s.keysOverhead()
	return m.startup + m.normal.Load() + m.replicas.Load() + m.backlog.Load() + m.replExcess.Load() + s.aofBuffer() + keys
}

// --- clients ---

// Client memory classes.
const (
	memNormal  = 1 // mem_clients_normal
	memReplica = 2 // mem_clients_slaves
)

// replyBufSize is the largest reply buffer (PROTO_REPLY_CHUNK_BYTES): a
// client's buffer (replybuf.go) counts in its fixed size, and only the
// replies that overflow it (Redis's reply list) count in omem. Sluice
// keeps at most that much spare output buffer per client.
const replyBufSize = 16 << 10

// clientBase is what a connection costs before any buffer: the Client
// struct, its parser and writer state.
var clientBase = store.AllocSize(int(unsafe.Sizeof(Client{}))) + 512

// ownMemory is the part of getClientMemoryUsage that only the client's
// own goroutine changes: the struct, the query buffer, queued MULTI
// commands, watched keys, subscriptions and tracking prefixes. It runs on
// that goroutine and stores the figure for others to read.
func (c *Client) refreshOwnMemory() {
	qa := c.queryBufAlloc()
	storeIfChanged(&c.qbufCap, qa)
	mm := c.multiMem()
	var tv, argvSums int64
	if tx := c.txShown(); tx != nil {
		tv, argvSums = int64(len(tx.cmds))+1, tx.argvSums
	}
	storeIfChanged(&c.multiMemA, argvSums)
	storeIfChanged(&c.txView, tv)
	n := clientBase + c.replyBufLen() + qa + mm + int64(c.watch.Len())*watchCost
	if c.ps.Total() > 0 {
		n += c.pubsubMem.Load()
	}
	if t := c.trk.Load(); t != nil {
		for _, p := range t.Prefixes() {
			n += store.AllocSize(len(p)) + 48
		}
	}
	storeIfChanged(&c.ownMem, n)
}

// storeIfChanged stores n unless it is already there (a load costs less
// than a store on the path every batch takes).
func storeIfChanged(a *atomic.Int64, n int64) {
	if a.Load() != n {
		a.Store(n)
	}
}

// watchCost is what one watched key takes: its entry in the client's list
// and in the server's registry (the key's name is counted by the registry
// once).
const watchCost = watch.EntrySize + 64

// subCost is what one subscription takes in the client's and the server's
// tables, besides the channel's name.
const subCost = 64

// multiMem is Redis's multiStateMemOverhead: the queued commands'
// arguments and the queue itself.
func (c *Client) multiMem() int64 {
	tx := c.txShown()
	if tx == nil {
		return 0
	}
	return store.AllocSize(cap(tx.buf)) + store.AllocSize(24*cap(tx.args)) + store.AllocSize(24*cap(tx.cmds)) + store.AllocSize(8*cap(tx.names))
}

// txShown is the transaction CLIENT LIST shows for the client: the one it
// queues, or during EXEC the one EXEC runs; nil outside MULTI.
func (c *Client) txShown() *txState {
	if c.tx != nil {
		return c.tx
	}
	return c.execTx
}

// outputBytes is the client's output not yet written to its socket.
func (c *Client) outputBytes() int64 { return c.outLen.Load() + c.asyncLen.Load() }

// outputMemory is CLIENT LIST's omem: the output beyond the reply buffer.
func (c *Client) outputMemory() int64 { return c.countedOutput(c.outputBytes()) }

// memUsage is getClientMemoryUsage: CLIENT LIST's tot-mem.
func (c *Client) memUsage() int64 { return c.ownMem.Load() + c.outputMemory() }

// memClass is the class the client's memory counts in.
func (c *Client) memClass() int32 {
	if c.replicaOut.Load() {
		return memReplica
	}
	return memNormal
}

// updateMem brings the client's share of used memory up to date and
// reports whether it grew. Any goroutine may call it (the owner after a
// batch, a publisher after delivering): the figure it stores is always a
// complete one, so concurrent updates settle on one of them.
func (c *Client) updateMem() bool {
	n := c.memUsage()
	class := c.memClass()
	m := &c.srv.mem
	for {
		old := c.memCounted.Load()
		if old < 0 {
			return false // closed: counts nothing any more
		}
		oldClass := c.memCountedClass.Load()
		if old == n && oldClass == class {
			// CLIENT NO-EVICT off, or the client's first command, may
			// have made it count.
			return c.followEvictView()
		}
		if !c.memCounted.CompareAndSwap(old, n) {
			continue
		}
		if oldClass != class {
			c.memCountedClass.Store(class)
			m.class(oldClass).Add(-old)
			m.class(class).Add(n)
		} else {
			m.class(class).Add(n - old)
		}
		grew := c.followEvictView()
		return n > old || grew
	}
}

// followEvictView brings the client's part of the eviction view up to
// date when maxmemory-clients may evict it: Redis's
// updateClientMemUsageAndBucket, which counts only those clients live,
// and only once their first input has been processed (a new client is in
// no bucket until then, so the check before its first command cannot
// evict it). It reports whether the client's part grew.
func (c *Client) followEvictView() bool {
	if c.srv.cfg.MaxmemClients.Load() == 0 || !c.evictIn.Load() || c.evictMem.Load() == c.evictTarget() || !c.evictable() {
		return false
	}
	return c.syncEvictView()
}

// evictTarget is what the client should count for in the eviction view.
func (c *Client) evictTarget() int64 {
	if c.memCountedClass.Load() != memNormal {
		return 0
	}
	return max(c.memCounted.Load(), 0)
}

// syncEvictView sets the client's part of the eviction view to its
// counted memory (the cron does it for every client) and reports whether
// the part grew.
func (c *Client) syncEvictView() bool {
	for {
		old := c.evictMem.Load()
		if old < 0 {
			return false // closed
		}
		n := c.evictTarget()
		if old == n {
			return false
		}
		if c.evictMem.CompareAndSwap(old, n) {
			c.srv.mem.evictView.Add(n - old)
			return n > old
		}
	}
}

// enterEvictViews lets every client's part of the eviction view follow
// its buffers from now on. The cron (all) brings every client's part up
// to date, as clientsCron's updateClientMemUsageAndBucket, which also
// puts a new client in its bucket; CONFIG SET of the limit brings the
// evictable clients' parts, as applyClientMaxMemoryUsage.
func (s *Server) enterEvictViews(all bool) {
	s.mu.Lock()
	for _, c := range s.clients {
		c.markEvictIn()
		if all {
			c.syncEvictView()
		} else {
			c.followEvictView()
		}
	}
	s.mu.Unlock()
}

func (m *memState) class(k int32) *atomic.Int64 {
	if k == memReplica {
		return &m.replicas
	}
	return &m.normal
}

// releaseMem takes a closed client out of the count for good.
func (c *Client) releaseMem() {
	old := c.memCounted.Swap(-1)
	if old > 0 {
		c.srv.mem.class(c.memCountedClass.Load()).Add(-old)
	}
	if v := c.evictMem.Swap(-1); v > 0 {
		c.srv.mem.evictView.Add(-v)
	}
}

// memChanged is called on the client's own goroutine after something
// changed its buffers: it refreshes the figures and, when the client
// grew, applies maxmemory-clients. It reports whether the client is
// still connected.
func (c *Client) memChanged() bool {
	c.markEvictIn()
	c.refreshOwnMemory()
	if c.updateMem() && c.srv.cfg.MaxmemClients.Load() != 0 {
		c.srv.evictClients()
		return !c.evicted.Load()
	}
	return true
}

// clientEvictCheck is processCommand's evictClients: before a command,
// after the last one consumed output buffer memory. It reports whether
// the client survived (if not, its command does not run).
func (c *Client) clientEvictCheck() bool {
	c.refreshOwnMemory()
	c.updateMem()
	c.srv.evictClients()
	if c.evicted.Load() {
		c.closeAfterReply = true
		return false
	}
	c.markEvictIn()
	return true
}

// markEvictIn lets the client's part of the eviction view follow its
// buffers from now on.
func (c *Client) markEvictIn() {
	if !c.evictIn.Load() {
		c.evictIn.Store(true)
	}
}

// clientsLimit is maxmemory-clients in bytes (0: no limit): an absolute
// figure, or a percentage of maxmemory (none while maxmemory is 0), never
// under 128kb so that clients can still reach the server
// (getClientEvictionLimit).
func (s *Server) clientsLimit() int64 {
	v, mm := s.cfg.MaxmemClients.Load(), uint64(s.cfg.MaxMemory.Load())
	lim := v
	switch {
	case v < 0 && mm > 0:
		f := float64(mm) * float64(-v) / 100
		if f >= math.MaxInt64 {
			return math.MaxInt64
		}
		lim = int64(f)
	case v <= 0:
		return 0
	}
	return max(lim, 128<<10)
}

// evictable reports whether maxmemory-clients may evict c
// (clientEvictionAllowed).
func (c *Client) evictable() bool {
	if c.memClass() != memNormal || c.replMaster || c.srv.monitors.has(c) {
		return false
	}
	c.flagsMu.Lock()
	ne := c.noEvict
	c.flagsMu.Unlock()
	return !ne
}

// memBucket is the power-of-two size class of a client's memory that
// Redis's eviction buckets group clients by (32 KiB and below share one).
func memBucket(n int64) int {
	if n < 32<<10 {
		return 0
	}
	return bits.Len64(uint64(n)) - 15
}

// evictClients disconnects clients, the biggest first, while the clients'
// memory (normal and pub/sub, as Redis counts it) is at or over
// maxmemory-clients (Redis's evictClients). While a pass runs on another
// goroutine it waits for it, and looks again once it is done: that pass may
// have listed the clients before one grew, and a command must not run (nor
// CLIENT LIST show a client) while the clients are over the limit, as in
// Redis, where nothing runs between a client's growth and its eviction.
func (s *Server) evictClients() {
	if !s.overClientsLimit() {
		return
	}
	s.mem.evictMu.Lock()
	s.evictClientsPass()
	s.mem.evictMu.Unlock()
}

// overClientsLimit reports whether the clients' memory is at or over
// maxmemory-clients.
func (s *Server) overClientsLimit() bool {
	lim := s.clientsLimit()
	return lim > 0 && s.mem.evictView.Load() >= lim
}

// evictClientsPass evicts clients, the biggest first, until the clients'
// memory is under maxmemory-clients. evictMu is held.
func (s *Server) evictClientsPass() {
	if !s.overClientsLimit() {
		return
	}
	lim := s.clientsLimit()
	type cand struct {
		c      *Client
		bucket int
		mem    int64
	}
	var cands []cand
	s.mu.Lock()
	for _, c := range s.clients {
		if !c.evicted.Load() && c.evictIn.Load() && c.evictable() {
			n := c.memCounted.Load()
			cands = append(cands, cand{c, memBucket(n), n})
		}
	}
	s.mu.Unlock()
	// Within a bucket, Redis evicts in the order clients entered it;
	// here, the oldest connection first.
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].bucket != cands[j].bucket {
			return cands[i].bucket > cands[j].bucket
		}
		return cands[i].c.ID < cands[j].c.ID
	})
	for _, cd := range cands {
		if s.mem.evictView.Load() < lim {
			return
		}
		s.evictClient(cd.c)
	}
	if s.mem.evictView.Load() >= lim {
		s.Warnf("Over client maxmemory after evicting all evictable clients")
	}
}

// evictClientsSoon runs evictClients on a goroutine of its own, unless
// one is already started and has not begun its pass (that one will see
// what changed).
func (s *Server) evictClientsSoon() {
	if !s.mem.evictQueued.CompareAndSwap(false, true) {
		return
	}
	go func() {
		s.mem.evictMu.Lock()
		s.mem.evictQueued.Store(false)
		s.evictClientsPass()
		s.mem.evictMu.Unlock()
	}()
}

// evictClient disconnects c for maxmemory-clients.
func (s *Server) evictClient(c *Client) {
	if !c.evicted.CompareAndSwap(false, true) {
		return
	}
	viewer := &Client{srv: s}
	s.Logf("Evicting client: %s", viewer.appendClientInfo(nil, c, nil, nil))
	s.mem.evictedClients.Add(1)
	c.releaseMem()
	c.kill()
}

// infoMemory writes INFO's memory section.
func (s *Server) infoMemory(c *Client, f func(format string, args ...any), b *strings.Builder) {
	used := uint64(s.infoUsedMemory(c))
	m := sysinfo.ReadMemory()
	mem := &s.mem
	peak := uint64(max(mem.peak.Load(), int64(used)))
	overhead := uint64(s.memoryOverhead())
	dataset := used - min(used, overhead)
	startup := uint64(mem.startup)
	net := max(1, used-min(used, startup))
	maxmem := uint64(s.cfg.MaxMemory.Load())
	frag := 0.0
	if used > 0 {
		frag = float64(m.RSS) / float64(used)
	}
	b.WriteString("# Memory\r\n")
	f("used_memory:%d", used)
	f("used_memory_human:%s", sysinfo.BytesToHuman(used))
	f("used_memory_rss:%d", m.RSS)
	f("used_memory_rss_human:%s", sysinfo.BytesToHuman(m.RSS))
	f("used_memory_peak:%d", peak)
	f("used_memory_peak_human:%s", sysinfo.BytesToHuman(peak))
	f("used_memory_peak_perc:%.2f%%", sysinfo.Percent(used, peak))
	f("used_memory_overhead:%d", overhead)
	f("used_memory_startup:%d", startup)
	f("used_memory_dataset:%d", dataset)
	f("used_memory_dataset_perc:%.2f%%", sysinfo.Percent(dataset, net))
	f("allocator_allocated:%d", m.Objects)
	f("allocator_active:%d", m.HeapInUse)
	f("allocator_resident:%d", m.Total)
	f("total_system_memory:%d", m.System)
	f("total_system_memory_human:%s", sysinfo.BytesToHuman(m.System))
	f("used_memory_lua:0")
	f("used_memory_vm_eval:0")
	f("used_memory_lua_human:0B")
	f("used_memory_scripts_eval:0")
	f("number_of_cached_scripts:%d", s.cachedScripts())
	f("number_of_functions:0")
	f("number_of_libraries:0")
	f("used_memory_vm_functions:0")
	f("used_memory_vm_total:0")
	f("used_memory_vm_total_human:0B")
	f("used_memory_functions:0")
	f("used_memory_scripts:0")
	f("used_memory_scripts_human:0B")
	f("maxmemory:%d", maxmem)
	f("maxmemory_human:%s", sysinfo.BytesToHuman(maxmem))
	f("maxmemory_policy:%s", s.cfg.Get("maxmemory-policy"))
	f("allocator_frag_ratio:%.2f", sysinfo.Ratio(m.HeapInUse, m.Objects))
	f("allocator_frag_bytes:%d", m.HeapInUse-min(m.HeapInUse, m.Objects))
	f("allocator_rss_ratio:%.2f", sysinfo.Ratio(m.Total, m.HeapInUse))
	f("allocator_rss_bytes:%d", int64(m.Total)-int64(m.HeapInUse))
	f("rss_overhead_ratio:%.2f", sysinfo.Ratio(m.RSS, m.Total))
	f("rss_overhead_bytes:%d", int64(m.RSS)-int64(m.Total))
	f("mem_fragmentation_ratio:%.2f", frag)
	f("mem_fragmentation_bytes:%d", int64(m.RSS)-int64(used))
	f("mem_not_counted_for_evict:%d", s.notCountedForEvict())
	// The backlog and the replicas share one replication buffer: what
	// exceeds repl-backlog-size counts as the replicas' (Redis 7.0's
	// getMemoryOverheadData).
	replTotal, replBacklog, replReplicas := s.replMemory()
	f("mem_replication_backlog:%d", replBacklog)
	f("mem_total_replication_buffers:%d", replTotal)
	f("mem_clients_slaves:%d", replReplicas+mem.replicas.Load())
	f("mem_clients_normal:%d", mem.normal.Load())
	f("mem_cluster_links:%d", s.clusterInfo(true))
	f("mem_aof_buffer:%d", s.aofBuffer())
	f("mem_allocator:go-%s", runtime.Version())
	f("active_defrag_running:0")
	f("lazyfree_pending_objects:0")
	f("lazyfreed_objects:%d", s.lazyfreed.Load())
}

// memoryDoctorCommand is MEMORY DOCTOR: Redis's report
// (getMemoryDoctorReport), on Sluice's figures.
func memoryDoctorCommand(c *Client, _ [][]byte) {
	c.w.Verbatim("txt", c.srv.memoryDoctorReport())
}

func (s *Server) memoryDoctorReport() string {
	m := sysinfo.ReadMemory()
	mem := &s.mem
	used := max(1, s.usedMemory())
	peak := max(mem.peak.Load(), used)
	if used < 5<<20 {
		return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
	}
	over := func(a, b uint64, minBytes uint64) bool {
		return b > 0 && float64(a)/float64(b) > 1.1 && a > b && a-b > minBytes
	}
	var b strings.Builder
	issues := 0
	add := func(text string) {
		if issues == 0 {
			b.WriteString("Sam, I detected a few issues in this Redis instance memory implants:\n\n")
		}
		issues++
		b.WriteString(text)
	}
	if float64(peak)/float64(used) > 1.5 {
		add(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n")
	}
	if float64(m.RSS)/float64(used) > 1.4 && m.RSS > uint64(used) && m.RSS-uint64(used) > 10<<20 {
		add(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"go-" + runtime.Version() + "\".\n\n")
	}
	if over(m.HeapInUse, m.Objects, 10<<20) {
		add(" * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n")
	}
	if over(m.Total, m.HeapInUse, 10<<20) {
		add(" * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n")
	}
	if over(m.RSS, m.Total, 10<<20) {
		add(" * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n")
	}
	var clients, replicas int64
	s.mu.Lock()
	for _, c := range s.clients {
		if c.replicaOut.Load() {
			replicas++
		} else {
			clients++
		}
	}
	s.mu.Unlock()
	if replicas > 0 && mem.replicas.Load() > 10<<20 {
		add(" * Big replica buffers: The replica output buffers in this instance are greater than 10MB for each replica (on average). This likely means that there is some replica instance that is struggling receiving data, either because it is too slow or because of networking issues. As a result, data piles on the master output buffers. Please try to identify what replica is not receiving data correctly and why. You can use the INFO output in order to check the replicas delays and the CLIENT LIST command to check the output buffers of each replica.\n\n")
	}
	if clients > 0 && mem.normal.Load()/clients > 200<<10 {
		add(" * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n")
	}
	if s.cachedScripts() > 1000 {
		add(" * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n")
	}
	if issues == 0 {
		return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
	}
	b.WriteString("I'm here to keep you safe, Sam. I want to help you.\n")
	return b.String()
}

// memoryPurgeCommand is MEMORY PURGE: the Go runtime collects garbage and
// gives the free memory back to the operating system.
func memoryPurgeCommand(c *Client, _ [][]byte) {
	debug.FreeOSMemory()
	c.w.OK()
}
