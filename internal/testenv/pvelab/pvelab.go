// Package pvelab is the Proxmox VE side of a lab: the API fake
// (pvefake) with three nodes, each with a VLAN-aware bridge, and a
// Talos template made by talostemplate.Create, whose started VMs "boot":
// each reads the bootstrap ISO on its CD-ROM, validates its Talos machine
// configuration with Talos's machinery (internal/fake/talosboot) and
// registers its Node at the endpoint that configuration names
// (internal/fake/nodeagent). internal/testenv/lab runs it in its own process for
// tests; hack/cmd/pvelab runs it as a program of its own.
package pvelab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/nodeagent"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/talosboot"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// The lab's Proxmox VE.
const (
	// Cluster is the name of its cluster: the region of the CCM and CSI
	// credentials.
	Cluster = "lab"
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
	VMID int    `json:"vmid"`
	Node string `json:"node"`
	// Tags are the template's tags: a pool's proxmox.templateTags.
	Tags []string `json:"tags"`
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

// Proxmox is a running Proxmox VE fake of a lab.
type Proxmox struct {
	// Server is the fake; Template the Talos template on it.
	Server   *pvefake.Server
	Template Template

	tenant *rest.Config
	log    func(string)
	every  time.Duration
	mu     sync.Mutex
	boots  []Boot
	// kubelets are the VMs whose kubelet runs, by VMID and SMBIOS UUID
	// (a VMID is reused once its VM is destroyed).
	kubelets map[kubeletKey]bool
}

// Options configure Start.
type Options struct {
	// Tenant gives the credentials and CA of the tenant control plane at
	// which booted VMs register their Nodes (its Host is replaced by the
	// endpoint each VM's configuration names).
	Tenant *rest.Config
	// Log receives a line for each step and boot; nil discards them.
	Log func(string)
	// NodeStatusUpdateFrequency is how often a running VM's kubelet posts
	// its Node's status (DefaultNodeStatusUpdateFrequency unless set).
	NodeStatusUpdateFrequency time.Duration
	// HAFenceDelay, when set, is how long the HA manager waits after a
	// node goes offline before it recovers the node's services
	// (pvefake.WithHAFenceDelay; its default otherwise).
	HAFenceDelay time.Duration
}

// DefaultNodeStatusUpdateFrequency is the kubelet's own default
// (nodeStatusUpdateFrequency, 10s).
const DefaultNodeStatusUpdateFrequency = 10 * time.Second

// Start starts the fake, gives every node the bridge and makes the Talos
// template. Close stops it.
func Start(ctx context.Context, o Options) (*Proxmox, error) {
	if o.Tenant == nil {
		return nil, errors.New("pvelab: Options.Tenant is needed: booted VMs register their Nodes there")
	}
	if o.NodeStatusUpdateFrequency < 0 {
		return nil, fmt.Errorf("pvelab: NodeStatusUpdateFrequency %s is negative", o.NodeStatusUpdateFrequency)
	}
	p := &Proxmox{tenant: o.Tenant, log: o.Log, every: o.NodeStatusUpdateFrequency, kubelets: map[kubeletKey]bool{}}
	if p.every == 0 {
		p.every = DefaultNodeStatusUpdateFrequency
	}
	if p.log == nil {
		p.log = func(string) {}
	}
	opts := []pvefake.Option{pvefake.WithTLS(), pvefake.WithCluster(Cluster), pvefake.WithNodes(Nodes...),
		pvefake.WithDownloader(factoryImages{}), pvefake.WithBootHook(p.boot)}
	if o.HAFenceDelay > 0 {
		opts = append(opts, pvefake.WithHAFenceDelay(o.HAFenceDelay))
	}
	srv, err := pvefake.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot start the Proxmox VE fake: %w", err)
	}
	p.Server = srv
	if err := p.prepare(ctx); err != nil {
		srv.Close()
		return nil, err
	}
	return p, nil
}

// Close stops the fake.
func (p *Proxmox) Close() { p.Server.Close() }

