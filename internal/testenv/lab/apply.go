package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/luthermonson/go-proxmox"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/cozyid"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// Tenant is one tenant cluster as a user writes it: its Kubernetes and
// KubernetesNodes, in the tenant's namespace.
type Tenant struct {
	Cluster capmoxrender.Kubernetes
	Pools   []capmoxrender.KubernetesNodes
	// VPCs are the tenant's VPCs, as `pxsubstrate render vpc` reads them:
	// Apply renders and applies them first (ApplyVPCs).
	VPCs []VPC
	// Plan, when set, amends the tenant's specification before its ACLs
	// are applied, as the platform's admin writes it: more templates,
	// linked-clone storages or networks.
	Plan func(*tenantplan.Tenant)
	// Mutate, when set, amends each rendered object before it is
	// created: a field the render does not write.
	Mutate func(*unstructured.Unstructured) error
	// RenderWithoutTenants renders the pools without the tenant
	// specification (capmoxrender.Options.PoolTenants), as render nodes
	// does without --tenants: a pool's gpus are then not checked against
	// the tenant's pciMappings, and only Proxmox VE's own check stands
	// between the tenant's capmox token and a PCI mapping it was not
	// granted.
	RenderWithoutTenants bool
	// Lookup are further objects the render reads, such as the
	// ProxmoxNetwork of a VPC subnet a pool's NIC attaches to, as the
	// proxmox-network controller reports it.
	Lookup []*unstructured.Unstructured
	// lookup holds the Kubernetes object as the render's cluster lookup
	// reads it (a pool without a version takes its cluster's).
	lookup *capmoxrender.Objects
}

// Applied is what Apply made for a tenant.
type Applied struct {
	// TokenID is the tenant's capmox token, minted by the ACL apply, and
	// CCMTokenID and CSITokenID its CCM's and CSI controller's.
	TokenID, CCMTokenID, CSITokenID string
	// Spec is the tenant specification the ACLs were applied from.
	Spec *tenantplan.Tenants
	// Objects are the rendered objects, as created.
	Objects []*unstructured.Unstructured
	// ClusterName is the Cluster API Cluster's name.
	ClusterName string
	// Networks are the ProxmoxNetworks of the tenant's VPCs' Proxmox-backed
	// subnets, Ready with their VLANs.
	Networks []Network
}

// CapmoxSecretSuffix names the Secret of a cluster's capmox credentials,
// <Kubernetes name>-capmox, when proxmox.capmox.credentialsSecretName is
// not given.
const CapmoxSecretSuffix = "-capmox"

// Apply does for t what Cozystack and the proxmox-network controller do:
// its VPCs and their networks' VLANs (ApplyVPCs); the tenant's Proxmox
// user, pool, storages and capmox token (the ACL plan of TenantSpec,
// applied through the API), the capmox credentials Secret with that
// token, the render of the cluster and its pools, and the objects on the
// management API server; then it plays Kamaji for the cluster. Workers
// then come up on their own.
func (l *Lab) Apply(ctx context.Context, t Tenant) (*Applied, error) {
	nets, err := l.ApplyVPCs(ctx, &t)
	if err != nil {
		return nil, err
	}
	a, err := l.ApplyACLs(ctx, &t)
	if err != nil {
		return nil, err
	}
	a.Networks = nets
	return a, l.ApplyObjects(ctx, t, a)
}

