package capmoxrender

import (
	"context"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	pmv1alpha1 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha1"
	pmv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha2"
	"github.com/pxsubstrate/pxsubstrate/poolheal"
)

// Labels CAPI uses to select a pool's machines (capmox.LabelClusterName,
// capmox.LabelDeploymentName).
const (
	LabelClusterName    = capmox.LabelClusterName
	LabelDeploymentName = capmox.LabelDeploymentName
)

// Pool HA (proxmox.ha): the label the proxmox-network controller selects a
// pool's MachineDeployment and Machines by, and the Cluster API
// pre-terminate hook it releases (capmox.LabelHA, capmox.HookHA,
// capmox.HookOwner).
const (
	LabelHA   = capmox.LabelHA
	HookHA    = capmox.HookHA
	HookOwner = capmox.HookOwner
)

// RenderNodes renders a worker pool on the Proxmox substrate: the
// hash-named ProxmoxMachineTemplate and TalosConfigTemplate, the
// MachineDeployment and the MachineHealthCheck, followed by the pool's
// earlier machine templates that a MachineSet still references (with
// Options.Templates), and, unless Options.Clusters knows the control plane
// Service's LoadBalancer address, the host-entries Job with its
// ServiceAccount, Role and RoleBinding. A pool with
// proxmox.localTemplates gets a ProxmoxMachineTemplate, MachineDeployment
// and MachineHealthCheck per node, in the nodes' name order, sharing the
// TalosConfigTemplate (see localtemplates.go). The output is
// deterministic; a refusal is a *RefusalError.
func RenderNodes(ctx context.Context, n KubernetesNodes, opts Options) ([]*unstructured.Unstructured, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	p, err := planNodes(ctx, n, o)
	if err != nil {
		return nil, err
	}
	if len(p.domains) > 0 {
		return renderSpreadPool(ctx, p, o)
	}
	tct, err := renderTalosConfigTemplate(p)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for i, part := range poolParts(p) {
		objs, err := renderPoolPart(ctx, part, o, tct.GetName())
		if err != nil {
			return nil, err
		}
		if i == 0 {
			objs = slices.Insert(objs, 1, tct)
		}
		out = append(out, objs...)
	}
	hosts, err := renderHostEntries(p, o, tct.GetName())
	if err != nil {
		return nil, err
	}
	return append(out, hosts...), nil
}

// renderPoolPart renders what a MachineDeployment of the pool needs: the
// hash-named ProxmoxMachineTemplate, the MachineDeployment on it and on
// the pool's TalosConfigTemplate tct, its MachineHealthCheck and its
// earlier machine templates that a MachineSet still references.
func renderPoolPart(ctx context.Context, p nodesPlan, o Options, tct string) ([]*unstructured.Unstructured, error) {
	pmt, err := renderMachineTemplate(p, o)
	if err != nil {
		return nil, err
	}
	md, err := renderMachineDeployment(p, o, pmt.GetName(), tct)
	if err != nil {
		return nil, err
	}
	mhc, err := renderMachineHealthCheck(p, o)
	if err != nil {
		return nil, err
	}
	kept, err := retainedTemplates(ctx, o.Templates, p, pmt.GetName())
	if err != nil {
		return nil, err
	}
	return append([]*unstructured.Unstructured{pmt, md, mhc}, kept...), nil
}

func poolRef(name string) *corev1.TypedLocalObjectReference {
	return &corev1.TypedLocalObjectReference{APIGroup: ptr(capmox.IPAMGroup), Kind: capmox.KindInClusterIPPool, Name: name}
}

func u16(p *int) *uint16 {
	if p == nil {
		return nil
	}
	return ptr(uint16(*p))
}

func i32(p *int) *int32 {
	if p == nil {
		return nil
	}
	return ptr(int32(*p))
}

func machineSpecV1alpha1(p nodesPlan) pmv1alpha1.ProxmoxMachineSpec {
	s := pmv1alpha1.ProxmoxMachineSpec{
		Checks:           &pmv1alpha1.Checks{SkipQemuGuestAgent: ptr(true), SkipCloudInitStatus: ptr(true)},
		TemplateSelector: &pmv1alpha1.TemplateSelector{MatchTags: p.tags},
		Full:             ptr(p.full),
		NumSockets:       1,
		NumCores:         p.cores,
		MemoryMiB:        p.memoryMiB,
		Storage:          p.storage,
		Pool:             p.pool,
		Network:          &pmv1alpha1.NetworkSpec{},
		AllowedNodes:     p.allowedNodes,
	}
	if p.bootGiB > 0 {
		s.Disks = &pmv1alpha1.Storage{BootVolume: &pmv1alpha1.DiskSize{Disk: BootDisk, SizeGB: p.bootGiB}}
	}
	if p.vmIDRange != nil {
		s.VMIDRange = &pmv1alpha1.VMIDRange{Start: p.vmIDRange.Start, End: p.vmIDRange.End}
	}
	for _, n := range p.nics {
		d := pmv1alpha1.NetworkDevice{Bridge: n.bridge, Model: ptr("virtio"), VLAN: u16(n.vlan), MTU: u16(n.mtu)}
		if n.pool != "" {
			d.IPv4PoolRef = poolRef(n.pool)
		}
		if n.name == "net0" {
			s.Network.Default = &d
			continue
		}
		s.Network.AdditionalDevices = append(s.Network.AdditionalDevices, pmv1alpha1.AdditionalNetworkDevice{NetworkDevice: d, Name: n.name})
	}
	return s
}

