package main

import (
	"os/exec"

	"go.uber.org/zap"
)

func execOutput(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).Output()
	return string(out), err
}

func nopLogger() *zap.Logger { return zap.NewNop() }
