package loop

import (
	"fmt"
	"slices"
	"testing"
)

// gnet's warning about events of sockets it has just closed is noise; its
// other warnings and errors reach the log.
func TestQuietLoggerDropsStaleEventWarnings(t *testing.T) {
	var got []string
	l := quietLogger{logf: func(f string, a ...any) { got = append(got, fmt.Sprintf(f, a...)) }}
	l.Warnf("received event[fd=%d|ev=%d|flags=%d] of a stale connection from event-loop(%d)", 29, 25, 0, 1)
	l.Warnf("something else %d", 1)
	l.Errorf("an error %d", 2)
	if want := []string{"gnet: something else 1", "gnet: an error 2"}; !slices.Equal(got, want) {
		t.Fatalf("logged %q, want %q", got, want)
	}
}
