//go:build race

package engine

// raceEnabled: the race detector slows the engine tenfold; long randomized
// tests shorten their runs under it (and run at full size without it).
const raceEnabled = true
