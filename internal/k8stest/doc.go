// Package k8stest proves the repository's test cluster (scripts/k8s): its
// test, under the build tag k8s and as root, starts a real single-node
// Kubernetes with cluster.sh, runs Jobs shaped like agentbox's sandbox on it,
// and checks that cluster.sh down leaves the machine as it found it.
//
//	go test -tags k8s -count=1 -timeout 30m -v ./internal/k8stest/
package k8stest
