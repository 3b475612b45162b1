//go:build !race

package timerwheel

const raceEnabled = false
