package persist

import "time"

// HostInfo is what INFO's persistence section shows that the server, not
// the engine, holds.
type HostInfo struct {
	// A replica loading its master's payload: clients wait (loading:1),
	// or are served the old dataset meanwhile (async_loading:1).
	ReplLoading, AsyncLoading bool
	// The running snapshot's copy-on-write now and at its peak, and the
	// last one's peak (rdb_last_cow_size).
	COW, COWPeak, LastCOW int64
	Dirty                 uint64 // rdb_changes_since_last_save
	SyncSaving            bool   // a full sync is writing an image (rdb_bgsave_in_progress)
	LastSave              int64  // unix seconds of the last successful save
	AppendOnly            bool   // the appendonly directive (the aof_* size fields)
}

// WriteInfo writes INFO's persistence section, line by line through f,
// from the engine's figures (Engine.Info), the server's, and ld, the
// state of a dataset loading and of the last RDB load.
func WriteInfo(f func(format string, args ...any), pi Info, h HostInfo, ld *LoadState) {
	loading := ld.On.Load()
	f("loading:%d", b2i(loading || h.ReplLoading))
	f("async_loading:%d", b2i(h.AsyncLoading))
	f("current_cow_peak:%d", h.COWPeak)
	f("current_cow_size:%d", h.COW)
	f("current_cow_size_age:0")
	f("current_fork_perc:%.2f", pi.ForkPerc)
	f("current_save_keys_processed:%d", pi.KeysDone)
	f("current_save_keys_total:%d", pi.KeysAll)
	f("rdb_changes_since_last_save:%d", h.Dirty)
	f("rdb_bgsave_in_progress:%d", b2i(pi.BgsaveRunning || h.SyncSaving))
	f("rdb_last_save_time:%d", h.LastSave)
	f("rdb_last_bgsave_status:%s", okErr(pi.LastBgsaveOK))
	f("rdb_last_bgsave_time_sec:%d", pi.LastBgsaveSec)
	f("rdb_current_bgsave_time_sec:%d", pi.CurBgsaveSec)
	f("rdb_saves:%d", pi.RDBSaves)
	f("rdb_last_cow_size:%d", h.LastCOW)
	f("rdb_last_load_keys_expired:%d", ld.ExpiredKeys.Load())
	f("rdb_last_load_keys_loaded:%d", ld.LoadedKeys.Load())
	f("aof_enabled:%d", b2i(pi.AOFEnabled))
	f("aof_rewrite_in_progress:%d", b2i(pi.RewriteRunning))
	f("aof_rewrite_scheduled:%d", b2i(pi.RewriteScheduled))
	f("aof_last_rewrite_time_sec:%d", pi.LastRewriteSec)
	f("aof_current_rewrite_time_sec:%d", pi.CurRewriteSec)
	f("aof_last_bgrewrite_status:%s", okErr(pi.LastRewriteOK))
	f("aof_rewrites:%d", pi.Rewrites)
	f("aof_rewrites_consecutive_failures:%d", pi.RewriteFailures)
	f("aof_last_write_status:%s", okErr(pi.LastWriteOK))
	f("aof_last_cow_size:0")
	f("module_fork_in_progress:0")
	f("module_fork_last_cow_size:0")
	if h.AppendOnly {
		f("aof_current_size:%d", pi.CurrentSize)
		f("aof_base_size:%d", pi.BaseSize)
		f("aof_pending_rewrite:%d", b2i(pi.RewriteScheduled))
		f("aof_buffer_length:%d", pi.BufferLength)
		f("aof_pending_bio_fsync:%d", pi.PendingBioFsync)
		f("aof_delayed_fsync:%d", pi.DelayedFsync)
	}
	if loading {
		total, loaded := ld.Total.Load(), ld.Loaded.Load()
		perc, remaining := 0.0, int64(1)
		if total > 0 {
			perc = float64(loaded) / float64(total) * 100
			remaining = total - loaded
		}
		elapsed := time.Now().Unix() - ld.Start.Load()
		eta := int64(1)
		if elapsed > 0 {
			eta = elapsed * remaining / (loaded + 1)
		}
		f("loading_start_time:%d", ld.Start.Load())
		f("loading_total_bytes:%d", total)
		f("loading_rdb_used_mem:%d", ld.UsedMem.Load())
		f("loading_loaded_bytes:%d", loaded)
		f("loading_loaded_perc:%.2f", perc)
		f("loading_eta_seconds:%d", eta)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func okErr(ok bool) string {
	if ok {
		return "ok"
	}
	return "err"
}
