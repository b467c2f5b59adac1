package rdb

// Redis checksums DUMP payloads (and RDB files) with CRC-64/Jones: the
// polynomial 0xad93d23594c935a9, reflected input and output, initial value
// 0 and no final xor. crc64 computes it with a byte-at-a-time table.

const crcPolyReflected = 0x95ac9329ac4bc9b5 // 0xad93d23594c935a9 bit-reversed

var crcTable = func() (t [256]uint64) {
	for i := range t {
		c := uint64(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ crcPolyReflected
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc64 continues the checksum crc over p.
func crc64(crc uint64, p []byte) uint64 {
	for _, b := range p {
		crc = crcTable[byte(crc)^b] ^ crc>>8
	}
	return crc
}
