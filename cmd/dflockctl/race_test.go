//go:build race

package main

// raceEnabled makes TestMain build the binary under test with -race too,
// so the lock command's goroutines are checked in the subprocess tests.
const raceEnabled = true
