// Package capi starts the real managers of Cluster API core, of the
// in-cluster IPAM provider, of the Proxmox provider (capmox, v0.9.0 or
// v0.7.2) and of the Talos bootstrap provider (CABPT) against a test API
// server, the way envtest starts kube-apiserver and etcd: binaries built
// once from the Go module proxy by hack/capi-assets.sh (versions: the
// module constants of internal/testenv), their CRDs and webhook
// configurations taken from the same modules' config folders, the webhooks
// served with a certificate of a throwaway CA (internal/testenv/pki) and
// called by the API server at 127.0.0.1.
//
// The configurations are what the modules' kustomizations would install,
// done by hand for what matters on a test API server: the labels
// config/crd/kustomization.yaml gives every CRD (commonLabels: the
// contract labels of capmox and CABPT), and each CRD patch it lists (under
// patches or patchesStrategicMerge) for its labels and its conversion
// webhook (strategy Webhook, path /convert, trusting the test CA in place
// of cert-manager's injection); a patch or a kustomization key setting
// anything else is refused by name. Each webhook's service reference
// becomes a URL on the manager's port, and the webhook configurations keep
// the names config/default's namePrefix gives them (capi-...,
// capi-ipam-in-cluster-..., capmox-..., cabpt-...).
//
// capmox cannot be told its webhook port or certificate folder: it serves
// on port 9443 of every address, so Start runs it in a network namespace
// of its own joined to the machine's loopback by forwarders (isolated),
// and where the test process may not make one, holds a lock of that port
// (a file of the temporary folder, flock(2)) from before its manifests
// are installed until the manager has stopped; it reads the certificate
// from controller-runtime's default folder under $TMPDIR, which Start sets
// to a folder of its own. No manager inherits PROXMOX_* from the test
// process.
//
// StandInCRD makes a CRD for a kind whose provider is not served by the
// module proxy (Kamaji, Flux): it accepts any spec and status, carries the
// Cluster API contract label, and is called a stand-in wherever it is used.
package capi
