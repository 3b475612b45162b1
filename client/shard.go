package client

import "hash/crc32"

// ShardFunc maps a key to the index of the server, among numServers, that
// holds it. The high-level types use it to spread keys over independent
// servers (not cluster members: see Dialer.Members for those).
type ShardFunc func(key string, numServers int) int

// CRC32Shard is the default ShardFunc: CRC-32 (IEEE) of the key modulo the
// number of servers, the same mapping as the Python client's
// zlib.crc32-based sharding, so clients in both languages agree on where a
// key lives. It returns 0 when numServers <= 0.
func CRC32Shard(key string, numServers int) int {
	if numServers <= 0 {
		return 0
	}
	return int(crc32.ChecksumIEEE([]byte(key)) % uint32(numServers))
}

// pickServer returns the server of key; no servers means DefaultAddr, and
// a nil shard CRC32Shard.
func pickServer(servers []string, shard ShardFunc, key string) string {
	if len(servers) == 0 {
		return DefaultAddr
	}
	if shard == nil {
		shard = CRC32Shard
	}
	return servers[shard(key, len(servers))]
}
