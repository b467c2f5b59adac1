package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// The cluster bus wire format of Redis 7.0 (cluster.h): every message
// starts with a 2256-byte header, big-endian, then a body that depends on
// the type.

// Message types.
const (
	MsgPing         = 0
	MsgPong         = 1
	MsgMeet         = 2
	MsgFail         = 3
	MsgPublish      = 4
	MsgAuthRequest  = 5
	MsgAuthAck      = 6
	MsgUpdate       = 7
	MsgMFStart      = 8
	MsgModule       = 9
	MsgPublishShard = 10
	msgTypeCount    = 11
)

// Node flags, as the bus carries them.
const (
	FlagMaster     = 1
	FlagSlave      = 2
	FlagPFail      = 4
	FlagFail       = 8
	FlagMyself     = 16
	FlagHandshake  = 32
	FlagNoAddr     = 64
	FlagMeet       = 128
	FlagMigrateTo  = 256
	FlagNoFailover = 512
)

// Message flags (mflags[0]).
const (
	mflagPaused   = 1 << 0 // master paused for a manual failover
	mflagForceAck = 1 << 1 // vote even though the master is up
	mflagExtData  = 1 << 2 // ping extensions follow the gossip
)

// Ping extension types.
const extHostname = 0

const (
	protoVersion = 1
	nameLen      = 40
	ipLen        = 46 // NET_IP_STR_LEN
	headerLen    = 2256
	gossipLen    = 104
	slotBytes    = Slots / 8
	updateLen    = 8 + nameLen + slotBytes
	maxMsgLen    = headerLen + updateLen // sizeof(clusterMsg)
)

// Header offsets.
const (
	offSig      = 0
	offTotlen   = 4
	offVer      = 8
	offPort     = 10
	offType     = 12
	offCount    = 14
	offCurEpoch = 16
	offCfgEpoch = 24
	offOffset   = 32
	offSender   = 40
	offSlots    = 80
	offSlaveOf  = 2128
	offMyIP     = 2168
	offExtCount = 2214
	offPPort    = 2246
	offCPort    = 2248
	offFlags    = 2250
	offState    = 2252
	offMFlags   = 2253
	offData     = headerLen
)

var nullName [nameLen]byte

// Bitmap is a slot bitmap as the bus carries it: bit j of byte j/8 is
// slot j.
type Bitmap [slotBytes]byte

// Has reports whether slot is set.
func (b *Bitmap) Has(slot int) bool { return b[slot>>3]&(1<<(slot&7)) != 0 }

// Set sets slot.
func (b *Bitmap) Set(slot int) { b[slot>>3] |= 1 << (slot & 7) }

// Clear clears slot.
func (b *Bitmap) Clear(slot int) { b[slot>>3] &^= 1 << (slot & 7) }

// Gossip is one 104-byte gossip entry of a PING, PONG or MEET.
type Gossip struct {
	Name         string
	PingSent     uint32 // seconds
	PongReceived uint32 // seconds
	IP           string
	Port         uint16
	CPort        uint16
	Flags        uint16
	PPort        uint16
}

// Message is a decoded bus message: the header and the body of its type.
type Message struct {
	Type         uint16
	Count        uint16 // gossip entries (PING, PONG, MEET)
	Port         uint16
	PPort        uint16
	CPort        uint16
	CurrentEpoch uint64
	ConfigEpoch  uint64
	Offset       uint64
	Sender       string
	Slots        Bitmap
	SlaveOf      string // "" when the sender is a master
	MyIP         string // "" when the sender wants its address discovered
	Flags        uint16
	State        uint8
	MFlags       [3]byte

	Gossip []Gossip
	// Hostname is the sender's announced hostname (the hostname ping
	// extension); HasHostname is false when no extension carried one.
	Hostname    string
	HasHostname bool
	UnknownExts []uint16 // extension types not understood, for the log

	About string // FAIL: the failing node

	Channel, Payload []byte // PUBLISH, PUBLISHSHARD

	UpdateEpoch uint64 // UPDATE: the node's config epoch
	UpdateNode  string // UPDATE: the node
	UpdateSlots Bitmap // UPDATE: its slots

	ModuleID   uint64 // MODULE
	ModuleType uint8
}

func putName(b []byte, name string) {
	copy(b[:nameLen], name)
}

func getName(b []byte) string {
	if bytes.Equal(b[:nameLen], nullName[:]) {
		return ""
	}
	return string(b[:nameLen])
}

func putCString(b []byte, s string, size int) {
	n := copy(b[:size-1], s)
	for i := n; i < size; i++ {
		b[i] = 0
	}
}

func getCString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

func align8(n int) int { return (n + 7) / 8 * 8 }