// ApplyACLs is Apply's first half: it checks and renders t (refusing
// before anything is made), then applies the tenant's ACLs, mints its
// capmox token and writes the capmox credentials Secret. A test may
// change the hypervisor between it and ApplyObjects.
func (l *Lab) ApplyACLs(ctx context.Context, t *Tenant) (*Applied, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.lookup == nil {
		t.lookup = &capmoxrender.Objects{}
	}
	for _, u := range t.Lookup {
		t.lookup.Add(u)
	}
	spec := l.TenantSpec(*t)
	if t.Cluster.Spec.Proxmox.Capmox.CredentialsSecretName == "" {
		t.Cluster.Spec.Proxmox.Capmox.CredentialsSecretName = t.Cluster.Name + CapmoxSecretSuffix
	}
	// Refuse a render the lab would refuse half-way, before anything is
	// made: the pools render again once Kamaji's Service has its address.
	if err := l.dryRender(ctx, *t, spec); err != nil {
		return nil, err
	}
	if err := l.checkNew(ctx, t.Cluster); err != nil {
		return nil, err
	}
	a := &Applied{Spec: spec}
	tokens, err := l.applyACLs(ctx, spec, t.Cluster.Namespace)
	if err != nil {
		return nil, err
	}
	a.TokenID, a.CCMTokenID, a.CSITokenID = tokens.capmox.TokenID, tokens.ccm.TokenID, tokens.csi.TokenID
	ns := t.Cluster.Namespace
	if err := l.createNamespace(ctx, ns); err != nil {
		return nil, err
	}
	if err := l.createCapmoxSecret(ctx, t.Cluster, tokens.capmox); err != nil {
		return nil, err
	}
	px := t.Cluster.Spec.Proxmox
	// A later cluster of the tenant finds the CCM and CSI tokens in an
	// earlier one's credentials Secrets; the CSI's only if that one had
	// CSI on.
	csiID, ccmID := spec.Defaulted().Tenants[0].TokenIDs()
	if tokens.ccm.TokenID == "" {
		return nil, noToken(ns, ccmID)
	}
	if err := l.createCredentialsSecret(ctx, ns, px.CCM.CredentialsSecretName, tokens.ccm); err != nil {
		return nil, err
	}
	if px.CSI.On() {
		if tokens.csi.TokenID == "" {
			return nil, noToken(ns, csiID)
		}
		if err := l.createCredentialsSecret(ctx, ns, px.CSI.CredentialsSecretName, tokens.csi); err != nil {
			return nil, err
		}
		if err := l.installTenantCSI(ctx, px.CSI.StorageClasses); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// ApplyObjects is Apply's second half: the render and the objects of t on
// the management API server, with Kamaji's part played between the
// cluster and its pools.
func (l *Lab) ApplyObjects(ctx context.Context, t Tenant, a *Applied) error {
	opts, err := l.renderOptions(ctx, t, a.Spec)
	if err != nil {
		return err
	}
	cluster, err := capmoxrender.RenderCluster(ctx, t.Cluster, opts)
	if err != nil {
		return fmt.Errorf("cannot render Kubernetes %s/%s: %w", t.Cluster.Namespace, t.Cluster.Name, err)
	}
	if err := l.create(ctx, a, cluster, t.Mutate); err != nil {
		return err
	}
	svc, err := l.playKamaji(ctx, t.Cluster.Namespace, a.ClusterName)
	if err != nil {
		return err
	}
	// The pools render once Kamaji's Service has its address, which the
	// render writes into the workers' extraHostEntries.
	t.lookup.Add(svc)
	for _, p := range t.Pools {
		objs, err := capmoxrender.RenderNodes(ctx, p, opts)
		if err != nil {
			return fmt.Errorf("cannot render KubernetesNodes %s/%s: %w", p.Namespace, p.Name, err)
		}
		if err := l.create(ctx, a, objs, t.Mutate); err != nil {
			return err
		}
	}
	l.log(fmt.Sprintf("tenant %s: %d objects created, capmox token %s", t.Cluster.Namespace, len(a.Objects), a.TokenID))
	return nil
}

// checkNew refuses a cluster applied before: its credentials Secret
// exists.
func (l *Lab) checkNew(ctx context.Context, k capmoxrender.Kubernetes) error {
	var sec corev1.Secret
	err := l.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Spec.Proxmox.Capmox.CredentialsSecretName}, &sec)
	switch {
	case err == nil:
		return fmt.Errorf("Kubernetes %s/%s is applied already (its capmox Secret %s exists): the lab applies a cluster once; start afresh with hack/lab.sh down and up",
			k.Namespace, k.Name, sec.Name)
	case apierrors.IsNotFound(err):
		return nil
	}
	return fmt.Errorf("cannot read Secret %s/%s: %w", k.Namespace, k.Spec.Proxmox.Capmox.CredentialsSecretName, err)
}

