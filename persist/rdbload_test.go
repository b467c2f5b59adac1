package persist

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// loadSink is an RDBSink that records what it is told.
type loadSink struct {
	logs, warns []string
	aux         []string
	funcs       []string
	dropped     []string
	keepExpired bool // a replica: expired keys are kept
	lfu         bool
}

func (k *loadSink) Logf(format string, args ...any) {
	k.logs = append(k.logs, fmt.Sprintf(format, args...))
}
func (k *loadSink) Warnf(format string, args ...any) {
	k.warns = append(k.warns, fmt.Sprintf(format, args...))
}
func (k *loadSink) Aux(key, val string) { k.aux = append(k.aux, key+"="+val) }
func (k *loadSink) Function(code []byte, merge bool) error {
	k.funcs = append(k.funcs, fmt.Sprintf("%s merge=%v", code, merge))
	return nil
}
func (k *loadSink) DropExpired(db int, key []byte) bool {
	if k.keepExpired {
		return false
	}
	k.dropped = append(k.dropped, fmt.Sprintf("%d/%s", db, key))
	return true
}
func (k *loadSink) Limits() rdb.Limits {
	return rdb.Limits{ListFill: -2, SetMaxIntset: 512, ZSetMaxEntries: 128, ZSetMaxValue: 64, HashMaxEntries: 512, HashMaxValue: 64}
}
func (k *loadSink) LFU() bool { return k.lfu }

// rdbFile is an RDB file of parts, with its EOF and checksum.
func rdbFile(parts ...[]byte) []byte {
	b := rdb.AppendHeader(nil)
	for _, p := range parts {
		b = append(b, p...)
	}
	b = append(b, rdb.OpEOF)
	return binary.LittleEndian.AppendUint64(b, rdb.CRC64(0, b))
}

func selectDB(id int) []byte { return rdb.AppendSelectDB(nil, id, 0, 0) }

func strKey(key, val string, expire int64) []byte {
	return rdb.Enc{}.Record(nil, []byte(key), store.NewString([]byte(val)), expire, -2)
}

// dump is a keyspace's contents: "db/key=value expire".
func dump(ks *store.Keyspace) []string {
	var out []string
	for i := range ks.NumDBs() {
		for j := range store.NShards {
			ks.DB(i).EachInShard(j, 0, func(key string, e *store.Entry, exp int64) bool {
				v := ""
				if e.Kind() == store.KindString {
					v = string(e.Bytes(nil))
				}
				out = append(out, fmt.Sprintf("%d/%s=%s %d", i, key, v, exp))
				return true
			})
		}
	}
	slices.Sort(out)
	return out
}

func TestLoadRDB(t *testing.T) {
	past, future := int64(1000), int64(1)<<50
	// A set record whose members repeat: a DUMP payload's value, without
	// its type byte and footer (version and CRC-64).
	payload := rdb.EncodeSet(2, slices.Values([][]byte{[]byte("a"), []byte("a")}))
	dupMembers := append(rdb.AppendKey(nil, rdb.TypeSet, []byte("s")), payload[1:len(payload)-10]...)
	cases := []struct {
		name    string
		file    []byte
		sink    loadSink
		merge   bool
		before  []string // keys already there ("db/key")
		want    []string // the keyspace after
		err     string   // the error's start
		loaded  int64
		expired int64
		sinkOut string // what the sink was told
	}{
		{
			name: "keys and databases",
			file: rdbFile(rdb.AppendAux(nil, "redis-ver", "7.0.15"), rdb.AppendAux(nil, "used-mem", "1048576"),
				selectDB(0), strKey("a", "1", 0), strKey("b", "x", future), selectDB(2), strKey("c", "y", 0)),
			want:    []string{"0/a=1 0", fmt.Sprintf("0/b=x %d", future), "2/c=y 0"},
			loaded:  3,
			sinkOut: "aux [redis-ver=7.0.15 used-mem=1048576] funcs [] dropped []",
		},
		{
			name:    "expired key dropped by a master",
			file:    rdbFile(selectDB(1), strKey("old", "v", past), strKey("new", "v", 0)),
			want:    []string{"1/new=v 0"},
			loaded:  1,
			expired: 1,
			sinkOut: "aux [] funcs [] dropped [1/old]",
		},
		{
			name:    "expired key kept by a replica",
			file:    rdbFile(selectDB(0), strKey("old", "v", past)),
			sink:    loadSink{keepExpired: true},
			want:    []string{fmt.Sprintf("0/old=v %d", past)},
			loaded:  1,
			sinkOut: "aux [] funcs [] dropped []",
		},
		{
			name:   "duplicate key",
			file:   rdbFile(selectDB(0), strKey("k", "file", 0)),
			before: []string{"0/k"},
			err:    "RDB has duplicated key 'k' in DB 0",
		},
		{
			name:    "duplicate key merged",
			file:    rdbFile(selectDB(0), strKey("k", "file", 0), rdb.AppendFunction(nil, []byte("#!lua name=lib"))),
			merge:   true,
			before:  []string{"0/k", "0/other"},
			want:    []string{"0/k=file 0", "0/other=before 0"},
			loaded:  1,
			sinkOut: "aux [] funcs [#!lua name=lib merge=true] dropped []",
		},
		{
			name: "too many databases",
			file: rdbFile(selectDB(16), strKey("k", "v", 0)),
			err:  "FATAL: Data file was created with a Redis server configured to handle more than 4 databases. Exiting",
		},
		{
			name: "duplicate members",
			file: rdbFile(selectDB(0), dupMembers),
			err:  "Bad data format of key 's' in DB 0 (duplicate members or fields)",
		},
		{
			name: "checksum",
			file: func() []byte {
				b := rdbFile(selectDB(0), strKey("k", "v", 0))
				b[len(b)-1] ^= 1
				return b
			}(),
			err: "Wrong RDB checksum. Aborting now.\nInternal error in RDB reading offset",
		},
		{
			name: "truncated",
			file: rdbFile(selectDB(0), strKey("k", "v", 0))[:20],
			err:  "Internal error in RDB reading offset",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ks := store.New(4, 1)
			for _, k := range tc.before {
				var db int
				var key string
				fmt.Sscanf(strings.Replace(k, "/", " ", 1), "%d %s", &db, &key)
				ks.DB(db).Add([]byte(key), store.NewString([]byte("before")))
			}
			var st LoadState
			sink := tc.sink
			n, err := LoadRDB(ks, tc.file, &sink, &st, LoadRDBOptions{Verify: true, Merge: tc.merge})
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != len(tc.file) {
				t.Errorf("length %d, want %d", n, len(tc.file))
			}
			if got := dump(ks); !slices.Equal(got, tc.want) {
				t.Errorf("keyspace %q, want %q", got, tc.want)
			}
			if st.LoadedKeys.Load() != tc.loaded || st.ExpiredKeys.Load() != tc.expired {
				t.Errorf("loaded %d expired %d, want %d %d", st.LoadedKeys.Load(), st.ExpiredKeys.Load(), tc.loaded, tc.expired)
			}
			if got := fmt.Sprintf("aux %v funcs %v dropped %v", sink.aux, sink.funcs, sink.dropped); got != tc.sinkOut {
				t.Errorf("sink: %s, want %s", got, tc.sinkOut)
			}
			done := fmt.Sprintf("Done loading RDB, keys loaded: %d, keys expired: %d.", tc.loaded, tc.expired)
			if len(sink.logs) == 0 || sink.logs[len(sink.logs)-1] != done {
				t.Errorf("logs %q, want the last %q", sink.logs, done)
			}
			if ks.Dirty() != 0 {
				t.Errorf("a loaded dataset is not marked saved (%d changes)", ks.Dirty())
			}
		})
	}
}