func (p *Proxmox) prepare(ctx context.Context) error {
	srv := p.Server
	for _, n := range Nodes {
		if err := srv.SetInterface(n, pvefake.Interface{Name: Bridge, Type: "bridge", Ports: "eno2", VLANAware: true, VIDs: "2-4094"}); err != nil {
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
	p.Template = Template{VMID: res.Spec.VMID, Node: res.Node, Tags: res.Spec.Tags}
	p.log(fmt.Sprintf("Talos template %d on %s, tags %s", res.Spec.VMID, res.Node, strings.Join(res.Spec.Tags, ",")))
	return nil
}

// boot plays a started VM: it reads the CD-ROM capmox mounted (ide0),
// validates its Talos configuration and registers the Node at the
// endpoint the configuration names, with the tenant API server's
// credentials; then the VM's kubelet posts the Node's status while the VM
// runs.
func (p *Proxmox) boot(ctx context.Context, vm pvefake.BootingVM) error {
	b := Boot{VMID: vm.VMID, Node: vm.Node}
	err := p.register(ctx, vm, &b)
	b.Err = err
	p.mu.Lock()
	p.boots = append(p.boots, b)
	p.mu.Unlock()
	if err != nil {
		p.log(fmt.Sprintf("VM %d on %s did not boot: %v", vm.VMID, vm.Node, err))
	} else {
		p.log(fmt.Sprintf("VM %d on %s booted and registered node %s (%s) at %s", vm.VMID, vm.Node, b.NodeName, b.ProviderID, b.Endpoint))
	}
	return err
}

func (p *Proxmox) register(ctx context.Context, vm pvefake.BootingVM, b *Boot) error {
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
	agent, err := nodeagent.New(boot, p.tenant)
	if err != nil {
		return err
	}
	n, err := agent.Register(ctx)
	if err != nil {
		return err
	}
	b.NodeName, b.ProviderID = n.Name, n.Spec.ProviderID
	p.mu.Lock()
	defer p.mu.Unlock()
	k := kubeletKey{vm.VMID, vm.SMBIOSUUID()}
	if !p.kubelets[k] {
		p.kubelets[k] = true
		go p.kubelet(ctx, k, agent)
	}
	return nil
}

type kubeletKey struct {
	vmid int
	uuid string
}

// kubelet posts the status of a VM's Node every NodeStatusUpdateFrequency
// while the VM runs, as its kubelet does. A VM that stops, or whose
// Proxmox node goes offline, posts nothing; one that runs again (a start,
// or onboot when its node is back) posts again, as Talos boots from its
// disk and starts the kubelet. It ends when the VM is destroyed, its Node
// deleted, or the fake closed.
func (p *Proxmox) kubelet(ctx context.Context, k kubeletKey, a *nodeagent.Agent) {
	vmid := k.vmid
	defer func() {
		p.mu.Lock()
		delete(p.kubelets, k)
		p.mu.Unlock()
	}()
	t := time.NewTicker(p.every)
	defer t.Stop()
	pods := time.NewTicker(PodSyncFrequency)
	defer pods.Stop()
	lastErr := ""
	for {
		status := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			status = true
		case <-pods.C:
		}
		running, _, ok := p.Server.VMRunning(vmid)
		conf, _, _ := p.Server.VMConfig(vmid)
		if !ok || !strings.Contains(conf["smbios1"], "uuid="+k.uuid) {
			p.log(fmt.Sprintf("VM %d is destroyed: the kubelet of node %s is gone", vmid, a.Name()))
			return
		}
		if !running {
			continue
		}
		var err error
		if status {
			err = a.PostStatus(ctx)
		} else {
			err = a.SyncPods(ctx)
		}
		if errors.Is(err, nodeagent.ErrNodeGone) || apierrors.IsNotFound(err) && !status {
			p.log(fmt.Sprintf("VM %d: node %s was deleted; its kubelet stops", vmid, a.Name()))
			return
		}
		if err != nil && ctx.Err() == nil && err.Error() != lastErr {
			p.log(fmt.Sprintf("VM %d: %v", vmid, err))
		}
		if err != nil {
			lastErr = err.Error()
		}
	}
}

// PodSyncFrequency is how often a running VM's kubelet looks at its
// Pods and CSI volumes (nodeagent.Agent.SyncPods).
const PodSyncFrequency = time.Second

// Boots returns every boot so far, in order.
func (p *Proxmox) Boots() []Boot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Boot(nil), p.boots...)
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
