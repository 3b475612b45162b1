//go:build !linux

package fence

const durableSupported = false
