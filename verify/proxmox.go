package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pveha"
)

// Getter reads a path of the Proxmox VE API into v, as pveapi.Client does.
type Getter interface {
	Get(ctx context.Context, path string, v any) error
}

// readProxmox reads what the token may see: the HA resources the
// controller made (a token that may not read them, HAHidden, is no
// error), the guests (GET /cluster/resources?type=vm lists those it
// holds VM.Audit on) with their nodes' state, and the configuration of
// each VM on an online node that the worker VM checks may flag
// (ix.mayHeal), for its age and current lock.
func readProxmox(ctx context.Context, c Getter, tokenID string, ix workerIndex) (*Proxmox, error) {
	p := &Proxmox{TokenID: pveapi.RedactTokenID(tokenID)}
	var list []pveha.Resource
	switch err := c.Get(ctx, "/cluster/ha/resources", &list); {
	case errors.Is(err, proxmox.ErrNotAuthorized):
		p.HAHidden = true
	case err != nil:
		return nil, fmt.Errorf("cannot read the HA resources: %w", err)
	default:
		for _, r := range list {
			if m := r.Machine(); m != "" {
				p.HAResources = append(p.HAResources, HAResource{SID: r.SID, Machine: m})
			}
		}
	}
	nodes, err := pveapi.ClusterResources(ctx, c, pveapi.Nodes)
	if err != nil {
		return nil, err
	}
	offline := map[string]bool{}
	for _, n := range nodes {
		offline[n.Node] = n.Status != "online"
	}
	guests, err := pveapi.ClusterResources(ctx, c, pveapi.Guests)
	if err != nil {
		return nil, err
	}
	for _, g := range guests {
		vm := PoolVM{VMID: g.VMID, Name: g.Name, Node: g.Node, Pool: g.Pool, Lock: g.Lock, Status: g.Status, Template: g.Template.Set(),
			NodeOffline: offline[g.Node] || g.Status == "unknown"}
		if g.Tags != "" {
			vm.Tags = strings.Split(g.Tags, ";")
		}
		if g.Type == "qemu" && !vm.NodeOffline && ix.mayHeal(vm) {
			conf, err := pveapi.ReadGuestConfig(ctx, c, g.Node, g.VMID)
			if gone(err) {
				continue // destroyed since the list: nothing to judge
			}
			if err != nil {
				return nil, err
			}
			vm.Created, vm.Lock = conf.Created(), conf.Lock
		}
		p.VMs = append(p.VMs, vm)
	}
	return p, nil
}

// gone says whether err is PVE's answer for a VM whose configuration file
// no longer exists (500 "Configuration file '...' does not exist").
func gone(err error) bool {
	return err != nil && strings.Contains(err.Error(), "does not exist")
}