// Encode returns the wire form of m, computing its length (and, for
// PING/PONG/MEET, the gossip count, the extensions and their flag).
func (m *Message) Encode() []byte {
	total := headerLen
	extCount := 0
	switch m.Type {
	case MsgPing, MsgPong, MsgMeet:
		total += gossipLen * len(m.Gossip)
		if m.Hostname != "" {
			total += 8 + align8(len(m.Hostname)+1)
			extCount++
		}
	case MsgFail:
		total += nameLen
	case MsgPublish, MsgPublishShard:
		total += 8 + len(m.Channel) + len(m.Payload)
	case MsgUpdate:
		total += updateLen
	case MsgModule:
		total += 13 + len(m.Payload)
	}
	b := make([]byte, total)
	copy(b[offSig:], "RCmb")
	be := binary.BigEndian
	be.PutUint32(b[offTotlen:], uint32(total))
	be.PutUint16(b[offVer:], protoVersion)
	be.PutUint16(b[offPort:], m.Port)
	be.PutUint16(b[offType:], m.Type)
	be.PutUint64(b[offCurEpoch:], m.CurrentEpoch)
	be.PutUint64(b[offCfgEpoch:], m.ConfigEpoch)
	be.PutUint64(b[offOffset:], m.Offset)
	putName(b[offSender:], m.Sender)
	copy(b[offSlots:offSlots+slotBytes], m.Slots[:])
	putName(b[offSlaveOf:], m.SlaveOf)
	putCString(b[offMyIP:], m.MyIP, ipLen)
	be.PutUint16(b[offPPort:], m.PPort)
	be.PutUint16(b[offCPort:], m.CPort)
	be.PutUint16(b[offFlags:], m.Flags)
	b[offState] = m.State
	copy(b[offMFlags:offMFlags+3], m.MFlags[:])
	d := b[offData:]
	switch m.Type {
	case MsgPing, MsgPong, MsgMeet:
		be.PutUint16(b[offCount:], uint16(len(m.Gossip)))
		for i := range m.Gossip {
			g := &m.Gossip[i]
			e := d[i*gossipLen:]
			putName(e, g.Name)
			be.PutUint32(e[40:], g.PingSent)
			be.PutUint32(e[44:], g.PongReceived)
			putCString(e[48:], g.IP, ipLen)
			be.PutUint16(e[94:], g.Port)
			be.PutUint16(e[96:], g.CPort)
			be.PutUint16(e[98:], g.Flags)
			be.PutUint16(e[100:], g.PPort)
		}
		if m.Hostname != "" {
			e := d[len(m.Gossip)*gossipLen:]
			n := 8 + align8(len(m.Hostname)+1)
			be.PutUint32(e[0:], uint32(n))
			be.PutUint16(e[4:], extHostname)
			copy(e[8:], m.Hostname)
			b[offMFlags] |= mflagExtData
		}
		be.PutUint16(b[offExtCount:], uint16(extCount))
	case MsgFail:
		putName(d, m.About)
	case MsgPublish, MsgPublishShard:
		be.PutUint32(d[0:], uint32(len(m.Channel)))
		be.PutUint32(d[4:], uint32(len(m.Payload)))
		copy(d[8:], m.Channel)
		copy(d[8+len(m.Channel):], m.Payload)
	case MsgUpdate:
		be.PutUint64(d[0:], m.UpdateEpoch)
		putName(d[8:], m.UpdateNode)
		copy(d[8+nameLen:], m.UpdateSlots[:])
	case MsgModule:
		binary.LittleEndian.PutUint64(d[0:], m.ModuleID) // sent as is by Redis
		be.PutUint32(d[8:], uint32(len(m.Payload)))
		d[12] = m.ModuleType
		copy(d[13:], m.Payload)
	}
	return b
}

// Errors of Decode. A message that fails the checks is ignored, as Redis
// ignores it (the link stays up).
var (
	errShort   = errors.New("message too short")
	errVersion = errors.New("unsupported protocol version")
)

// LengthError is a message whose declared length does not match its
// content (Redis logs it and drops the message).
type LengthError struct{ Msg string }

func (e *LengthError) Error() string { return e.Msg }

// MessageLen returns the total length announced by the first 8 bytes of
// a message, and whether the signature and length are acceptable (at
// least the header).
func MessageLen(b []byte) (int, bool) {
	if len(b) < 8 || string(b[:4]) != "RCmb" {
		return 0, false
	}
	n := binary.BigEndian.Uint32(b[offTotlen:])
	return int(n), n >= headerLen
}

// TypeName is the name of a message type in CLUSTER INFO and the log.
func TypeName(t int) string {
	switch t {
	case MsgPing:
		return "ping"
	case MsgPong:
		return "pong"
	case MsgMeet:
		return "meet"
	case MsgFail:
		return "fail"
	case MsgPublish:
		return "publish"
	case MsgPublishShard:
		return "publishshard"
	case MsgAuthRequest:
		return "auth-req"
	case MsgAuthAck:
		return "auth-ack"
	case MsgUpdate:
		return "update"
	case MsgMFStart:
		return "mfstart"
	case MsgModule:
		return "module"
	}
	return "unknown"
}