func machineSpecV1alpha2(p nodesPlan) pmv1alpha2.ProxmoxMachineSpec {
	s := pmv1alpha2.ProxmoxMachineSpec{
		Checks:           &pmv1alpha2.Checks{SkipQemuGuestAgent: ptr(true), SkipCloudInitStatus: ptr(true)},
		TemplateSelector: &pmv1alpha2.TemplateSelector{MatchTags: p.tags},
		Full:             ptr(p.full),
		NumSockets:       ptr(int32(1)),
		NumCores:         ptr(p.cores),
		MemoryMiB:        ptr(p.memoryMiB),
		Network:          &pmv1alpha2.NetworkSpec{},
		AllowedNodes:     p.allowedNodes,
	}
	if p.bootGiB > 0 {
		s.Disks = &pmv1alpha2.Storage{BootVolume: &pmv1alpha2.DiskSize{Disk: BootDisk, SizeGB: p.bootGiB}}
	}
	if p.vmIDRange != nil {
		s.VMIDRange = &pmv1alpha2.VMIDRange{Start: p.vmIDRange.Start, End: p.vmIDRange.End}
	}
	if p.storage != "" {
		s.Storage = ptr(p.storage)
	}
	if p.pool != "" {
		s.Pool = ptr(p.pool)
	}
	for _, n := range p.nics {
		d := pmv1alpha2.NetworkDevice{Name: ptr(n.name), Bridge: ptr(n.bridge), Model: ptr("virtio"), VLAN: i32(n.vlan), MTU: i32(n.mtu)}
		// net0 on a VPC subnet takes its address from the cluster's pool,
		// which capmox v0.8+ claims for net0 whatever it lists (see
		// capmox.AnnotationNet0Pool); listing the subnet's pool too would
		// give it a second address.
		if n.pool != "" && n.name != "net0" {
			d.IPPoolRef = []corev1.TypedLocalObjectReference{*poolRef(n.pool)}
		}
		s.Network.NetworkDevices = append(s.Network.NetworkDevices, d)
	}
	return s
}

// machineMetadataV1alpha2 is the metadata Cluster API copies onto each
// ProxmoxMachine: the net0 subnet pool of a VPC pool, nil otherwise.
func machineMetadataV1alpha2(p nodesPlan) *pmv1alpha2.TemplateMetadata {
	for _, n := range p.nics {
		if n.name == "net0" && n.pool != "" {
			return &pmv1alpha2.TemplateMetadata{Annotations: map[string]string{capmox.AnnotationNet0Pool: n.pool}}
		}
	}
	return nil
}

// renderMachineTemplate names the template after a hash of its spec, so a
// changed spec makes a new template and the MachineDeployment rolls.
func renderMachineTemplate(p nodesPlan, o Options) (*unstructured.Unstructured, error) {
	var spec any
	gv := pmv1alpha1.GroupVersion.String()
	if o.Capmox == CapmoxV07 {
		s := machineSpecV1alpha1(p)
		if err := CheckMachineSpecV1alpha1(s); err != nil {
			return nil, err
		}
		spec = pmv1alpha1.ProxmoxMachineTemplateSpec{Template: pmv1alpha1.ProxmoxMachineTemplateResource{Spec: s}}
	} else {
		s := machineSpecV1alpha2(p)
		if err := CheckMachineSpecV1alpha2(s); err != nil {
			return nil, err
		}
		spec = pmv1alpha2.ProxmoxMachineTemplateSpec{Template: pmv1alpha2.ProxmoxMachineTemplateResource{Metadata: machineMetadataV1alpha2(p), Spec: s}}
		gv = pmv1alpha2.GroupVersion.String()
	}
	h, err := contentHash(spec, 6)
	if err != nil {
		return nil, err
	}
	return object(gv, capmox.KindProxmoxMachineTemplate, p.ns, p.release+"-"+p.group+"-"+h, nil, spec)
}

func poolLabels(p nodesPlan) map[string]string {
	return map[string]string{LabelClusterName: p.release, LabelDeploymentName: p.release + "-" + p.group}
}

func templateLabels(p nodesPlan) map[string]string {
	l := poolLabels(p)
	for _, r := range p.roles {
		l["node-role.kubernetes.io/"+r] = ""
	}
	if p.ha {
		l[LabelHA] = "true"
	}
	maps.Copy(l, spreadLabels(p, true))
	return l
}

// templateAnnotations are the Machines' annotations: the HA hook when the
// pool has HA. Cluster API copies a MachineDeployment's template metadata
// onto its MachineSets and Machines in place, so turning HA on or off
// changes the running Machines without rolling them.
func templateAnnotations(p nodesPlan) map[string]string {
	if !p.ha {
		return nil
	}
	return map[string]string{HookHA: HookOwner}
}

// mdLabels are the MachineDeployment's own labels: pool HA's, and pool
// healing's (poolheal.Label), which the controller selects pools by.
func mdLabels(p nodesPlan) map[string]string {
	l := map[string]string{}
	if p.ha {
		l[LabelHA] = "true"
	}
	if p.heal {
		l[poolheal.Label] = "true"
	}
	maps.Copy(l, spreadLabels(p, false))
	if len(l) == 0 {
		return nil
	}
	return l
}

func mdAnnotations(p nodesPlan) map[string]string {
	out := map[string]string{
		"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": strconv.Itoa(int(p.minReplicas)),
		"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": strconv.Itoa(int(p.maxReplicas)),
		"cluster.x-k8s.io/autoscaling-options-maxnodeprovisiontime":   p.provisionTime,
	}
	maps.Copy(out, capacityAnnotations(p))
	maps.Copy(out, spreadAnnotations(p))
	return out
}

func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns}
}
