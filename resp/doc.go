// Package resp reads and writes the Redis serialization protocol (RESP2 and
// RESP3). The Parser turns a client's query buffer into commands whose
// arguments are slices of that buffer; the Writer appends replies to a
// reused output buffer. Neither allocates on the hot path.
package resp
