//go:build !faultinject

package main

import "log/slog"

// armFaults does nothing in a real build (see faultinject.go).
func armFaults(*slog.Logger, any) {}
