package cluster

// Slots is the number of hash slots.
const Slots = 16384

// crc16tab is CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0,
// as Redis Cluster hashes keys.
var crc16tab = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return
}()

func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crc16tab[byte(c>>8)^x]
	}
	return c
}

// KeySlot returns the hash slot of key: the CRC16 of the key, or of the
// part between the first '{' and the next '}' when that part is not
// empty (a hash tag), modulo 16384.
func KeySlot(key []byte) int {
	for s := 0; s < len(key); s++ {
		if key[s] == '{' {
			for e := s + 1; e < len(key); e++ {
				if key[e] == '}' {
					if e == s+1 {
						break // "{}": the whole key
					}
					return int(crc16(key[s+1:e]) & (Slots - 1))
				}
			}
			break
		}
	}
	return int(crc16(key) & (Slots - 1))
}

// KeySlotString is KeySlot for a string key.
func KeySlotString(key string) int {
	for s := 0; s < len(key); s++ {
		if key[s] == '{' {
			for e := s + 1; e < len(key); e++ {
				if key[e] == '}' {
					if e == s+1 {
						break
					}
					return int(crc16s(key[s+1:e]) & (Slots - 1))
				}
			}
			break
		}
	}
	return int(crc16s(key) & (Slots - 1))
}

func crc16s(b string) uint16 {
	var c uint16
	for i := 0; i < len(b); i++ {
		c = c<<8 ^ crc16tab[byte(c>>8)^b[i]]
	}
	return c
}
