package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// withObservation measures every request, whatever answered it (auth,
// the rate limit, CORS or a route), for the metrics (metrics.go) and the
// access log: one recorder serves both.
func (a *API) withObservation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		took := time.Since(start)
		code := rec.status
		if code == 0 {
			code = http.StatusOK // nothing written: net/http answers 200
		}
		if a.metrics != nil {
			a.metrics.count(methodLabel(r.Method), a.pathLabel(r), code, took)
		}
		if a.cfg.AccessLog != nil {
			// The path, not the URL: a query string is the client's to
			// fill, and no header is logged, so no token is.
			a.cfg.AccessLog.LogAttrs(context.Background(), slog.LevelInfo, "http request",
				slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", code),
				slog.Int64("bytes", rec.bytes), slog.Duration("duration", took), slog.String("remote", r.RemoteAddr))
		}
	})
}

// statusRecorder notes the status a handler wrote and the bytes of the
// body.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (readJSON sets
// read deadlines through it).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
