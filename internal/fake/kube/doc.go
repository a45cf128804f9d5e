// Package kube holds the in-memory Kubernetes test doubles shared by the
// project's packages: a scheme with the built-in types, a fake client with
// status subresources and injectable API faults, and a request counter.
//
// The fake client keeps real state (controller-runtime's object tracker);
// Faults only decides, per call, whether the API answers with an error
// instead of (or after) doing the work, the way a flaky API server would.
//
// A real kube-apiserver and etcd are started by internal/testenv
// (StartAPIServer).
package kube
