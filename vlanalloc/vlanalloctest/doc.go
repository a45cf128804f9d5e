// Package vlanalloctest provides an in-memory vlanalloc.Reserver for tests
// of code that allocates VLANs. It keeps real state (one record per provider
// network and ID, refused to a second network exactly as the Kubernetes
// store refuses it) and can inject failures. It never talks to a cluster.
package vlanalloctest