// Decode parses one whole message (b holds exactly its totlen bytes),
// with clusterProcessPacket's length checks.
func Decode(b []byte) (*Message, error) {
	if len(b) < 16 {
		return nil, errShort
	}
	be := binary.BigEndian
	totlen := int(be.Uint32(b[offTotlen:]))
	if totlen > len(b) {
		return nil, errShort
	}
	if be.Uint16(b[offVer:]) != protoVersion {
		return nil, errVersion
	}
	if totlen < headerLen {
		return nil, errShort
	}
	b = b[:totlen]
	m := &Message{
		Type:         be.Uint16(b[offType:]),
		Count:        be.Uint16(b[offCount:]),
		Port:         be.Uint16(b[offPort:]),
		PPort:        be.Uint16(b[offPPort:]),
		CPort:        be.Uint16(b[offCPort:]),
		CurrentEpoch: be.Uint64(b[offCurEpoch:]),
		ConfigEpoch:  be.Uint64(b[offCfgEpoch:]),
		Offset:       be.Uint64(b[offOffset:]),
		Sender:       string(b[offSender : offSender+nameLen]),
		SlaveOf:      getName(b[offSlaveOf:]),
		MyIP:         getCString(b[offMyIP : offMyIP+ipLen]),
		Flags:        be.Uint16(b[offFlags:]),
		State:        b[offState],
	}
	copy(m.Slots[:], b[offSlots:offSlots+slotBytes])
	copy(m.MFlags[:], b[offMFlags:offMFlags+3])
	d := b[offData:]
	name := TypeName(int(m.Type))
	explen := headerLen
	switch m.Type {
	case MsgPing, MsgPong, MsgMeet:
		count := int(m.Count)
		explen += gossipLen * count
		exts := int(be.Uint16(b[offExtCount:]))
		if m.MFlags[0]&mflagExtData != 0 && explen <= totlen {
			off := explen
			for i := 0; i < exts; i++ {
				if off+8 > totlen {
					return nil, &LengthError{fmt.Sprintf("Received invalid %s packet with extension data that exceeds total packet length (%d)", name, totlen)}
				}
				extlen := int(be.Uint32(b[off:]))
				if extlen%8 != 0 {
					return nil, &LengthError{fmt.Sprintf("Received a %s packet without proper padding (%d bytes)", name, extlen)}
				}
				if totlen-explen < extlen || extlen < 8 {
					return nil, &LengthError{fmt.Sprintf("Received invalid %s packet with extension data that exceeds total packet length (%d)", name, totlen)}
				}
				explen += extlen
				off += extlen
			}
		}
		if totlen != explen {
			return nil, &LengthError{fmt.Sprintf("Received invalid %s packet of length %d but expected length %d", name, totlen, explen)}
		}
		m.Gossip = make([]Gossip, count)
		for i := range m.Gossip {
			e := d[i*gossipLen:]
			m.Gossip[i] = Gossip{
				Name:         string(e[:nameLen]),
				PingSent:     be.Uint32(e[40:]),
				PongReceived: be.Uint32(e[44:]),
				IP:           getCString(e[48 : 48+ipLen]),
				Port:         be.Uint16(e[94:]),
				CPort:        be.Uint16(e[96:]),
				Flags:        be.Uint16(e[98:]),
				PPort:        be.Uint16(e[100:]),
			}
		}
		if m.MFlags[0]&mflagExtData != 0 {
			off := headerLen + gossipLen*count
			for i := 0; i < exts; i++ {
				extlen := int(be.Uint32(b[off:]))
				typ := be.Uint16(b[off+4:])
				if typ == extHostname {
					m.Hostname = getCString(b[off+8 : off+extlen])
					m.HasHostname = true
				} else {
					m.UnknownExts = append(m.UnknownExts, typ)
				}
				off += extlen
			}
		}
		return m, nil
	case MsgFail:
		explen += nameLen
	case MsgPublish, MsgPublishShard:
		explen += 8
		if totlen >= explen {
			explen += int(be.Uint32(d[0:])) + int(be.Uint32(d[4:]))
		}
	case MsgAuthRequest, MsgAuthAck, MsgMFStart:
	case MsgUpdate:
		explen += updateLen
	case MsgModule:
		explen += 13
		if totlen >= explen {
			explen += int(be.Uint32(d[8:]))
		}
	default:
		explen = totlen // unknown types are assumed well formed
	}
	if totlen != explen {
		return nil, &LengthError{fmt.Sprintf("Received invalid %s packet of length %d but expected length %d", name, totlen, explen)}
	}
	switch m.Type {
	case MsgFail:
		m.About = string(d[:nameLen])
	case MsgPublish, MsgPublishShard:
		cl := int(be.Uint32(d[0:]))
		m.Channel = d[8 : 8+cl]
		m.Payload = d[8+cl:]
	case MsgUpdate:
		m.UpdateEpoch = be.Uint64(d[0:])
		m.UpdateNode = string(d[8 : 8+nameLen])
		copy(m.UpdateSlots[:], d[8+nameLen:])
	case MsgModule:
		m.ModuleID = binary.LittleEndian.Uint64(d[0:])
		m.ModuleType = d[12]
		m.Payload = d[13:]
	}
	return m, nil
}
