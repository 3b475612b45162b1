// Package httpapi is the HTTP API of dflockd v2 (spec §F.2): sessions,
// locks and semaphores as JSON over HTTP, /health, /ready, /v1/stats,
// /metrics and the OpenAPI 3.1 document of all of it (openapi.json,
// served at GET /v1/openapi.json).
//
// An HTTP session is an engine session: POST /v1/sessions opens one with
// session.Hub.OpenEndpoint, so it has a connection id in the same space as
// the TCP clients' and queues in the same FIFOs; DELETE, or the sweeper
// once it has been idle for twice SessionIdleTimeout, closes it with
// Hub.CloseEndpoint, which runs the disconnect cleanup of spec §D.4 (its
// holds released, its waits cancelled). Lock calls name their session in
// the X-Dflockd-Session header and become protocol requests
// (vocab.Request) run by Hub.Apply. A request that must wait parks in the
// engine; its one late result comes back through the session's
// Endpoint.Post. If the client goes away first (its request's context
// ends) or the session is closed meanwhile, the call withdraws the parked
// request with engine.KindCancel, so the next waiter in line is not
// held up by a caller that is gone; a grant that raced the withdrawal is
// released, since nobody will ever see its token.
//
// One HTTP session behaves like one TCP connection: its lock calls run
// one at a time, in arrival order. A second call on a session whose
// previous call is still waiting (a blocking acquire or wait) waits for
// it to finish before it starts; it gives up, like the first, when its
// client goes away or the session closes. Clients that want concurrent
// waits open one session per concurrent call.
//
// Every deadline of this package (session expiry, the 100 ms before a
// 401 answer, the rate limiter's housekeeping) is a node of one
// hierarchical timer wheel on the hub's clock, advanced by a
// timerwheel.Driver: no runtime timer per session or per request. The
// connections' own deadlines are net/http's, on the sockets: the time
// to send headers (10 s) and a body (10 s), and keep-alive idleness.
//
// On a cluster member (a hub made by session.NewClusterHub, and
// Config.Cluster set) sessions and lock calls are the leader's and run
// through the raft log, the other members answer them 503 not_leader
// with the leader's client address in X-Dflockd-Leader, and GET
// /v1/readindex and the admin routes that add and remove members are
// served (cluster.go).
//
// The lock observatory (observatory.go, eventstream.go, deadlocks.go,
// ui.go) shows operators the engine's state: GET /v1/keys and
// /v1/keys/{key} (holders, FIFO queues, recent events), GET /v1/events
// (the event rings as server-sent events), GET /v1/deadlocks (package
// deadlock, on a bounded schedule), a force release for the admin token,
// and the page at /ui that reads them all.
//
// Operators see each request twice over: withObservation counts it for
// /metrics and, with Config.AccessLog, logs it; every 401 is logged
// through Config.Events, rate-limited. /metrics takes the clients'
// token or the scrapers' own (Config.MetricsToken), or none by choice
// (Config.MetricsOpen) (auth.go).
//
// Concurrency: an API is safe for concurrent use; each request runs on
// its net/http goroutine and reaches the engine only through the hub.
//
// httpapi knows the engine's commands and results, the hub, and of
// package cluster its errors; it knows nothing of gnet or of the line
// protocol's text.
package httpapi
