// Package rdb is Redis 7.0's RDB format: the serialized values of DUMP and
// RESTORE (encode.go, decode.go), the records of RDB files (file.go: the
// header, AUX fields, functions, SELECTDB and RESIZEDB, expiry and LRU/LFU
// hints, key-value pairs, EOF and CRC-64), the listpack, ziplist, intset
// and stream encodings inside them (listpack.go, compact.go, stream.go),
// LZF (lzf.go) and CRC-64 (crc64.go), and the values of package store in
// those encodings and back (entry.go: EntryType, Enc.Entry, Enc.Record,
// Dump, NewEntry under the encoding Limits). It knows values, not the
// keyspace: package persist writes and reads the files and walks the
// store.
package rdb
