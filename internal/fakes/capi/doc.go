// Package capi starts the real managers of Cluster API core and of the
// in-cluster IPAM provider against a test API server, the way envtest starts
// kube-apiserver and etcd: binaries built once from the Go module proxy by
// hack/capi-assets.sh (versions: kube.CAPIModule and kube.CAPIIPAMModule),
// their CRDs and webhook configurations taken from the same modules' config
// folders, the webhooks served with a certificate of a throwaway CA
// (internal/fakes/pki) and called by the API server at 127.0.0.1.
//
// The configurations are what the modules' kustomizations would install,
// done by hand for the two patches that matter on a test API server: each
// CRD the module's config/crd/patches names gets its conversion webhook
// (strategy Webhook, path /convert) and its labels, and each webhook's
// service reference becomes a URL on the manager's port. The webhook
// configurations keep the names the modules' namePrefix gives them
// (capi-..., capi-ipam-in-cluster-...).
//
// StandInCRD makes a CRD for a kind whose provider is not served by the
// module proxy (the Talos bootstrap provider, Kamaji, Flux): it accepts any
// spec and status, carries the Cluster API contract label, and is called a
// stand-in wherever it is used.
package capi
