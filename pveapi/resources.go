package pveapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// ClusterResource is one element of PVE's GET /cluster/resources answer: a
// guest (type qemu or lxc), a storage, a node, a pool or an SDN zone, with
// the fields this module reads of each; PVE sends more, which are left
// out. It is the one decoding of that answer: pveacl's live reader (the
// guests and storages outside every pool), talostemplate (the guests
// templates are selected from) and verify (the worker VMs
// of the tenants' pools) all read it through ClusterResources.
type ClusterResource struct {
	// ID is PVE's resource id, such as qemu/9000 or storage/pve1/local.
	ID string `json:"id,omitempty"`
	// Type is qemu, lxc, storage, node, pool or sdn.
	Type string `json:"type,omitempty"`
	// Node is the node a guest runs on or a storage's entry is of.
	Node string `json:"node,omitempty"`
	// VMID and Name are a guest's id and name.
	VMID int    `json:"vmid,omitempty"`
	Name string `json:"name,omitempty"`
	// Template is 1 for a template and 0 for a VM.
	Template Flag `json:"template,omitempty"`
	// Tags is PVE's tag string: tags separated by ';'.
	Tags string `json:"tags,omitempty"`
	// Status is a guest's running, stopped, paused, or unknown (its node
	// offline); Lock its lock (clone while a clone task runs).
	Status string `json:"status,omitempty"`
	Lock   string `json:"lock,omitempty"`
	// Pool is the pool the guest or storage is a member of.
	Pool string `json:"pool,omitempty"`
	// Storage is a storage's id.
	Storage string `json:"storage,omitempty"`
}

// Kinds of resource GET /cluster/resources lists by its type parameter.
const (
	// AllResources lists every resource.
	AllResources = ""
	// Guests lists the guests (type=vm): qemu VMs and lxc containers.
	Guests = "vm"
	// Nodes lists the cluster's nodes (type=node), with Status online or
	// offline.
	Nodes = "node"
)

// Getter reads a path of the API into v: the read half of Client.
type Getter interface {
	Get(ctx context.Context, path string, v any) error
}

// ClusterResources reads GET /cluster/resources: of kind (AllResources,
// Guests), the resources c's token may see (PVE lists a guest to a token
// with VM.Audit on it, a storage with Datastore.Audit).
func ClusterResources(ctx context.Context, c Getter, kind string) ([]ClusterResource, error) {
	path, what := "/cluster/resources", "the cluster resources"
	if kind != AllResources {
		path += "?type=" + kind
	}
	if kind == Guests {
		what = "the cluster's guests"
	}
	var rs []ClusterResource
	if err := c.Get(ctx, path, &rs); err != nil {
		return nil, fmt.Errorf("cannot read %s (GET %s): %w", what, path, err)
	}
	return rs, nil
}

// Flag is PVE's 0/1 boolean. It reads 0, 1, true and false and writes 0 or 1.
type Flag int

// UnmarshalJSON reads a number or a JSON boolean.
func (f *Flag) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*f = 1
		return nil
	case "false", "null":
		*f = 0
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil || (n != 0 && n != 1) {
		return fmt.Errorf("template is %s: want 0 or 1", b)
	}
	*f = Flag(n)
	return nil
}

// Set says whether the flag is 1.
func (f Flag) Set() bool { return f == 1 }
