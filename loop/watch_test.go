package loop

import "testing"

func TestWatchOverTheWire(t *testing.T) {
	k := key("wk")
	watcher, actor := dial(t, plain), dial(t, plain)
	watcher.do("watch", k+".*", "", "ok")
	actor.do("kset", k+".v", "x", "ok")
	watcher.expect("watch kset " + k + ".v")
	actor.do("kdel", k+".v", "", "ok")
	watcher.expect("watch kdel " + k + ".v")
	tok := actor.do("l", k+".l", "0 10", "ok T 10")[1]
	watcher.expect("watch acquire " + k + ".l")
	actor.do("r", k+".l", tok, "ok")
	watcher.expect("watch release " + k + ".l")
	watcher.do("unwatch", k+".*", "", "ok")
	actor.do("kset", k+".v", "y", "ok")
	watcher.do("ping", "_", "_", "ok") // no push came before this reply
}
