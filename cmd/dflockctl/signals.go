package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// stopSignals are the signals that end a wait for a lock and, once CMD
// runs, are forwarded to it.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// signalCode is the shell's exit status for death by sig.
func signalCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return exitSignal + int(s)
	}
	return exitSignal
}

// signalContext returns a context cancelled by the first stop signal, which
// is then available on caught. stop undoes the signal handling.
func signalContext() (ctx context.Context, caught <-chan os.Signal, stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stopSignals...)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan os.Signal, 1)
	go func() {
		select {
		case s := <-sigs:
			got <- s
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, got, func() {
		signal.Stop(sigs)
		cancel()
	}
}
