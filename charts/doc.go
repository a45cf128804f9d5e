// Package charts holds the tests of the Helm charts beside it
// (proxmox-network-crds and proxmox-network), in a module of its own so
// that the library's users never build Helm. hack/test.sh runs them.
package charts
