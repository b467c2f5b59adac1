package persist

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/sluicedb/sluice/rdb"
	"github.com/sluicedb/sluice/resp"
)

// An AOF base in command form (aof-use-rdb-preamble no), as Redis's
// rewriteAppendOnlyFileRio writes it: FUNCTION LOAD for each library, then
// per database a SELECT and, for each key, the commands that rebuild it
// (SET, RPUSH, SADD, ZADD, HMSET, XADD... with at most 64 items each) and
// its PEXPIREAT. The image is read from its RDB records, so every base,
// in either form, comes from the same snapshot.

// itemsPerCmd is Redis's AOF_REWRITE_ITEMS_PER_CMD.
const itemsPerCmd = 64

// AOFFormOptions tune WriteAOFForm.
type AOFFormOptions struct {
	Timestamp bool // a #TS: annotation first (aof-timestamp-enabled)
	KeyDelay  func() time.Duration
	Cancel    <-chan struct{}
	Progress  interface{ Add(int64) int64 }
}

// cmdWriter writes RESP commands.
type cmdWriter struct {
	w   *bufio.Writer
	buf []byte
	err error
}

func (c *cmdWriter) cmd(args ...[]byte) {
	c.buf = resp.AppendCommand(c.buf[:0], args...)
	if c.err == nil {
		_, c.err = c.w.Write(c.buf)
	}
}

// WriteAOFForm writes img to w as AOF commands.
func WriteAOFForm(w io.Writer, img Image, o AOFFormOptions) error {
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriterSize(w, 1<<20)
	}
	cw := &cmdWriter{w: bw}
	if o.Timestamp {
		if _, err := bw.WriteString("#TS:" + strconv.FormatInt(time.Now().Unix(), 10) + "\r\n"); err != nil {
			return err
		}
	}
	meta := img.Meta()
	for _, code := range meta.Functions {
		cw.cmd([]byte("FUNCTION"), []byte("LOAD"), code)
	}
	ro := RDBOptions{KeyDelay: o.KeyDelay, Cancel: o.Cancel}
	cur := -1
	err := img.Each(func(db int, _, _ uint64, chunk []byte, keys int) error {
		if err := ro.checkCancel(); err != nil {
			return err
		}
		if db != cur {
			cur = db
			cw.cmd([]byte("SELECT"), []byte(strconv.Itoa(db)))
		}
		err := rdb.ReadRecords(chunk, db, func(r *rdb.Record) error {
			rebuildKey(cw, r)
			return cw.err
		})
		if err != nil {
			return err
		}
		if o.Progress != nil {
			o.Progress.Add(int64(keys))
		}
		return ro.keysDone(keys)
	})
	if err != nil {
		return err
	}
	if cw.err != nil {
		return cw.err
	}
	return bw.Flush()
}

// rebuildKey writes the commands that rebuild one key.
func rebuildKey(cw *cmdWriter, r *rdb.Record) {
	key, v := r.Key, r.Value
	switch v.Kind() {
	case rdb.KindString:
		val := v.Str
		if v.IsInt && val == nil {
			val = strconv.AppendInt(nil, v.Int, 10)
		}
		cw.cmd([]byte("SET"), key, val)
	case rdb.KindList:
		batched(cw, "RPUSH", key, len(v.Elems), 1, func(i int) [][]byte { return [][]byte{v.Elems[i]} })
	case rdb.KindSet:
		if v.Ints != nil {
			batched(cw, "SADD", key, len(v.Ints), 1, func(i int) [][]byte { return [][]byte{strconv.AppendInt(nil, v.Ints[i], 10)} })
		} else {
			batched(cw, "SADD", key, len(v.Elems), 1, func(i int) [][]byte { return [][]byte{v.Elems[i]} })
		}
	case rdb.KindZSet:
		batched(cw, "ZADD", key, len(v.Elems), 2, func(i int) [][]byte { return [][]byte{formatScore(v.Scores[i]), v.Elems[i]} })
	case rdb.KindHash:
		batched(cw, "HMSET", key, len(v.Fields), 2, func(i int) [][]byte { return [][]byte{v.Fields[i], v.Values[i]} })
	case rdb.KindStream:
		rebuildStream(cw, key, v.Stream)
	}
	if r.HasExpire {
		cw.cmd([]byte("PEXPIREAT"), key, ms(r.Expire))
	}
}

// batched writes cmd key items... in commands of at most itemsPerCmd
// items (each item is per words).
func batched(cw *cmdWriter, cmd string, key []byte, n, per int, item func(i int) [][]byte) {
	for i := 0; i < n; {
		k := min(n-i, itemsPerCmd)
		args := make([][]byte, 0, 2+k*per)
		args = append(args, []byte(cmd), key)
		for j := 0; j < k; j++ {
			args = append(args, item(i+j)...)
		}
		cw.cmd(args...)
		i += k
	}
}

// formatScore is rioWriteBulkDouble's "%.17g".
func formatScore(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

func streamID(id rdb.StreamID) []byte {
	b := strconv.AppendUint(nil, id.Ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, id.Seq, 10)
}

func rebuildStream(cw *cmdWriter, key []byte, s *rdb.Stream) {
	if s.Length > 0 {
		for _, e := range s.Entries {
			if e.Deleted {
				continue
			}
			args := [][]byte{[]byte("XADD"), key, streamID(e.ID)}
			cw.cmd(append(args, e.KV...)...)
		}
	} else {
		cw.cmd([]byte("XADD"), key, []byte("MAXLEN"), []byte("0"), []byte("0-1"), []byte("x"), []byte("y"))
	}
	cw.cmd([]byte("XSETID"), key, streamID(s.LastID), []byte("ENTRIESADDED"), strconv.AppendUint(nil, s.EntriesAdded, 10), []byte("MAXDELETEDID"), streamID(s.MaxDeletedID))
	for _, g := range s.Groups {
		args := [][]byte{[]byte("XGROUP"), []byte("CREATE"), key, g.Name, streamID(g.LastID)}
		if g.EntriesRead >= -1 {
			args = append(args, []byte("ENTRIESREAD"), strconv.AppendInt(nil, g.EntriesRead, 10))
		}
		cw.cmd(args...)
		nacks := make(map[rdb.StreamID]rdb.StreamNACK, len(g.PEL))
		for _, n := range g.PEL {
			nacks[n.ID] = n
		}
		for _, c := range g.Consumers {
			if len(c.PEL) == 0 {
				cw.cmd([]byte("XGROUP"), []byte("CREATECONSUMER"), key, g.Name, c.Name)
				continue
			}
			for _, id := range c.PEL {
				n := nacks[id]
				cw.cmd([]byte("XCLAIM"), key, g.Name, c.Name, []byte("0"), streamID(id),
					[]byte("TIME"), ms(n.DeliveryTime), []byte("RETRYCOUNT"), strconv.AppendUint(nil, n.DeliveryCount, 10),
					[]byte("JUSTID"), []byte("FORCE"))
			}
		}
	}
}
