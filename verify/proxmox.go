package verify

import (
	"context"
	"errors"
	"fmt"

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
// error), and the guests (GET /cluster/resources?type=vm lists those it
// holds VM.Audit on).
func readProxmox(ctx context.Context, c Getter, tokenID string) (*Proxmox, error) {
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
	guests, err := pveapi.ClusterResources(ctx, c, pveapi.Guests)
	if err != nil {
		return nil, err
	}
	for _, g := range guests {
		p.VMs = append(p.VMs, PoolVM{VMID: g.VMID, Name: g.Name, Node: g.Node, Pool: g.Pool, Lock: g.Lock, Status: g.Status, Template: g.Template.Set()})
	}
	return p, nil
}
