//go:build !linux

package gnetwrite

import "github.com/panjf2000/gnet/v2"

// Write writes b to c through gnet.
func Write(c gnet.Conn, b []byte) { _, _ = c.Write(b) }
