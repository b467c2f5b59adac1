package persist

// Image is a point-in-time image of the dataset, as the records of an RDB
// file: what BGSAVE, SAVE, a rewrite's base and a replica's full sync
// write out. The server produces it (Host.Snapshot); this package only
// encodes it into files.
type Image interface {
	// Meta describes the image.
	Meta() ImageMeta
	// Each calls fn with the image's key records in RDB encoding (the
	// optional expiry opcode, the object type, the key, the value),
	// database by database in ascending order, in chunks of whole
	// records. The first call for a database carries its key and expiry
	// counts (RESIZEDB). Each stops at fn's first error and returns it.
	Each(fn func(db int, size, expires uint64, chunk []byte, keys int) error) error
	// Release gives the image up, from any goroutine: a walk under way
	// stops at its next step (Each returns ErrAborted). Called once the
	// image is written, or to abort its writing (a killed save).
	Release()
}

// ImageMeta describes an image.
type ImageMeta struct {
	Keys      int64    // keys in the image
	CTime     int64    // unix seconds it was taken
	UsedMem   uint64   // used memory then (the used-mem AUX field)
	Dirty     uint64   // the host's change counter at the cut
	Functions [][]byte // function libraries' code
	Repl      *ReplAux // the replication AUX fields at the cut, nil when none
}
