package cluster

import (
	"strings"
	"testing"
)

func TestParsePeers(t *testing.T) {
	p, err := ParsePeers("n1=127.0.0.1:7001@127.0.0.1:6388, n2=[::1]:7002@db2:6389,")
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 2 || p[0].ID != "n1" || p[0].Raft != "127.0.0.1:7001" || p[1].Client != "db2:6389" || p[1].Raft != "[::1]:7002" {
		t.Fatalf("parsed %+v", p)
	}
	for in, want := range map[string]string{
		"":                      "none",
		"n1":                    "want id=",
		"=a:1@b:2":              "want id=",
		"n1=a:1":                "no @",
		"n1=a@b:2":              "not host:port",
		"n1=a:1@b":              "not host:port",
		"n1=a:0@b:2":            "not host:port",
		"n1=a:1@b:2,n1=c:1@d:2": "id n1 appears twice",
		"n1=a:1@b:2,n2=a:1@d:2": "raft a:1 appears twice",
		"n1=a:1@b:2,n2=c:1@b:2": "client b:2 appears twice",
	} {
		if _, err := ParsePeers(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
