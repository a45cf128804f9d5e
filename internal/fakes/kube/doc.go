// Package kube holds the Kubernetes test doubles shared by the project's
// packages: a scheme with the built-in types, a fake client with status
// subresources and injectable API faults, and a helper that starts a real
// kube-apiserver and etcd through envtest with the CRDs a test needs.
//
// The fake client keeps real state (controller-runtime's object tracker);
// Faults only decides, per call, whether the API answers with an error
// instead of (or after) doing the work, the way a flaky API server would.
//
// StartAPIServer never downloads binaries and never skips: when
// kube-apiserver or etcd is missing it fails the test and says how to build
// them. CRDs shipped inside Go modules come from the module cache (`go mod
// download` fetches them through the module proxy when absent).
package kube
