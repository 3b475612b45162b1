// Package kubernetes holds no code: it is the module of the tests of the
// Kubernetes manifests beside it (cluster.yaml, single-node.yaml). They
// decode every manifest strictly into the upstream API types and check
// that its parts name each other (labels, ports, volumes, Secrets, the
// server's flags), then run the members' command lines as processes.
//
// A module of its own, outside go.work, so that the server's go.mod does
// not gain the Kubernetes API's dependencies; .ci/run tests it with
// GOWORK=off.
package kubernetes
