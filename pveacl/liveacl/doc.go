// Package liveacl reads and changes the access control of a live Proxmox VE
// cluster through a Client: pveapi.New builds one.
//
// Read returns the cluster's state as a pveacl.Config, the same Config
// that parsing its user.cfg gives, with the guests and storages of
// /cluster/resources; it first checks that the token sees everything
// (ErrIncompleteView). Apply makes the cluster match a tenant
// specification: it reads the state, plans for the version the cluster
// runs (tenantplan.Plan, and tenantplan.Prune with WithPrune) and performs
// only the missing changes, each idempotently, so that a second run sends
// no changing request.
//
// Proxmox VE shows a new token's secret once. Apply hands it to a
// SecretSink (DirSink writes one JSON file per token, ManifestSink
// Kubernetes Secret manifests) and refuses to create tokens without one
// (ErrNoSecretSink). A Secret prints as "[redacted]"; no Config, Change,
// Result or error holds one.
package liveacl

import "context"

// Client is the Proxmox VE API as liveacl calls it: requests relative to
// the API base URL, answers decoded from PVE's {"data": ...} envelope, and
// PVE's errors as go-proxmox's *proxmox.APIError. It is declared here, where
// it is used; pveapi.Client has the same methods, and every client
// pveapi.New builds satisfies it. The guests and storages outside every pool
// are read through pveapi.ClusterResources, the one reading of GET
// /cluster/resources.
type Client interface {
	Get(ctx context.Context, path string, v any) error
	Post(ctx context.Context, path string, data, v any) error
	Put(ctx context.Context, path string, data, v any) error
	Delete(ctx context.Context, path string, v any) error
}
