module github.com/dflockd-ng/dflockd/client

go 1.22.0
