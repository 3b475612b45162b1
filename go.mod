module github.com/dflockd-ng/dflockd

go 1.26.8

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/creack/pty v1.1.24
	github.com/dchest/siphash v1.2.3
	github.com/panjf2000/gnet/v2 v2.10.0
	github.com/valyala/bytebufferpool v1.0.0
	golang.org/x/sys v0.34.0
	golang.org/x/term v0.33.0
)

require (
	github.com/panjf2000/ants/v2 v2.12.1 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sync v0.12.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)
