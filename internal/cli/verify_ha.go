package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender/nodeverify"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pveha"
)

// haFlags reach the Proxmox VE API with the pool HA token (or any token
// with Sys.Audit on /), for verify's HA resource check.
type haFlags struct{ url, tokenID, secretFile, caFile string }

func (f *haFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "proxmox-url", "", "Proxmox VE API address, https://HOST:8006: also check the HA resources the controller made (needs the next two flags)")
	fs.StringVar(&f.tokenID, "proxmox-token-id", "", "API token id with Sys.Audit on / (the pool HA token, platform.ha), USER@REALM!TOKEN")
	fs.StringVar(&f.secretFile, "proxmox-token-secret-file", "", "file whose first line is that token's secret")
	fs.StringVar(&f.caFile, "proxmox-ca-file", "", "PEM file of CA certificates to trust for the API, besides the system roots")
}

func (f *haFlags) wanted() bool {
	return f.url != "" || f.tokenID != "" || f.secretFile != "" || f.caFile != ""
}

// client builds the client through pveapi.New (TLS verified).
func (f *haFlags) client() (pveapi.Client, error) {
	var missing []string
	for _, m := range []struct{ name, v string }{{"--proxmox-url", f.url}, {"--proxmox-token-id", f.tokenID}, {"--proxmox-token-secret-file", f.secretFile}} {
		if m.v == "" {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		return nil, usageError{fmt.Errorf("the HA check needs %s too", strings.Join(missing, " and "))}
	}
	cfg := pveapi.Config{URL: f.url, TokenID: f.tokenID,
		Names: pveapi.Names{URL: "--proxmox-url", TokenID: "--proxmox-token-id", CA: "--proxmox-ca-file"}}
	var err error
	if f.caFile != "" {
		if cfg.CAPEM, err = readSmallFile(f.caFile); err != nil {
			return nil, fmt.Errorf("cannot read --proxmox-ca-file: %w", err)
		}
	}
	// The file's first line, read as acl's --token-secret-file is.
	if cfg.Secret, err = (&liveFlags{tokenSecretFile: f.secretFile}).secret(); err != nil {
		return nil, fmt.Errorf("--proxmox-token-secret-file: %w", err)
	}
	return pveapi.New(cfg)
}

// checkHAResources reads the HA resources and names those the controller
// made for Machines of namespace that are gone.
func (f *haFlags) checkHAResources(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, namespace string) ([]nodeverify.ManagementFinding, error) {
	c, err := f.client()
	if err != nil {
		return nil, err
	}
	var list []pveha.Resource
	if err := c.Get(ctx, "/cluster/ha/resources", &list); err != nil {
		return nil, fmt.Errorf("cannot read the HA resources (the token needs Sys.Audit on /): %w", err)
	}
	var ours []nodeverify.HAResource
	for _, r := range list {
		if m := r.Machine(); m != "" {
			ours = append(ours, nodeverify.HAResource{SID: r.SID, Machine: m})
		}
	}
	return nodeverify.CheckHAResources(ctx, mgmt, mapper, namespace, ours)
}
