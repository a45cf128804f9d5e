package talostemplate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/capread"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
)

// VMResource is one guest of PVE's GET /cluster/resources?type=vm answer
// (pveapi.ClusterResource), reduced to the fields template selection reads
// and prints.
type VMResource struct {
	// ID is PVE's resource id, such as qemu/9000.
	ID   string `json:"id,omitempty"`
	Type string `json:"type,omitempty"`
	VMID int    `json:"vmid"`
	Name string `json:"name,omitempty"`
	Node string `json:"node,omitempty"`
	// Template is 1 for a template and 0 for a VM.
	Template Flag `json:"template"`
	// Tags is PVE's tag string: tags separated by ';'.
	Tags string `json:"tags,omitempty"`
	Pool string `json:"pool,omitempty"`
}

// Flag is PVE's 0/1 boolean (pveapi.Flag). It reads 0, 1, true and false
// and writes 0 or 1.
type Flag = pveapi.Flag

// vmResource is the guest r of PVE's answer, reduced to the fields
// template selection reads.
func vmResource(r pveapi.ClusterResource) VMResource {
	return VMResource{ID: r.ID, Type: r.Type, VMID: r.VMID, Name: r.Name, Node: r.Node, Template: r.Template, Tags: r.Tags, Pool: r.Pool}
}

func vmResources(rs []pveapi.ClusterResource) []VMResource {
	out := make([]VMResource, len(rs))
	for i, r := range rs {
		out[i] = vmResource(r)
	}
	return out
}

// ResourceLister yields the guests of a Proxmox VE cluster, as PVE's
// GET /cluster/resources?type=vm answers. Implementations: ResourcesFile
// here; an API client elsewhere.
type ResourceLister interface {
	ListVMResources(ctx context.Context) ([]VMResource, error)
}

// ResourcesFile reads the resource list from a JSON or YAML file holding
// either the data array of PVE's answer or the whole {"data": [...]} answer,
// of at most MaxResourcesBytes.
type ResourcesFile string

// MaxResourcesBytes is the largest file ResourcesFile reads: the cap
// every API client of this module puts on the same answer
// (pveapi.MaxResponseBytes), so a file of any size, or /dev/zero, is
// refused rather than read into memory.
const MaxResourcesBytes = pveapi.MaxResponseBytes

var _ ResourceLister = ResourcesFile("")

// ListVMResources reads and parses the file.
func (f ResourcesFile) ListVMResources(context.Context) ([]VMResource, error) {
	data, err := capread.File(string(f), MaxResourcesBytes)
	if err != nil {
		return nil, fmt.Errorf("cannot read cluster resources: %w", err)
	}
	rs, err := ParseResources(data)
	if err != nil {
		return nil, fmt.Errorf("cannot read cluster resources from %s: %w", string(f), err)
	}
	return rs, nil
}

// Resources is a resource list already read, such as ParseResources
// returns for a file the caller read with its own bound.
type Resources []VMResource

var _ ResourceLister = Resources(nil)

// ListVMResources returns the list.
func (r Resources) ListVMResources(context.Context) ([]VMResource, error) { return r, nil }

// ParseResources parses the answer of GET /cluster/resources?type=vm, in JSON
// or YAML, either the data array or the whole envelope: one document, as a
// file with a second document of data is refused rather than read in part.
func ParseResources(data []byte) ([]VMResource, error) {
	j, err := strictyaml.JSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidResources, err)
	}
	j = bytes.TrimSpace(j)
	switch {
	case bytes.HasPrefix(j, []byte("[")):
		var rs []pveapi.ClusterResource
		if err := json.Unmarshal(j, &rs); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidResources, err)
		}
		return vmResources(rs), nil
	case bytes.HasPrefix(j, []byte("{")):
		var env struct {
			Data *[]pveapi.ClusterResource `json:"data"`
		}
		if err := json.Unmarshal(j, &env); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidResources, err)
		}
		if env.Data == nil {
			return nil, fmt.Errorf("%w: the object has no data array; give the answer of pvesh get /cluster/resources --type vm --output-format json", ErrInvalidResources)
		}
		return vmResources(*env.Data), nil
	}
	return nil, fmt.Errorf("%w: want a list of guests or an object with a data list; give the answer of pvesh get /cluster/resources --type vm --output-format json", ErrInvalidResources)
}
