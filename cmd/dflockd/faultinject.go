//go:build faultinject

package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// armFaults, in a binary built with -tags faultinject (tests only), makes
// SIGUSR2 stop the gnet loops as a fault inside gnet would.
func armFaults(log *slog.Logger, srv any) {
	f, ok := srv.(interface{ InjectLoopExit() })
	if !ok {
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	go func() {
		<-sig
		log.Warn("fault injection: stopping the event loops")
		f.InjectLoopExit()
	}()
}
