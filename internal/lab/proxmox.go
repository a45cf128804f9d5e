package lab

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/fakes/nodeagent"
	"github.com/pxsubstrate/pxsubstrate/internal/fakes/talosboot"
	"github.com/pxsubstrate/pxsubstrate/pveapi/pveapitest"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// The Proxmox side of the lab.
const (
	// Bridge is the VLAN-aware bridge of every node.
	Bridge = "vmbr1"
	// TemplateStorage holds the Talos template's disk.
	TemplateStorage = "local-lvm"
	// ImageStorage takes the downloaded image; no tenant reaches it.
	ImageStorage = "local"
	// talosVersion and schematic are the chart's default Talos image.
	talosVersion = "v1.13.6"
	schematic    = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	factoryURL   = "https://factory.talos.dev"
	templateVMID = "9000"
)

// Nodes are the fake's Proxmox nodes.
var Nodes = []string{"pve1", "pve2", "pve3"}

// Template is the Talos template the lab made with talostemplate.Create.
type Template struct {
	VMID int
	Node string
	// Tags are the template's tags: a pool's proxmox.templateTags.
	Tags []string
}

// Boot is one VM's boot as the lab saw it.
type Boot struct {
	VMID int
	Node string
	// Node registered, or Err why the VM did not boot or register.
	NodeName, ProviderID string
	Endpoint             string
	Err                  error
}

func (l *Lab) startProxmox(ctx context.Context) error {
	srv, err := pveapitest.New(pveapitest.WithTLS(), pveapitest.WithCluster("lab"), pveapitest.WithNodes(Nodes...),
		pveapitest.WithDownloader(factoryImages{}), pveapitest.WithBootHook(l.boot))
	if err != nil {
		return fmt.Errorf("cannot start the Proxmox VE fake: %w", err)
	}
	l.PVE = srv
	l.stops = append(l.stops, func() error { srv.Close(); return nil })
	for _, n := range Nodes {
		if err := srv.SetInterface(n, pveapitest.Interface{Name: Bridge, Type: "bridge", Ports: "eno2", VLANAware: true, VIDs: "2-4094"}); err != nil {
			return err
		}
	}
	spec, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: templateVMID, Storage: TemplateStorage,
		TalosVersion: talosVersion, SchematicID: schematic, FactoryURL: factoryURL})
	if err != nil {
		return err
	}
	res, err := talostemplate.Create(ctx, srv.Client(), spec, talostemplate.CreateOptions{Node: Nodes[0], PollInterval: 10 * time.Millisecond})
	if err != nil {
		return fmt.Errorf("cannot create the Talos template: %w", err)
	}
	l.Template = Template{VMID: res.Spec.VMID, Node: res.Node, Tags: res.Spec.Tags}
	l.log(fmt.Sprintf("Talos template %d on %s, tags %s", res.Spec.VMID, res.Node, strings.Join(res.Spec.Tags, ",")))
	return nil
}

// boot plays a started VM: it reads the CD-ROM capmox mounted (ide0),
// validates its Talos configuration and registers the Node at the
// endpoint the configuration names, with the tenant API server's
// credentials.
func (l *Lab) boot(ctx context.Context, vm pveapitest.BootingVM) error {
	b := Boot{VMID: vm.VMID, Node: vm.Node}
	err := l.register(ctx, vm, &b)
	b.Err = err
	l.mu.Lock()
	l.boots = append(l.boots, b)
	l.mu.Unlock()
	if err != nil {
		l.log(fmt.Sprintf("VM %d on %s did not boot: %v", vm.VMID, vm.Node, err))
	} else {
		l.log(fmt.Sprintf("VM %d on %s booted and registered node %s (%s) at %s", vm.VMID, vm.Node, b.NodeName, b.ProviderID, b.Endpoint))
	}
	return err
}

func (l *Lab) register(ctx context.Context, vm pveapitest.BootingVM, b *Boot) error {
	volid, iso, ok := vm.CDROM("ide0")
	if !ok {
		return fmt.Errorf("VM %d has no bootstrap ISO on ide0 (config ide0 %q)", vm.VMID, vm.Config["ide0"])
	}
	boot, err := talosboot.Read(iso)
	if err != nil {
		return fmt.Errorf("VM %d cannot boot %s: %w", vm.VMID, volid, err)
	}
	if uuid := vm.SMBIOSUUID(); boot.Meta.InstanceID != uuid {
		return fmt.Errorf("VM %d's meta-data names instance-id %q, not its SMBIOS UUID %q", vm.VMID, boot.Meta.InstanceID, uuid)
	}
	b.Endpoint = boot.Endpoint.String()
	n, err := nodeagent.Register(ctx, boot, l.Tenant)
	if err != nil {
		return err
	}
	b.NodeName, b.ProviderID = n.Name, n.Spec.ProviderID
	return nil
}

// Boots returns every boot so far, in order.
func (l *Lab) Boots() []Boot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Boot(nil), l.boots...)
}

// factoryImages stands in for the Image Factory: every nocloud image is a
// megabyte of zeros; the VM's boot reads its ISO, not its disk.
type factoryImages struct{}

func (factoryImages) Download(_ context.Context, url string, _ bool) (io.ReadCloser, error) {
	if !strings.HasPrefix(url, factoryURL+"/") || !strings.Contains(url, "/nocloud-amd64.") {
		return nil, fmt.Errorf("cannot download %s: 404 Not Found", url)
	}
	return io.NopCloser(bytes.NewReader(make([]byte, 1<<20))), nil
}
