package persist

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestWriteInfo(t *testing.T) {
	render := func(pi Info, h HostInfo, ld *LoadState) string {
		var b strings.Builder
		WriteInfo(func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }, pi, h, ld)
		return b.String()
	}
	pi := Info{BgsaveRunning: true, LastBgsaveOK: true, CurBgsaveSec: 3, LastRewriteOK: true, ForkPerc: 12.345,
		KeysDone: 5, KeysAll: 40, CurrentSize: 100, BaseSize: 60, RewriteScheduled: true}
	h := HostInfo{COW: 10, COWPeak: 20, LastCOW: 30, Dirty: 7, LastSave: 1700000000}
	var ld LoadState
	ld.LoadedKeys.Store(9)
	ld.ExpiredKeys.Store(2)

	cases := []struct {
		name       string
		pi         Info
		h          HostInfo
		loading    bool
		has, hasnt []string
	}{
		{"idle", pi, h, false,
			[]string{"loading:0\nasync_loading:0\ncurrent_cow_peak:20\ncurrent_cow_size:10\ncurrent_cow_size_age:0\ncurrent_fork_perc:12.35\n",
				"rdb_changes_since_last_save:7\nrdb_bgsave_in_progress:1\nrdb_last_save_time:1700000000\nrdb_last_bgsave_status:ok\n",
				"rdb_last_cow_size:30\nrdb_last_load_keys_expired:2\nrdb_last_load_keys_loaded:9\naof_enabled:0\n",
				"aof_last_bgrewrite_status:ok\n", "aof_last_write_status:err\n", "module_fork_last_cow_size:0\n"},
			[]string{"aof_current_size", "loading_start_time"}},
		{"appendonly", pi, HostInfo{AppendOnly: true}, false,
			[]string{"module_fork_last_cow_size:0\naof_current_size:100\naof_base_size:60\naof_pending_rewrite:1\naof_buffer_length:0\n"},
			[]string{"loading_start_time"}},
		{"a full sync saving", Info{}, HostInfo{SyncSaving: true, ReplLoading: true, AsyncLoading: true}, false,
			[]string{"loading:1\nasync_loading:1\n", "rdb_bgsave_in_progress:1\n"}, nil},
		{"loading", pi, h, true,
			[]string{"loading:1\n", "loading_total_bytes:1000\nloading_rdb_used_mem:0\nloading_loaded_bytes:250\nloading_loaded_perc:25.00\nloading_eta_seconds:"},
			nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ld.On.Store(false)
			if tc.loading {
				ld.Begin(1000)
				ld.Loaded.Store(250)
				ld.Start.Store(time.Now().Unix() - 10)
			}
			got := render(tc.pi, tc.h, &ld)
			for _, s := range tc.has {
				if !strings.Contains(got, s) {
					t.Errorf("missing %q in:\n%s", s, got)
				}
			}
			for _, s := range tc.hasnt {
				if strings.Contains(got, s) {
					t.Errorf("%q should not be in:\n%s", s, got)
				}
			}
		})
	}
}