// UpdatePools renders t's pools again and applies what the render makes
// (server-side apply, forced, as field manager FieldManager), as an
// upgrade of the KubernetesNodes' release does: a changed replicas count
// scales the MachineDeployment, a changed size or template makes a new
// machine template and rolls the pool. Objects of the earlier render that
// the new one no longer makes are left, as the render's own retention
// keeps the templates a MachineSet still names.
func (l *Lab) UpdatePools(ctx context.Context, t Tenant, a *Applied) error {
	opts, err := l.renderOptions(ctx, t, a.Spec)
	if err != nil {
		return err
	}
	for _, p := range t.Pools {
		objs, err := capmoxrender.RenderNodes(ctx, p, opts)
		if err != nil {
			return fmt.Errorf("cannot render KubernetesNodes %s/%s: %w", p.Namespace, p.Name, err)
		}
		for _, o := range objs {
			if err := l.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.ForceOwnership, client.FieldOwner(FieldManager)); err != nil {
				return fmt.Errorf("cannot apply %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
	}
	return nil
}

// FieldManager is the field manager of the lab's server-side applies.
const FieldManager = "pxsubstrate-lab"

// dryRender renders the cluster and its pools and discards them.
func (l *Lab) dryRender(ctx context.Context, t Tenant, spec *tenantplan.Tenants) error {
	opts, err := l.renderOptions(ctx, t, spec)
	if err != nil {
		return err
	}
	opts.Warn = nil
	if _, err := capmoxrender.RenderCluster(ctx, t.Cluster, opts); err != nil {
		return fmt.Errorf("cannot render Kubernetes %s/%s: %w", t.Cluster.Namespace, t.Cluster.Name, err)
	}
	for _, p := range t.Pools {
		if _, err := capmoxrender.RenderNodes(ctx, p, opts); err != nil {
			return fmt.Errorf("cannot render KubernetesNodes %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}

// create creates objs on the management API server, each amended by
// mutate when it is set, and records them.
func (l *Lab) create(ctx context.Context, a *Applied, objs []*unstructured.Unstructured, mutate func(*unstructured.Unstructured) error) error {
	for _, o := range objs {
		if o.GetKind() == "Cluster" {
			a.ClusterName = o.GetName()
		}
		if mutate != nil {
			if err := mutate(o); err != nil {
				return fmt.Errorf("cannot amend %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
		if err := l.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("cannot create %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		a.Objects = append(a.Objects, o)
	}
	return nil
}

// check refuses a tenant Apply cannot make: pools of another namespace or
// cluster, or no pool.
func (t Tenant) check() error {
	if t.Cluster.Name == "" || t.Cluster.Namespace == "" {
		return fmt.Errorf("the Kubernetes object needs metadata.name and metadata.namespace")
	}
	for _, p := range t.Pools {
		switch {
		case p.Namespace != t.Cluster.Namespace:
			return fmt.Errorf("KubernetesNodes %s is in namespace %s, not in its cluster's %s: put it in %s", p.Name, p.Namespace, t.Cluster.Namespace, t.Cluster.Namespace)
		case p.Spec.Cluster != t.Cluster.Name:
			return fmt.Errorf("KubernetesNodes %s: spec.cluster is %q, not %q: a file of pools belongs to the Kubernetes applied with it", p.Name, p.Spec.Cluster, t.Cluster.Name)
		}
	}
	seen := map[string]string{}
	for _, v := range t.VPCs {
		switch {
		case v.Spec.Namespace != t.Cluster.Namespace:
			return fmt.Errorf("%s: namespace is %q, not %s, the namespace of Kubernetes %s: a tenant's VPC lives in the tenant's namespace", v.Where, v.Spec.Namespace, t.Cluster.Namespace, t.Cluster.Name)
		case seen[v.Spec.Name] != "":
			return fmt.Errorf("%s: name: VPC %q is given twice (also at %s): give each VPC once", v.Where, v.Spec.Name, seen[v.Spec.Name])
		}
		seen[v.Spec.Name] = v.Where
	}
	return nil
}

// TenantSpec is the tenant specification of t, as the platform keeps one
// per tenant namespace: the namespace's name, the pools' Proxmox pool (the
// namespace when they name none), a disk storage <tenant>-disks and an
// ISO storage <tenant>-iso for capmox's bootstrap ISOs, the pools'
// bridges and VLANs (for a NIC on a VPC subnet, the bridge and VLAN the
// controller reports in the subnet's ProxmoxNetwork, read from t's
// lookup), the lab's Talos template and a capmox token of the tenant's
// own; then t.Plan's amendments.
func (l *Lab) TenantSpec(t Tenant) *tenantplan.Tenants {
	name := t.Cluster.Namespace
	tn := tenantplan.Tenant{Name: name, Pool: name, Storage: name + "-disks", Storages: []string{name + "-iso"},
		Templates: []int{l.Template.VMID}, LinkedCloneStorages: []string{pvelab.TemplateStorage},
		Tokens: tenantplan.TenantTokens{Capmox: "capmox", CCM: "ccm", CSI: "csi"}}
	vlans := map[string][]int{}
	for _, p := range t.Pools {
		if p.Spec.Proxmox.Pool != "" {
			tn.Pool = p.Spec.Proxmox.Pool
		}
		for _, n := range t.subnetNetworks(p) {
			vlans[n.Bridge] = append(vlans[n.Bridge], n.VLAN)
		}
		nw := p.Spec.Proxmox.Network
		if nw.Bridge == "" {
			continue
		}
		if nw.VLAN != nil {
			vlans[nw.Bridge] = append(vlans[nw.Bridge], int(*nw.VLAN))
		} else if _, ok := vlans[nw.Bridge]; !ok {
			vlans[nw.Bridge] = nil
		}
	}
	for _, br := range sortedKeys(vlans) {
		vs := slices.Compact(slices.Sorted(slices.Values(vlans[br])))
		tn.Networks = append(tn.Networks, tenantplan.Network{Bridge: br, VLANs: vs, Untagged: len(vs) == 0})
	}
	if t.Plan != nil {
		t.Plan(&tn)
	}
	return &tenantplan.Tenants{Platform: tenantplan.Platform{SharedStorages: []string{pvelab.ImageStorage}}, Tenants: []tenantplan.Tenant{tn}}
}

// subnetNetworks are the networks of pool p's NICs on VPC subnets that t's
// lookup holds with a bridge and a VLAN: what the controller assigned.
// A network whose zone gives it a Proxmox SDN VNet (status.vnet) is the
// platform's to grant by VNet (tenantplan.Network.VNets, with the SDN
// zone its ProxmoxNetwork does not name); the lab's zone has none.
func (t Tenant) subnetNetworks(p capmoxrender.KubernetesNodes) []capmoxrender.ProxmoxNetwork {
	if t.lookup == nil {
		return nil
	}
	refs := []capmoxrender.SubnetRef{{VPC: p.Spec.Proxmox.Network.VPC, Subnet: p.Spec.Proxmox.Network.Subnet}}
	for _, a := range p.Spec.Proxmox.AdditionalNetworks {
		refs = append(refs, capmoxrender.SubnetRef{VPC: a.VPC, Subnet: a.Subnet})
	}
	var out []capmoxrender.ProxmoxNetwork
	for _, r := range refs {
		if r.VPC == "" || r.Subnet == "" {
			continue
		}
		id := cozyid.Subnet(p.Namespace, cozyid.VPC(p.Namespace, cozyid.VPCName(r.VPC)), cozyid.SubnetName(r.Subnet))
		n, ok, err := t.lookup.ProxmoxNetwork(context.Background(), p.Namespace, string(id))
		if err == nil && ok && n.Bridge != "" && n.VLAN > 0 && n.VNet == "" {
			out = append(out, n)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// tenantTokens are the tokens the ACL apply mints for a tenant.
type tenantTokens struct{ capmox, ccm, csi liveacl.TokenSecret }

// applyACLs adds the tenant's storages to the fake (where the platform's
// storage admin made them) and applies its ACL plan with the root token,
// returning the tenant's new capmox, CCM and CSI tokens.
func (l *Lab) applyACLs(ctx context.Context, spec *tenantplan.Tenants, ns string) (tenantTokens, error) {
	tn := spec.Tenants[0]
	root, err := l.Root()
	if err != nil {
		return tenantTokens{}, err
	}
	if err := addStorage(ctx, root, tn.Storage, "lvmthin", "images"); err != nil {
		return tenantTokens{}, err
	}
	for _, s := range tn.Storages {
		if err := addStorage(ctx, root, s, "dir", "iso"); err != nil {
			return tenantTokens{}, err
		}
	}
	keep := tokenKeep{}
	if _, err := liveacl.Apply(ctx, root, spec, liveacl.WithSecretSink(keep), liveacl.WithSecretContext(l.proxmoxURL(), "lab")); err != nil {
		return tenantTokens{}, fmt.Errorf("cannot apply the ACLs of tenant %s: %w", ns, err)
	}
	d := spec.Defaulted().Tenants[0]
	csiID, ccmID := d.TokenIDs()
	var out tenantTokens
	for _, want := range []struct {
		id, idKey, secretKey string
		into                 *liveacl.TokenSecret
	}{{d.CapmoxTokenID(), "token", "secret", &out.capmox}, {ccmID, "token_id", "token_secret", &out.ccm}, {csiID, "token_id", "token_secret", &out.csi}} {
		if s, ok := keep[want.id]; ok {
			*want.into = s
			continue
		}
		// A second cluster of the tenant: the token was minted for its
		// first, whose credentials Secret holds it.
		var secrets corev1.SecretList
		if err := l.Client.List(ctx, &secrets, client.InNamespace(ns)); err != nil {
			return tenantTokens{}, err
		}
		for _, sec := range secrets.Items {
			if string(sec.Data[want.idKey]) == want.id && len(sec.Data[want.secretKey]) > 0 {
				*want.into = liveacl.TokenSecret{URL: string(sec.Data["url"]), TokenID: want.id, Secret: liveacl.Secret(sec.Data[want.secretKey]),
					Tenant: tn.Name, Capmox: want.into == &out.capmox}
			}
		}
		if want.into.TokenID == "" && want.into == &out.capmox {
			return tenantTokens{}, noToken(ns, want.id)
		}
	}
	return out, nil
}

// noToken says a token of tenant ns was neither minted nor found.
func noToken(ns, id string) error {
	return fmt.Errorf("the ACL apply of tenant %s minted no token %s, and no credentials Secret of an earlier cluster of the tenant holds it", ns, id)
}

// addStorage creates a storage through the API (POST /storage) as the
// platform's storage administrator would: an LVM-thin pool on volume
// group pve, or a folder under /var/lib/pxsubstrate-lab. A storage that
// exists already is kept.
func addStorage(ctx context.Context, c *proxmox.Client, id, typ, content string) error {
	params := map[string]any{"storage": id, "type": typ, "content": content}
	switch typ {
	case "lvmthin":
		params["vgname"], params["thinpool"] = "pve", id
	case "dir":
		params["path"] = "/var/lib/pxsubstrate-lab/" + id
	}
	err := c.Post(ctx, "/storage", params, nil)
	if err != nil && !strings.Contains(err.Error(), "already defined") {
		return fmt.Errorf("cannot add storage %s: %w", id, err)
	}
	return nil
}

// tokenKeep is the lab's sink of the token secrets an apply mints: it
// keeps them in memory by token id.
type tokenKeep map[string]liveacl.TokenSecret

func (tokenKeep) Check([]string) error { return nil }

func (k tokenKeep) Store(s liveacl.TokenSecret) (string, error) {
	k[s.TokenID] = s
	return "the lab's memory", nil
}

// proxmoxURL is the fake's address as capmox takes it: without
// /api2/json, which capmox appends.
func (l *Lab) proxmoxURL() string { return strings.TrimSuffix(l.Proxmox.URL, "/api2/json") }

func (l *Lab) createNamespace(ctx context.Context, ns string) error {
	err := l.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// createCapmoxSecret writes the cluster's capmox credentials as
// docs/capmoxrender.md documents them: url, token, secret, insecure
// "false" and the fake's CA as root_ca.
func (l *Lab) createCapmoxSecret(ctx context.Context, k capmoxrender.Kubernetes, s liveacl.TokenSecret) error {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Spec.Proxmox.Capmox.CredentialsSecretName},
		StringData: map[string]string{"url": l.proxmoxURL(), "token": s.TokenID, "secret": s.Secret.Reveal(), "insecure": "false",
			"root_ca": string(l.Proxmox.CAPEM)}}
	if err := l.Client.Create(ctx, sec); err != nil {
		return fmt.Errorf("cannot create the capmox credentials Secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	return nil
}

// renderOptions are the render's options for the lab's capmox generation,
// with the tenant's VM id range when it has one, its objects as the
// lookup, its pool's tenant (its pciMappings) unless t renders without
// tenants, and, when a pool has gpus, the cluster's PCI mappings as
// render nodes --pci-mappings reads them.
func (l *Lab) renderOptions(ctx context.Context, t Tenant, spec *tenantplan.Tenants) (capmoxrender.Options, error) {
	opts := capmoxrender.Options{Capmox: capmoxrender.CapmoxV08, Clusters: t.lookup, Warn: func(w string) { l.log("render: " + w) }}
	if l.Capmox == capi.CapmoxV07 {
		opts.Capmox = capmoxrender.CapmoxV07
	}
	if t.lookup != nil {
		opts.Networks = t.lookup
	}
	tn := spec.Tenants[0]
	if r := tn.VMIDRange; r != nil {
		opts.VMIDRanges = map[string]capmoxrender.VMIDRange{tn.Pool: {Start: int64(r.Start), End: int64(r.End)}}
	}
	if !t.RenderWithoutTenants {
		opts.PoolTenants = map[string]capmoxrender.PoolTenant{tn.Pool: {Name: tn.Name, PCIMappings: tn.PCIMappings}}
	}
	if slices.ContainsFunc(t.Pools, func(p capmoxrender.KubernetesNodes) bool { return len(p.Spec.GPUs) > 0 }) {
		m, err := l.pciMappings(ctx)
		if err != nil {
			return opts, err
		}
		opts.PCIMappings = m
	}
	return opts, nil
}

// pciMappings are the Proxmox VE cluster's PCI resource mappings: the
// answer of GET /cluster/mapping/pci, read with the root token, through
// capmoxrender.ParsePCIMappings, as render nodes --pci-mappings reads
// pvesh's.
func (l *Lab) pciMappings(ctx context.Context) ([]capmoxrender.PCIMapping, error) {
	root, err := l.Root()
	if err != nil {
		return nil, err
	}
	var answer json.RawMessage
	if err := root.Get(ctx, "/cluster/mapping/pci", &answer); err != nil {
		return nil, fmt.Errorf("cannot read the PCI mappings: %w", err)
	}
	m, err := capmoxrender.ParsePCIMappings(answer)
	if err != nil {
		return nil, fmt.Errorf("the Proxmox VE fake's PCI mappings: %w", err)
	}
	return m, nil
}

// playKamaji does Kamaji's part once its control plane would run: the
// control plane's LoadBalancer Service (named after the cluster) with the
// tenant API server's address as its ingress; the KamajiControlPlane and
// the ProxmoxCluster pointing at the Service's name and port, the
// KamajiControlPlane initialized and ready with its version; and the
// cluster's kubeconfig Secret (<cluster>-kubeconfig, key value) reaching
// the tenant API server. It returns the Service, for the pools' render.
func (l *Lab) playKamaji(ctx context.Context, ns, cluster string) (*unstructured.Unstructured, error) {
	u, err := url.Parse(l.Tenant.Host)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("the tenant API server's address %s has no port", l.Tenant.Host)
	}
	svc, err := l.controlPlaneService(ctx, ns, cluster, u.Hostname(), port)
	if err != nil {
		return nil, err
	}
	host := cluster + "." + ns + ".svc"
	cp := &unstructured.Unstructured{}
	cp.SetAPIVersion(capmoxrender.KamajiAPIVersion)
	cp.SetKind(capmoxrender.KindKamaji)
	if err := l.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, cp); err != nil {
		return nil, fmt.Errorf("cannot read KamajiControlPlane %s/%s: %w", ns, cluster, err)
	}
	version, _, _ := unstructured.NestedString(cp.Object, "spec", "version")
	spec := fmt.Sprintf(`{"spec":{"controlPlaneEndpoint":{"host":%q,"port":%d}}}`, host, port)
	if err := l.Client.Patch(ctx, cp, client.RawPatch("application/merge-patch+json", []byte(spec))); err != nil {
		return nil, fmt.Errorf("cannot point KamajiControlPlane %s/%s at the tenant API server: %w", ns, cluster, err)
	}
	status := fmt.Sprintf(`{"status":{"ready":true,"initialized":true,"externalManagedControlPlane":true,"version":%q,`+
		`"initialization":{"controlPlaneInitialized":true},"replicas":2,"readyReplicas":2,"updatedReplicas":2}}`, version)
	if err := l.Client.Status().Patch(ctx, cp, client.RawPatch("application/merge-patch+json", []byte(status))); err != nil {
		return nil, fmt.Errorf("cannot mark KamajiControlPlane %s/%s ready: %w", ns, cluster, err)
	}
	// Kamaji's Cluster API provider writes the endpoint into the
	// infrastructure cluster too: capmox's ProxmoxCluster with
	// externalManagedControlPlane waits for it.
	pc := &unstructured.Unstructured{}
	pc.SetAPIVersion(l.InfrastructureAPIVersion())
	pc.SetKind("ProxmoxCluster")
	if err := l.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, pc); err != nil {
		return nil, fmt.Errorf("cannot read ProxmoxCluster %s/%s: %w", ns, cluster, err)
	}
	if err := l.Client.Patch(ctx, pc, client.RawPatch("application/merge-patch+json", []byte(spec))); err != nil {
		return nil, fmt.Errorf("cannot give ProxmoxCluster %s/%s the control-plane endpoint: %w", ns, cluster, err)
	}
	kc, err := testenv.Kubeconfig(l.Tenant, "")
	if err != nil {
		return nil, err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + "-kubeconfig",
		Labels: map[string]string{"cluster.x-k8s.io/cluster-name": cluster}},
		Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"value": kc}}
	if err := l.Client.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("cannot create the kubeconfig Secret of %s/%s: %w", ns, cluster, err)
	}
	if err := l.createAdminKubeconfig(ctx, ns, cluster); err != nil {
		return nil, err
	}
	l.log(fmt.Sprintf("Kamaji's part: %s/%s at %s:%d (%s)", ns, cluster, host, port, l.Tenant.Host))
	return svc, nil
}

// controlPlaneService creates Kamaji's LoadBalancer Service of a tenant
// control plane with the address and port the tenant API server listens
// on as its ingress, as a load balancer would give it.
func (l *Lab) controlPlaneService(ctx context.Context, ns, name, addr string, port int) (*unstructured.Unstructured, error) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "kube-apiserver", Port: int32(port), TargetPort: intstr.FromInt32(int32(port))}}}}
	if err := l.Client.Create(ctx, svc); err != nil {
		return nil, fmt.Errorf("cannot create the control plane Service %s/%s: %w", ns, name, err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: addr}}
	if err := l.Client.Status().Update(ctx, svc); err != nil {
		return nil, fmt.Errorf("cannot give the control plane Service %s/%s its address: %w", ns, name, err)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(svc)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: obj}
	out.SetAPIVersion("v1")
	out.SetKind("Service")
	return out, nil
}

// InfrastructureAPIVersion is the version of capmox's kinds
// (ProxmoxCluster, ProxmoxMachine) the lab's capmox generation serves.
func (l *Lab) InfrastructureAPIVersion() string {
	if l.Capmox == capi.CapmoxV07 {
		return "infrastructure.cluster.x-k8s.io/v1alpha1"
	}
	return "infrastructure.cluster.x-k8s.io/v1alpha2"
}