// TestLoadRDBHints: a key's LFU counter or idle time is kept as the
// maxmemory policy reads it.
func TestLoadRDBHints(t *testing.T) {
	hinted := func(op byte, v uint64) []byte {
		var b []byte
		if op == rdb.OpFreq {
			b = append(b, op, byte(v))
		} else {
			b = rdb.AppendLen(append(b, op), v)
		}
		return append(b, strKey("k", "v", 0)...)
	}
	for _, tc := range []struct {
		name string
		lfu  bool
		rec  []byte
		want func(ks *store.Keyspace) uint32
	}{
		{"freq under LFU", true, hinted(rdb.OpFreq, 42), func(ks *store.Keyspace) uint32 { return ks.LFUValue(42) }},
		{"idle under LRU", false, hinted(rdb.OpIdle, 5), func(ks *store.Keyspace) uint32 { return ks.LRUClock() - 5 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := store.New(1, 1)
			sink := &loadSink{lfu: tc.lfu}
			var st LoadState
			if _, err := LoadRDB(ks, rdbFile(selectDB(0), tc.rec), sink, &st, LoadRDBOptions{Verify: true}); err != nil {
				t.Fatal(err)
			}
			e := ks.DB(0).Peek([]byte("k"))
			if e == nil {
				t.Fatal("key not loaded")
			}
			if want := tc.want(ks); e.LRU() != want {
				t.Errorf("LRU field %d, want %d", e.LRU(), want)
			}
		})
	}
}

// TestLoadRDBImage loads what an image of a keyspace wrote, with the
// yield called as keys go.
func TestLoadRDBImage(t *testing.T) {
	d, _ := testDataset(t)
	d.KS.Lock.Lock()
	for i := range 2000 {
		d.KS.DB(1).Add([]byte(fmt.Sprint("more", i)), store.NewInt(int64(i)))
	}
	b := EncodeRDB(d.Locked(rdb.Enc{}, ImageMeta{}), RDBOptions{Version: "7.0.15", Checksum: true})
	d.KS.Lock.Unlock()
	ks := store.New(2, 1)
	sink := &loadSink{keepExpired: true}
	var st LoadState
	yields := 0
	n, err := LoadRDB(ks, append(b, "trailing AOF"...), sink, &st, LoadRDBOptions{Verify: true, Yield: func() { yields++ }})
	if err != nil || n != len(b) {
		t.Fatalf("LoadRDB: %d of %d bytes, %v", n, len(b), err)
	}
	if got, want := dump(ks), dump(d.KS); !slices.Equal(got, want) {
		t.Errorf("loaded %d keys, %q...; want %d", len(got), got[:3], len(want))
	}
	if yields != 2302/1024 || st.LoadedKeys.Load() != 2302 {
		t.Errorf("yields %d, loaded %d", yields, st.LoadedKeys.Load())
	}
}
