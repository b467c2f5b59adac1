//go:build !linux

package server

import "io"

// loopStream: without event loops no client has a descriptor of its own.
func (c *Client) loopStream() io.ReadWriter { return nil }
