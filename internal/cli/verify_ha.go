package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/luthermonson/go-proxmox"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender/nodeverify"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pveha"
)

// haFlags reach the Proxmox VE API for verify's checks of what is on
// Proxmox: the HA resources (the pool HA token, or any token with
// Sys.Audit on /) and the worker VMs of the namespace's pools (the
// tenant's capmox token, or any token with VM.Audit on them).
type haFlags struct{ url, tokenID, secretFile, caFile string }

func (f *haFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "proxmox-url", "", "Proxmox VE API address, https://HOST:8006: also check the HA resources the controller made and the worker VMs of the namespace's pools (needs the next two flags)")
	fs.StringVar(&f.tokenID, "proxmox-token-id", "", "API token id, USER@REALM!TOKEN: Sys.Audit on / reads the HA resources (the pool HA token), VM.Audit on a pool its VMs (the tenant's capmox token)")
	fs.StringVar(&f.secretFile, "proxmox-token-secret-file", "", "file whose first line is that token's secret")
	fs.StringVar(&f.caFile, "proxmox-ca-file", "", "PEM file of CA certificates to trust for the API, besides the system roots")
}

func (f *haFlags) wanted() bool {
	return f.url != "" || f.tokenID != "" || f.secretFile != "" || f.caFile != ""
}

// client builds the client through pveapi.New (TLS verified).
func (f *haFlags) client(app *App) (pveapi.Client, error) {
	var missing []string
	for _, m := range []struct{ name, v string }{{"--proxmox-url", f.url}, {"--proxmox-token-id", f.tokenID}, {"--proxmox-token-secret-file", f.secretFile}} {
		if m.v == "" {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		return nil, usageError{fmt.Errorf("the Proxmox checks need %s too", strings.Join(missing, " and "))}
	}
	cfg := pveapi.Config{URL: f.url, TokenID: f.tokenID,
		Names: pveapi.Names{URL: "--proxmox-url", TokenID: "--proxmox-token-id", CA: "--proxmox-ca-file"}}
	var err error
	if f.caFile != "" {
		if cfg.CAPEM, err = readInput(app, f.caFile); err != nil {
			return nil, fmt.Errorf("cannot read --proxmox-ca-file: %w", err)
		}
	}
	// The file's first line, read as acl's --token-secret-file is.
	if cfg.Secret, err = readSecretFile(app, "--proxmox-token-secret-file", f.secretFile); err != nil {
		return nil, err
	}
	cfg.Names.Secret = "--proxmox-token-secret-file " + f.secretFile
	return pveapi.New(cfg)
}

// checkProxmox runs the checks of what is on Proxmox: the HA resources
// the controller made for Machines of namespace that are gone, and the
// VMs of the namespace's pools no ProxmoxMachine records. A check the
// token may not read is a warning naming the privilege, not a pass.
func (f *haFlags) checkProxmox(ctx context.Context, app *App, mgmt client.Reader, mapper meta.RESTMapper, namespace string) ([]nodeverify.ManagementFinding, error) {
	c, err := f.client(app)
	if err != nil {
		return nil, err
	}
	var findings []nodeverify.ManagementFinding
	var list []pveha.Resource
	switch err := c.Get(ctx, "/cluster/ha/resources", &list); {
	case errors.Is(err, proxmox.ErrNotAuthorized):
		findings = append(findings, nodeverify.ManagementFinding{Code: nodeverify.CodeHAResourcesNotVisible, Warning: true,
			Problem: fmt.Sprintf("token %s may not read the HA resources: HA resources left by gone Machines were not looked for", pveapi.RedactTokenID(f.tokenID)),
			Fix:     "run verify again with a token holding Sys.Audit on / (the pool HA token, platform.ha)"})
	case err != nil:
		return nil, fmt.Errorf("cannot read the HA resources: %w", err)
	default:
		var ours []nodeverify.HAResource
		for _, r := range list {
			if m := r.Machine(); m != "" {
				ours = append(ours, nodeverify.HAResource{SID: r.SID, Machine: m})
			}
		}
		ha, err := nodeverify.CheckHAResources(ctx, mgmt, mapper, namespace, ours)
		if err != nil {
			return nil, err
		}
		findings = append(findings, ha...)
	}
	// PVE lists the guests the token holds VM.Audit on; a token that holds
	// it on no pool VM gets CheckWorkerVMs's PoolNotVisible.
	vms, err := nodeverify.ReadPoolVMs(ctx, c)
	if err != nil {
		return nil, err
	}
	workers, err := nodeverify.CheckWorkerVMs(ctx, mgmt, mapper, namespace, vms)
	if err != nil {
		return nil, err
	}
	return append(findings, workers...), nil
}
