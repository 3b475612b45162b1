//go:build race

package timerwheel

// raceEnabled scales randomized tests down: the race detector slows the
// wheel's pointer chasing tenfold and these tests find no races by volume.
const raceEnabled = true
