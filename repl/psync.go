package repl

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// IDLen is the length of a replication id (CONFIG_RUN_ID_SIZE).
const IDLen = 40

// NoID is the replid2 of a server that has none.
var NoID = strings.Repeat("0", IDLen)

// NewID returns a random replication id.
func NewID() string {
	var b [IDLen / 2]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// History is what a master can continue a replica's stream from: its
// replication ids and the backlog's range.
type History struct {
	ID, ID2 string
	// Offset2 is the last offset +1 up to which ID2 is valid
	// (second_repl_offset); -1 when there is no ID2.
	Offset2 int64
	// Backlog reports whether the backlog covers an offset; nil when
	// there is no backlog.
	Backlog interface{ Covers(off int64) bool }
	// Offset is master_repl_offset.
	Offset int64
}

// Decision is a master's answer to PSYNC.
type Decision struct {
	Continue bool
	// Log is the line a master writes when it refuses (empty when the
	// replica asked for a full sync with "?").
	Log string
	// Warn is an extra warning line (an offset ahead of the master's).
	Warn string
}

// Psync decides whether a replica that asks to continue replid's stream
// from offset may (Redis's masterTryPartialResynchronization).
func Psync(h History, replid string, offset int64, replica string) Decision {
	if !strings.EqualFold(replid, h.ID) && (!strings.EqualFold(replid, h.ID2) || offset > h.Offset2) {
		switch {
		case replid == "?":
			return Decision{Log: "Full resync requested by replica " + replica}
		case !strings.EqualFold(replid, h.ID) && !strings.EqualFold(replid, h.ID2):
			return Decision{Log: fmt.Sprintf("Partial resynchronization not accepted: Replication ID mismatch (Replica asked for '%s', my replication IDs are '%s' and '%s')", replid, h.ID, h.ID2)}
		default:
			return Decision{Log: fmt.Sprintf("Partial resynchronization not accepted: Requested offset for second ID was %d, but I can reply up to %d", offset, h.Offset2)}
		}
	}
	if h.Backlog == nil || !h.Backlog.Covers(offset) {
		d := Decision{Log: fmt.Sprintf("Unable to partial resync with replica %s for lack of backlog (Replica request was: %d).", replica, offset)}
		if offset > h.Offset {
			d.Warn = fmt.Sprintf("Warning: replica %s tried to PSYNC with an offset that is greater than the master replication offset.", replica)
		}
		return d
	}
	return Decision{Continue: true}
}

// PsyncReply is what a master answered to PSYNC.
type PsyncReply struct {
	Kind   PsyncKind
	ID     string // +FULLRESYNC's id, +CONTINUE's new id ("" if none)
	Offset int64  // +FULLRESYNC's offset
	Line   string
}

// PsyncKind classifies a master's answer to PSYNC.
type PsyncKind int

const (
	// PsyncFull: +FULLRESYNC, the payload follows.
	PsyncFull PsyncKind = iota
	// PsyncContinue: +CONTINUE, the stream follows.
	PsyncContinue
	// PsyncTryLater: the master cannot serve now (-NOMASTERLINK, -LOADING).
	PsyncTryLater
	// PsyncError: any other error: the master does not know PSYNC, or
	// refuses it.
	PsyncError
)

// ParsePsyncReply reads a master's reply line to PSYNC
// (slaveTryPartialResynchronization's reading half).
func ParsePsyncReply(line string) PsyncReply {
	r := PsyncReply{Line: line}
	switch {
	case strings.HasPrefix(line, "+FULLRESYNC"):
		r.Kind = PsyncFull
		f := strings.Fields(line)
		r.Offset = -1
		if len(f) >= 3 && len(f[1]) == IDLen {
			r.ID = f[1]
			r.Offset, _ = strconv.ParseInt(f[2], 10, 64)
		}
	case strings.HasPrefix(line, "+CONTINUE"):
		r.Kind = PsyncContinue
		if f := strings.Fields(line); len(f) >= 2 && len(f[1]) == IDLen {
			r.ID = f[1]
		}
	case strings.HasPrefix(line, "-NOMASTERLINK"), strings.HasPrefix(line, "-LOADING"):
		r.Kind = PsyncTryLater
	default:
		r.Kind = PsyncError
	}
	return r
}
