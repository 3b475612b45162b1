package httpapi

import (
	"io"
	"net/http"
)

// Snapshotter is a Cluster that writes backups of its replicated state
// (cluster.Node.SaveSnapshot): a snapshot file (package snapfile), on the
// leader, of the state once everything committed before the call has
// applied.
type Snapshotter interface {
	SaveSnapshot(w io.Writer) error
}

// saveSnapshot is GET /v1/admin/snapshot: the leader's backup, streamed
// as it is written. An error before its first byte answers as the other
// admin routes do; one after it (the client went away, or the leader
// failed midway) aborts the response, which the file's length and
// checksum then tell the client.
func (a *API) saveSnapshot(w http.ResponseWriter, r *http.Request) {
	if !a.admin(w, r) {
		return
	}
	sn, ok := a.cfg.Cluster.(Snapshotter)
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "this member cannot take snapshots")
		return
	}
	sw := &startWriter{w: w}
	if err := sn.SaveSnapshot(sw); err != nil {
		if !sw.started {
			a.clusterError(w, err)
			return
		}
		a.cfg.Logf("httpapi: admin: snapshot for %s failed midway: %v", r.RemoteAddr, err)
		panic(http.ErrAbortHandler)
	}
	a.cfg.Logf("httpapi: admin: snapshot taken for %s (%d bytes)", r.RemoteAddr, sw.n)
}

// startWriter answers 200 with its headers on the first write.
type startWriter struct {
	w       http.ResponseWriter
	started bool
	n       int64
}

func (s *startWriter) Write(p []byte) (int, error) {
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", `attachment; filename="dflockd.snap"`)
		h.Set("Cache-Control", "no-store")
		s.w.WriteHeader(http.StatusOK)
	}
	k, err := s.w.Write(p)
	s.n += int64(k)
	return k, err
}
