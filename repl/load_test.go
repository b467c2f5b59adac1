package repl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/store"
)

// loader is a fake Loader: its dataset is a map, what it did a list.
type loader struct {
	logBuf
	cfg     LoadConfig
	m       *Master
	data    map[string]string
	aside   map[*store.Keyspace]map[string]string
	funcs   []string
	did     []string
	aof     bool
	stale   bool // the link was replaced
	loading []int32
}

func newLoader(m *Master, mode string, data map[string]string) *loader {
	return &loader{cfg: LoadConfig{Mode: mode, DBFilename: "dump.rdb", Checksum: true}, m: m, data: data, aside: map[*store.Keyspace]map[string]string{}}
}

func (l *loader) LoadConfig() LoadConfig { return l.cfg }
func (l *loader) Current() bool          { return !l.stale }
func (l *loader) NumDBs() int            { return 16 }
func (l *loader) DatasetEmpty() bool     { return len(l.data) == 0 }
func (l *loader) StopAOF() func() {
	if !l.aof {
		return nil
	}
	l.did = append(l.did, "aof off")
	return func() { l.did = append(l.did, "aof on") }
}
func (l *loader) Detach() { l.did = append(l.did, "detach") }
func (l *loader) Flush()  { l.did = append(l.did, "flush"); l.data = map[string]string{}; l.funcs = nil }
func (l *loader) AddKey(aside *store.Keyspace, rec *rdb.Record) bool {
	l.loading = append(l.loading, l.m.Loading.Load())
	if string(rec.Key) == "bad" {
		return false
	}
	k := fmt.Sprintf("%d:%s", rec.DB, rec.Key)
	if aside != nil {
		l.aside[aside][k] = string(rec.Value.Str)
	} else {
		l.data[k] = string(rec.Value.Str)
	}
	return true
}
func (l *loader) LoadFunction(code []byte) error {
	l.funcs = append(l.funcs, string(code))
	return nil
}
func (l *loader) NewAside() *store.Keyspace {
	ks := store.New(16, 1)
	l.aside[ks] = map[string]string{}
	return ks
}
func (l *loader) SwapAside(ks *store.Keyspace, funcs []string) {
	l.did = append(l.did, "swap")
	l.data, l.funcs = l.aside[ks], funcs
}
func (l *loader) Loaded(id string, offset int64, db int) error {
	l.did = append(l.did, fmt.Sprintf("loaded %s %d db%d", id[:4], offset, db))
	return nil
}

// payload is an RDB with a function library and keys, its stream in
// database 3; corrupt spoils its checksum.
func payload(keys map[string]string, corrupt bool) []byte {
	b := rdb.AppendHeader(nil)
	b = rdb.AppendAux(b, "redis-ver", "7.0.15")
	b = rdb.AppendAuxInt(b, "repl-stream-db", 3)
	b = rdb.AppendFunction(b, []byte("#!lua name=lib"))
	b = rdb.AppendSelectDB(b, 0, uint64(len(keys)), 0)
	for k, v := range keys {
		p := rdb.EncodeString([]byte(v))
		b = rdb.AppendKey(b, p[0], []byte(k))
		b = append(b, p[1:len(p)-10]...)
	}
	b = append(b, rdb.OpEOF)
	crc := rdb.CRC64(0, b)
	if corrupt {
		crc++
	}
	return binary.LittleEndian.AppendUint64(b, crc)
}

