package capi

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// Capmox is a generation of the Proxmox provider (capmox) whose manager
// Start runs; the zero value runs none.
type Capmox string

const (
	// CapmoxV09 is capmox testenv.CapmoxModule (v0.9.0): API v1alpha2 stored,
	// v1alpha1 still served through its conversion webhook, defaulting
	// and validating webhooks for ProxmoxCluster, ProxmoxClusterTemplate,
	// ProxmoxMachine and ProxmoxMachineTemplate.
	CapmoxV09 Capmox = "v0.9"
	// CapmoxV07 is capmox testenv.CapmoxV07Module (v0.7.2): API v1alpha1 only,
	// validating webhooks for ProxmoxCluster and ProxmoxMachine.
	CapmoxV07 Capmox = "v0.7"
)

// capmoxWebhookPort is the port capmox serves its webhooks on: its main
// sets it and has no flag for it. The webhooks listen on every address.
const capmoxWebhookPort = 9443

// component is one manager: its binary, the folder of the assets root it
// is built into, the module its manifests come from, and how it is told
// its ports.
type component struct {
	name, binary, dir, module string
	// flags are the manager's flags for webhookPort, healthPort and the
	// folder of its serving certificate.
	flags func(webhookPort, healthPort int, certDir string) []string
	// fixedWebhookPort is the webhook port of a manager that cannot be
	// given one (capmox); 0 means the port is chosen.
	fixedWebhookPort int
	// certDirFromTemp says that the manager takes its certificate from
	// $TMPDIR/k8s-webhook-server/serving-certs, controller-runtime's
	// default, having no flag for it (capmox).
	certDirFromTemp bool
}

var (
	coreComponent = component{
		name: "cluster-api", binary: "cluster-api-manager", dir: coreDir(), module: testenv.CAPIModule,
		flags: func(webhookPort, healthPort int, certDir string) []string {
			return []string{
				fmt.Sprintf("--webhook-port=%d", webhookPort), "--webhook-cert-dir=" + certDir, "--leader-elect=false",
				fmt.Sprintf("--health-addr=127.0.0.1:%d", healthPort), "--diagnostics-address=0", "--insecure-diagnostics",
			}
		},
	}
	ipamComponent = component{
		name: "ipam-in-cluster", binary: "ipam-manager", dir: coreDir(), module: testenv.CAPIIPAMModule,
		flags: func(webhookPort, healthPort int, certDir string) []string {
			return []string{
				fmt.Sprintf("--webhook-port=%d", webhookPort), "--webhook-cert-dir=" + certDir, "--leader-elect=false",
				fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", healthPort), "--metrics-bind-address=0",
			}
		},
	}
	// capmoxV09Component serves Cluster API's diagnostics flags (v1.12)
	// instead of --metrics-bind-address.
	capmoxV09Component = component{
		name: "capmox", binary: "capmox-manager", dir: "capmox-" + version(testenv.CapmoxModule), module: testenv.CapmoxModule,
		fixedWebhookPort: capmoxWebhookPort, certDirFromTemp: true,
		flags: func(_, healthPort int, _ string) []string {
			return []string{
				fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", healthPort), "--leader-elect=false",
				"--diagnostics-address=0", "--insecure-diagnostics",
			}
		},
	}
	capmoxV07Component = component{
		name: "capmox", binary: "capmox-manager", dir: "capmox-" + version(testenv.CapmoxV07Module), module: testenv.CapmoxV07Module,
		fixedWebhookPort: capmoxWebhookPort, certDirFromTemp: true,
		flags: func(_, healthPort int, _ string) []string {
			return []string{
				fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", healthPort), "--leader-elect=false",
				"--metrics-bind-address=0",
			}
		},
	}
	cabptComponent = component{
		name: "cabpt", binary: "cabpt-manager", dir: "cabpt-" + version(testenv.CABPTModule), module: testenv.CABPTModule,
		flags: func(webhookPort, healthPort int, certDir string) []string {
			return []string{
				fmt.Sprintf("--webhook-port=%d", webhookPort), "--webhook-cert-dir=" + certDir,
				"--enable-leader-election=false", fmt.Sprintf("--health-addr=127.0.0.1:%d", healthPort),
				"--diagnostics-address=0", "--insecure-diagnostics",
			}
		},
	}
)

// coreDir is the folder Cluster API core and the IPAM provider share:
// <capi>-ipam<ipam>.
func coreDir() string {
	return version(testenv.CAPIModule) + "-ipam" + version(testenv.CAPIIPAMModule)
}

// capmoxComponent returns the component of generation g.
func capmoxComponent(g Capmox) (component, error) {
	switch g {
	case CapmoxV09:
		return capmoxV09Component, nil
	case CapmoxV07:
		return capmoxV07Component, nil
	}
	return component{}, fmt.Errorf("capi.Start: unknown capmox generation %q (use capi.CapmoxV09 or capi.CapmoxV07)", string(g))
}

// components lists what o asks for, in start order: Cluster API core,
// the IPAM provider, CABPT, capmox.
func (o Options) components() ([]component, error) {
	var out []component
	if o.CAPI {
		out = append(out, coreComponent)
	}
	if o.IPAM {
		out = append(out, ipamComponent)
	}
	if o.CABPT {
		out = append(out, cabptComponent)
	}
	if o.Capmox != "" {
		c, err := capmoxComponent(o.Capmox)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// path is where the component's binary is under the assets root.
func (c component) path(root string) string { return filepath.Join(root, c.dir, c.binary) }

// title names the running manager in errors: its binary and version.
func (c component) title() string { return c.binary + " " + version(c.module) }

func version(moduleAtVersion string) string {
	_, v, _ := strings.Cut(moduleAtVersion, "@")
	return v
}
