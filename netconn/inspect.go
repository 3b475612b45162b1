package netconn

import "github.com/dflockd-ng/dflockd/session"

// Secure tells the lock observatory (session.Identify) whether the
// connection is TLS: a server's connections all are, or none (Config.TLS
// is set once, before Serve).
func (c *conn) Secure() bool { return c.srv.cfg.TLS != nil }

var _ session.SecureTransport = (*conn)(nil)
