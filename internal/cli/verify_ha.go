package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/luthermonson/go-proxmox"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pveha"
	"github.com/pxsubstrate/pxsubstrate/verify"
)

// proxmoxCheckFlags are verify's Proxmox connection flags (the one set,
// liveFlags, under the prefix proxmox-), which reach the Proxmox VE API for
// its checks of what is on Proxmox: the HA resources (the pool HA token,
// or any token with Sys.Audit on /) and the worker VMs of the namespace's
// pools (the tenant's capmox token, or any token with VM.Audit on them).
func proxmoxCheckFlags() liveFlags { return liveFlags{prefix: "proxmox-", need: "the Proxmox checks"} }

// bindProxmoxChecks binds f and says in --proxmox-url's and
// --proxmox-token-id's help what the checks read with them.
func bindProxmoxChecks(f *liveFlags, fs *pflag.FlagSet) {
	f.bind(fs)
	fs.Lookup(f.prefix + "url").Usage = "Proxmox VE API address, https://HOST:8006: also check the HA resources the controller made and the worker VMs of the namespace's pools (needs the next two flags)"
	fs.Lookup(f.prefix + "token-id").Usage = "API token id, USER@REALM!TOKEN: Sys.Audit on / reads the HA resources (the pool HA token), VM.Audit on a pool its VMs (the tenant's capmox token)"
	fs.Lookup(f.prefix + "token-secret-file").Usage = "file whose first line is that token's secret"
}

// checkProxmox runs the checks of what is on Proxmox: the HA resources
// the controller made for Machines of namespace that are gone, and the
// VMs of the namespace's pools no ProxmoxMachine records. A check the
// token may not read is a warning naming the privilege, not a pass.
func checkProxmox(ctx context.Context, app *App, f *liveFlags, mgmt client.Reader, mapper meta.RESTMapper, namespace string) ([]verify.ManagementFinding, error) {
	c, _, err := f.client(app)
	if err != nil {
		return nil, tlsHint(err)
	}
	var findings []verify.ManagementFinding
	var list []pveha.Resource
	switch err := c.Get(ctx, "/cluster/ha/resources", &list); {
	case errors.Is(err, proxmox.ErrNotAuthorized):
		findings = append(findings, verify.ManagementFinding{Code: verify.CodeHAResourcesNotVisible, Warning: true,
			Problem: fmt.Sprintf("token %s may not read the HA resources: HA resources left by gone Machines were not looked for", pveapi.RedactTokenID(f.tokenID)),
			Fix:     "run verify again with a token holding Sys.Audit on / (the pool HA token, platform.ha)"})
	case err != nil:
		return nil, fmt.Errorf("cannot read the HA resources: %w", err)
	default:
		var ours []verify.HAResource
		for _, r := range list {
			if m := r.Machine(); m != "" {
				ours = append(ours, verify.HAResource{SID: r.SID, Machine: m})
			}
		}
		ha, err := verify.CheckHAResources(ctx, mgmt, mapper, namespace, ours)
		if err != nil {
			return nil, err
		}
		findings = append(findings, ha...)
	}
	// PVE lists the guests the token holds VM.Audit on; a token that holds
	// it on no pool VM gets CheckWorkerVMs's PoolNotVisible.
	vms, err := verify.ReadPoolVMs(ctx, c)
	if err != nil {
		return nil, err
	}
	workers, err := verify.CheckWorkerVMs(ctx, mgmt, mapper, namespace, vms)
	if err != nil {
		return nil, err
	}
	return append(findings, workers...), nil
}
