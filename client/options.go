package client

// Option sets an optional parameter of a request.
type Option func(*options)

type options struct {
	leaseTTL int // seconds; 0 = the server's default
}

// WithLeaseTTL asks for a lease of seconds instead of the server's default
// (33 s on dflockd). It applies to acquires, enqueues, renewals and
// elections; the grant carries the lease actually given.
func WithLeaseTTL(seconds int) Option {
	return func(o *options) { o.leaseTTL = seconds }
}

func collect(opts []Option) options {
	var o options
	for _, fn := range opts {
		fn(&o)
	}
	return o
}

// ListenOption sets an optional parameter of Listen and Unlisten.
type ListenOption func(*listenOptions)

type listenOptions struct {
	group string
}

// WithGroup makes a subscription part of the named queue group: each
// signal goes to one member of the group (round-robin) rather than to
// every subscriber.
func WithGroup(group string) ListenOption {
	return func(o *listenOptions) { o.group = group }
}
