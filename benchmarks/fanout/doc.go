// Package fanout measures pub/sub fan-out on a dflockd-protocol server:
// one signal to many subscribers, and what one subscriber that never
// reads does to the others.
//
// A repetition (Run) opens Subscribers connections that listen on one
// channel and read everything, and a publisher that sends signals one at a
// time: each is written, answered ("ok <receivers>") and read by every
// subscriber before the next, so a latency never includes waiting behind
// an earlier signal. It runs three phases of signals:
//
//   - clean: all Subscribers read;
//   - slow: one of them has left the channel and a subscriber that never
//     reads has joined, its socket already filled to just under what the
//     server sends before it disconnects a slow consumer (measured at the
//     start of every repetition by flooding a throw-away subscriber on a
//     channel of its own), so it reaches the server's bound within this
//     phase, which lasts until the server has closed its end (seen with
//     sock_diag: the client cannot see a close queued behind unread data);
//   - after: the same signals once it is gone.
//
// Every push is checked: channel, consecutive sequence number, payload,
// and the receiver count of every reply (a server may stop counting a
// subscriber that is behind before it disconnects it). A wrong or missing
// push, a lost reading subscriber or a slow subscriber that is never
// disconnected fails the run with a message naming the target and the
// line.
//
// Latency of a push is measured from just before the publisher's write to
// the kernel's receive timestamp of the subscriber's socket (SO_TIMESTAMPNS,
// CLOCK_REALTIME): that excludes the load generator's own scheduling of a
// thousand readers on one core, which is reported separately as the
// latency to the read. Server CPU per delivered push comes from /proc.
//
// Linux only (receive timestamps, /proc). A Run owns its connections;
// several may run at once against different channels.
package fanout