func TestLoadFullSync(t *testing.T) {
	id := strings.Repeat("d", IDLen)
	cases := []struct {
		name     string
		mode     string
		before   map[string]string
		sameID   bool
		aof      bool
		keys     map[string]string
		corrupt  bool
		err      bool
		did      string
		data     string
		state    int32
		log      string
		tempFile bool // the payload went through dbfilename
	}{
		{"disk", "disabled", map[string]string{"0:old": "x"}, false, false, map[string]string{"a": "1"}, false, false,
			"detach flush loaded dddd 100 db3", "0:a=1", LoadingSync, "receiving 80 bytes from master to disk", true},
		{"disk, with the AOF", "disabled", nil, false, true, map[string]string{"a": "1"}, false, false,
			"aof off detach flush loaded dddd 100 db3 aof on", "0:a=1", LoadingSync, "to disk", true},
		{"socket into an empty dataset", "on-empty-db", nil, false, false, map[string]string{"a": "1", "b": "2"}, false, false,
			"detach flush loaded dddd 100 db3", "0:a=1 0:b=2", LoadingSync, "to parser", false},
		{"on-empty-db with data goes to disk", "on-empty-db", map[string]string{"0:old": "x"}, false, false, map[string]string{"a": "1"}, false, false,
			"detach flush loaded dddd 100 db3", "0:a=1", LoadingSync, "to disk", true},
		{"swapdb, another history", "swapdb", map[string]string{"0:old": "x"}, false, false, map[string]string{"a": "1"}, false, false,
			"detach swap loaded dddd 100 db3", "0:a=1", LoadingSync, "Swapping active DB with loaded DB", false},
		{"swapdb, the same history: async", "swapdb", map[string]string{"0:old": "x"}, true, false, map[string]string{"a": "1"}, false, false,
			"detach swap loaded dddd 100 db3", "0:a=1", LoadingAsync, "Discarding old DB in background", false},
		{"swapdb, a corrupt payload keeps the old dataset", "swapdb", map[string]string{"0:old": "x"}, false, false, map[string]string{"a": "1"}, true, true,
			"", "0:old=x", LoadingSync, "Discarding temporary DB in background", false},
		{"socket, a bad key empties the dataset", "on-empty-db", nil, false, false, map[string]string{"bad": "1"}, false, true,
			"detach flush flush", "", LoadingSync, "Bad data format of key 'bad' in DB 0", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			m := NewMaster()
			if tc.sameID {
				m.ID = id
			}
			l := newLoader(m, tc.mode, tc.before)
			if l.data == nil {
				l.data = map[string]string{}
			}
			l.aof = tc.aof
			p := payload(tc.keys, tc.corrupt)
			err := m.LoadFullSync(l, id, 100, PayloadHeader{Size: int64(len(p))}, bytes.NewReader(p))
			if (err != nil) != tc.err {
				t.Fatalf("err %v", err)
			}
			if got := strings.Join(l.did, " "); got != tc.did {
				t.Fatalf("did %q, want %q", got, tc.did)
			}
			var kv []string
			for k, v := range l.data {
				kv = append(kv, k+"="+v)
			}
			if got := strings.Join(sorted(kv), " "); got != tc.data {
				t.Fatalf("dataset %q, want %q", got, tc.data)
			}
			if !tc.err && (len(l.funcs) != 1 || l.funcs[0] != "#!lua name=lib") {
				t.Fatalf("functions %q", l.funcs)
			}
			if len(l.loading) == 0 || l.loading[0] != tc.state || m.Loading.Load() != LoadingNone {
				t.Fatalf("loading states %v, want %d then none", l.loading, tc.state)
			}
			if !l.has(tc.log) {
				t.Fatalf("no %q in %q", tc.log, l.lines)
			}
			if _, err := os.Stat("dump.rdb"); (err == nil) != tc.tempFile {
				t.Fatalf("dbfilename written: %v", err == nil)
			}
			if !tc.err && !l.has("MASTER <-> REPLICA sync: Finished with success") {
				t.Fatal("no success line")
			}
		})
	}
}

func TestLoadFullSyncReplaced(t *testing.T) {
	m := NewMaster()
	l := newLoader(m, "swapdb", map[string]string{})
	l.stale = true
	p := payload(nil, false)
	if err := m.LoadFullSync(l, NoID, 0, PayloadHeader{Size: -1}, bytes.NewReader(p)); err == nil || len(l.did) != 0 {
		t.Fatalf("a replaced link loads: %v %v", err, l.did)
	}
	if !l.has("receiving streamed RDB from master with EOF to parser") {
		t.Fatalf("log %q", l.lines)
	}
}

func TestLoadErrorLine(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&rdb.FileError{Off: 12, Msg: "Unexpected EOF reading RDB file"}, "Internal error in RDB reading offset 12, function at rdb.c:0 -> Unexpected EOF reading RDB file. Failure loading rdb format from socket, assuming connection error, resuming operation."},
		{&rdb.FileError{Off: 9, Msg: "Wrong RDB checksum"}, "Internal error in RDB reading offset 9, function at rdb.c:0 -> Wrong RDB checksum. Failure loading rdb format"},
		{errors.New("connection reset"), "Internal error in RDB reading offset 0, function at rdb.c:0 -> connection reset. Failure loading rdb format from socket, assuming connection error, resuming operation."},
	}
	for _, tc := range cases {
		if got := loadErrorLine(tc.err); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.err, got, tc.want)
		}
	}
}

func sorted(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}
