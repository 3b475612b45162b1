package client

import "strings"

// Ping sends ping and expects ok. Servers before dflockd v1.14 (and
// redis-feats) have no ping and answer error, which is returned as an
// error wrapping ErrServer; the connection stays usable either way.
func Ping(c *Conn) error {
	return expectOK(c, "ping", "_", "_")
}

// Stats returns the server's stats document, a JSON object whose fields
// depend on the server (connections, locks, semaphores, and on newer
// servers counters, KV entries, lists, subscriptions, barriers).
func Stats(c *Conn) (string, error) {
	reply, err := c.request("stats", "_", "_")
	if err != nil {
		return "", err
	}
	doc, ok := strings.CutPrefix(reply, statusOK+" ")
	if !ok {
		return "", replyError("stats", reply)
	}
	return doc, nil
}
