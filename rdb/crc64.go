package rdb

import "encoding/binary"

// Redis checksums DUMP payloads (and RDB files) with CRC-64/Jones: the
// polynomial 0xad93d23594c935a9, reflected input and output, initial value
// 0 and no final xor. crc64 computes it sixteen bytes at a time
// (slicing-by-16): a table for each byte position, so that a block's
// sixteen lookups do not wait on one another; the tables take 32 KB, within
// the first-level cache. A snapshot, a full sync's image and a load
// checksum every byte, so this is their cost per byte: byte at a time it
// was two thirds of a master's CPU streaming an image of big values, and
// 0.2 GB/s against 2.1 GB/s eight bytes at a time and 2.8 GB/s sixteen
// (BenchmarkCRC64, 2-core VM).

const crcPolyReflected = 0x95ac9329ac4bc9b5 // 0xad93d23594c935a9 bit-reversed

// crcTables[0] is the byte-at-a-time table; crcTables[k][b] is the CRC of
// byte b followed by k zero bytes.
var crcTables = func() (t [16][256]uint64) {
	for i := range t[0] {
		c := uint64(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ crcPolyReflected
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for i := range t[0] {
		c := t[0][i]
		for k := 1; k < 16; k++ {
			c = t[0][byte(c)] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}()

// crc64 continues the checksum crc over p.
func crc64(crc uint64, p []byte) uint64 {
	t := &crcTables
	for len(p) >= 16 {
		a := crc ^ binary.LittleEndian.Uint64(p)
		b := binary.LittleEndian.Uint64(p[8:])
		crc = t[15][byte(a)] ^ t[14][byte(a>>8)] ^ t[13][byte(a>>16)] ^ t[12][byte(a>>24)] ^
			t[11][byte(a>>32)] ^ t[10][byte(a>>40)] ^ t[9][byte(a>>48)] ^ t[8][byte(a>>56)] ^
			t[7][byte(b)] ^ t[6][byte(b>>8)] ^ t[5][byte(b>>16)] ^ t[4][byte(b>>24)] ^
			t[3][byte(b>>32)] ^ t[2][byte(b>>40)] ^ t[1][byte(b>>48)] ^ t[0][byte(b>>56)]
		p = p[16:]
	}
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint64(p)
		crc = t[7][byte(crc)] ^ t[6][byte(crc>>8)] ^ t[5][byte(crc>>16)] ^ t[4][byte(crc>>24)] ^
			t[3][byte(crc>>32)] ^ t[2][byte(crc>>40)] ^ t[1][byte(crc>>48)] ^ t[0][byte(crc>>56)]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}
