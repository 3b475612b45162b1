//go:build linux

package fence

const durableSupported = true
