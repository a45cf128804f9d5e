package capmoxrender

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// MinNodeStartupTimeout is the least nodeStartupTimeout Cluster API's
// MachineHealthCheck webhook admits (v1.14.2,
// minNodeStartupTimeoutSeconds).
const MinNodeStartupTimeout = 30 * time.Second

// Defaults of the kubernetes-nodes chart.
const (
	DefaultMaxUnhealthy         = "50%"
	DefaultNodeStartupTimeout   = "20m"
	DefaultReadyUnknownTimeout  = "5m"
	DefaultReadyFalseTimeout    = "10m"
	DefaultMaxNodeProvisionTime = "30m"
	DefaultTalosVersion         = "v1.13.6"
	DefaultTalosSchematicID     = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	DefaultInstallerRepository  = "factory.talos.dev/installer"
)

// nodesPlan is a validated KubernetesNodes input with defaults applied.
type nodesPlan struct {
	cluster, release, group, ns string
	version                     string
	minReplicas, maxReplicas    int32
	cores, memoryMiB            int32
	// bootGiB is disks.bootVolume.sizeGb; 0 leaves the template's disk.
	bootGiB int32
	// allowedNodes narrows the cluster's nodes for this pool.
	allowedNodes []string
	// vmIDRange is the tenant's VM id range, nil without one.
	vmIDRange             *VMIDRange
	roles                 []string
	maxUnhealthy          intstr.IntOrString
	startup, readyUnknown time.Duration
	readyFalse            time.Duration
	provisionTime         string
	talos                 Talos
	tags                  []string
	full                  bool
	ha, heal              bool
	storage, pool         string
	dns                   []string
	nics                  []nic
	// controlPlaneIP is the control plane Service's LoadBalancer
	// address when the lookup knows it.
	controlPlaneIP string
	// kubelet is what each worker's kubelet reserves.
	kubelet kubeletPlan
	// diskCapacity is the system disk's size for the autoscaler, "" when
	// unknown (no diskSize and no proxmox.templateDiskSize).
	diskCapacity string
	// mirrors are the workers' registry mirrors, nil without any.
	mirrors map[string]RegistryMirror
	// kubectlImage is the pool's kubectl image, "" for Options.Images'.
	kubectlImage string
	// gpus are the pool's GPUs, nil without any.
	gpus *gpuPlan
	// localNodes are the nodes of a pool with local templates, each of
	// which gets a MachineDeployment of its own (poolParts); nil without.
	localNodes []string
	// domains are the pool's failure domains (proxmox.failureDomains),
	// nil without any; spread is one domain's part of a spread pool.
	domains []FailureDomain
	spread  *spreadPlan
}

// nic is one resolved NIC; pool is the InClusterIPPool of a VPC subnet.
type nic struct {
	name   string
	bridge string
	vlan   *int
	mtu    *int
	pool   string
}

func planNodes(ctx context.Context, n KubernetesNodes, o Options) (nodesPlan, error) {
	s := n.Spec
	if err := checkSubstrate(s.Substrate); err != nil {
		return nodesPlan{}, err
	}
	p, err := poolNames(n)
	if err != nil {
		return nodesPlan{}, err
	}
	if err := guardNodes(ctx, o.Guards, p); err != nil {
		return nodesPlan{}, err
	}
	// The checks run in the chart's order, so an input with several faults
	// gets the same first refusal.
	steps := []func(*nodesPlan, NodesSpec, Options) error{planSizing, planTemplate, refuseKubevirtOnly, planGPUNames, planDisk, planVMIDRange, planTalos, planTalosSources, planHealth, planReplicas, planKubelet, planImages, checkVMIDRoom}
	for _, step := range steps {
		if err := step(&p, s, o); err != nil {
			return nodesPlan{}, err
		}
	}
	if p.version, err = poolVersion(ctx, o, p, s.Version); err != nil {
		return nodesPlan{}, err
	}
	if err := planHostAddress(ctx, o, &p); err != nil {
		return nodesPlan{}, err
	}
	if p.nics, err = planNICs(ctx, o, p.ns, s.Proxmox); err != nil {
		return nodesPlan{}, err
	}
	if err := planFailureDomains(ctx, o, &p, s); err != nil {
		return nodesPlan{}, err
	}
	if p.allowedNodes, err = planAllowedNodes(ctx, o, p, s.Proxmox.AllowedNodes); err != nil {
		return nodesPlan{}, err
	}
	if err := planLocalTemplates(ctx, o, &p, s); err != nil {
		return nodesPlan{}, err
	}
	if err := planGPUs(ctx, o, &p, s); err != nil {
		return nodesPlan{}, err
	}
	return p, nil
}

func poolNames(n KubernetesNodes) (nodesPlan, error) {
	c := n.Spec.Cluster
	if c == "" {
		return nodesPlan{}, refuse("cluster", "cluster is required: name the parent Kubernetes object; the KubernetesNodes object is named <cluster>-<pool>")
	}
	if err := checkClusterName(c); err != nil {
		return nodesPlan{}, err
	}
	group, ok := strings.CutPrefix(n.Name, c+"-")
	if !ok || group == "" {
		return nodesPlan{}, refuse("metadata.name", "KubernetesNodes %q must be named %s-<pool> for its parent cluster %q", n.Name, c, c)
	}
	p := nodesPlan{cluster: c, release: ReleaseName(c), group: group, ns: n.Namespace}
	if err := checkObjectName("metadata.name", p.release+"-"+group+"-000000"); err != nil {
		return nodesPlan{}, err
	}
	return p, nil
}

func guardNodes(ctx context.Context, l SubstrateLookup, p nodesPlan) error {
	if l == nil {
		return nil
	}
	md := p.release + "-" + p.group
	kind, found, err := l.MachineDeploymentInfrastructureKind(ctx, p.ns, md)
	if err != nil {
		return fmt.Errorf("cannot look up MachineDeployment %s/%s: %w: %w", p.ns, md, ErrLookup, err)
	}
	if found && kind != "" && kind != capmox.KindProxmoxMachineTemplate {
		return refuse("substrate", "kubernetes-nodes: pool %q already runs %s workers and substrate is now \"proxmox\", which renders %s. Switching would roll every worker to the other hypervisor and delete the template the draining MachineSet still references. Create a new pool on the other substrate and scale this one down.", md, kind, capmox.KindProxmoxMachineTemplate)
	}
	kind, found, err = l.ClusterInfrastructureKind(ctx, p.ns, p.release)
	if err != nil {
		return fmt.Errorf("cannot look up Cluster %s/%s: %w: %w", p.ns, p.release, ErrLookup, err)
	}
	if found && kind != "" && kind != capmox.KindProxmoxCluster {
		return refuse("substrate", "kubernetes-nodes: parent cluster %q runs on %s and this pool asks for substrate \"proxmox\": a pool must use its cluster's substrate. Set substrate to match the parent, or create the pool under a cluster on Proxmox.", p.release, kind)
	}
	return nil
}

func refuseKubevirtOnly(_ *nodesPlan, s NodesSpec, _ Options) error {
	switch {
	case len(s.OSImage) > 0 && string(s.OSImage) != "null" && string(s.OSImage) != "{}":
		return refuse("osImage", "substrate proxmox does not take osImage: the worker disk is cloned from the Proxmox VM template. Remove osImage and use talos.version / talos.schematicID for the in-guest installer target.")
	case s.Proxmox.Storage != "" && !s.Proxmox.Full:
		return refuse("proxmox.storage", "proxmox.storage needs full: true: a target storage is a full-clone parameter, and a linked clone always lives on the template's storage")
	case s.StorageClass != "":
		return refuse("storageClass", "storageClass is a kubevirt-only field: a Proxmox worker's system disk is cloned from the template, onto the template's storage for a linked clone; to place it elsewhere use proxmox.storage with proxmox.full: true, and size it with diskSize")
	case s.EphemeralStorage != nil && *s.EphemeralStorage != "":
		return refuse("ephemeralStorage", "ephemeralStorage has been renamed to diskSize, which sizes the worker's single system disk; write diskSize: %s instead", termsafe.Cut(string(*s.EphemeralStorage)))
	case s.LogSerialConsole:
		return refuse("logSerialConsole", "logSerialConsole is a kubevirt-only field; use the Proxmox serial console on the VM")
	case s.PodCPULimit != nil || s.PodCPURequest != nil:
		return refuse("podCpuLimit", "podCpuLimit/podCpuRequest size the virt-launcher pod and are kubevirt-only")
	}
	return nil
}

// planTemplate checks, in the chart's order, the template tags, that raw
// mode names a bridge, and the resolvers.
func planTemplate(p *nodesPlan, s NodesSpec, _ Options) error {
	px := s.Proxmox
	if len(px.TemplateTags) == 0 {
		return refuse("proxmox.templateTags", "substrate proxmox requires proxmox.templateTags: capmox clones a VM template and has no image URL to fall back on")
	}
	if err := checkTemplateTags(px.TemplateTags); err != nil {
		return err
	}
	if px.Network.VPC == "" && px.Network.Subnet == "" && px.Network.Bridge == "" {
		return refuse("proxmox.network.bridge", "substrate proxmox requires proxmox.network.bridge")
	}
	var err error
	if p.dns, err = checkDNSServers("proxmox.dnsServers", px.DNSServers); err != nil {
		return err
	}
	if px.Pool == "" {
		return refuse("proxmox.pool", "substrate proxmox requires proxmox.pool: the tenant's Proxmox tokens are granted on /pool/<name>, the one ACL path that follows every VM capmox clones, so a worker outside a pool is outside the tenant's scope; create the pool (pveum pool add <name>) and name it here")
	}
	if err := pveacl.ValidPoolID(px.Pool); err != nil {
		return refuse("proxmox.pool", "proxmox.pool: %v: name the Proxmox VE pool as pveum pool list shows it (letters, digits, '-' and '_', up to three levels joined by '/')", err)
	}
	p.tags, p.full, p.storage, p.pool = append([]string(nil), px.TemplateTags...), px.Full, px.Storage, px.Pool
	p.ha, p.heal = px.HA, px.Heal
	return nil
}

// poolVersion resolves the pool's Kubernetes release: its own version, else
// its parent cluster's (through Options.Clusters), else
// DefaultKubernetesVersion, as the chart takes the parent's or its default.
func poolVersion(ctx context.Context, o Options, p nodesPlan, v string) (string, error) {
	if v != "" {
		return o.kubernetesVersion("version", v)
	}
	if o.Clusters != nil {
		parent, found, err := o.Clusters.KubernetesVersion(ctx, p.ns, p.cluster)
		if err != nil {
			return "", fmt.Errorf("cannot look up Kubernetes %s/%s: %w: %w", p.ns, p.cluster, ErrLookup, err)
		}
		if found && parent != "" {
			return o.kubernetesVersion(fmt.Sprintf("version (from Kubernetes %s/%s)", p.ns, p.cluster), parent)
		}
	}
	return o.kubernetesVersion("version", DefaultKubernetesVersion)
}

// planTalos resolves the Talos installer target and checks that the
// template tags name the same Talos release.
func planTalos(p *nodesPlan, s NodesSpec, _ Options) error {
	p.talos = Talos{
		Version:             or(s.Talos.Version, DefaultTalosVersion),
		SchematicID:         or(s.Talos.SchematicID, DefaultTalosSchematicID),
		InstallerRepository: or(s.Talos.InstallerRepository, DefaultInstallerRepository),
	}
	if !talosVersion.MatchString(p.talos.Version) {
		return refuse("talos.version", "talos.version %q is not vMAJOR.MINOR.PATCH (an optional pre-release suffix is allowed)", p.talos.Version)
	}
	if !schematicID.MatchString(p.talos.SchematicID) {
		return refuse("talos.schematicID", "talos.schematicID %q is not an Image Factory schematic id (64 lowercase hex characters)", p.talos.SchematicID)
	}
	if i, bad := capmox.MismatchedTalosTag(s.Proxmox.TemplateTags, p.talos.Version); bad {
		return refuse(fmt.Sprintf("proxmox.templateTags[%d]", i), "proxmox.templateTags[%d] is %q, but the workers install Talos %s (talos.version): the template the tags select boots another Talos release than the installer writes; tag the template %s or set talos.version to match",
			i, s.Proxmox.TemplateTags[i], p.talos.Version, capmox.TalosTag(p.talos.Version))
	}
	return nil
}

var (
	talosVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9a-z.]+)?$`)
	schematicID  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

func checkTemplateTags(tags []string) error {
	seen := map[string]bool{}
	for i, t := range tags {
		f := fmt.Sprintf("proxmox.templateTags[%d]", i)
		if !tagPattern.MatchString(t) {
			return refuse(f, "%s is %q: a Proxmox tag starts with a letter, digit or _ and holds only letters, digits and _ - + .", f, t)
		}
		if seen[t] {
			return refuse(f, "%s is %q, which is listed twice: capmox compares tag sets, so list each tag once", f, t)
		}
		seen[t] = true
	}
	return nil
}

func checkObjectName(field, name string) error {
	if len(name) > 63 {
		return refuse(field, "the objects of this pool would be named %q (%d characters), longer than the 63 a Kubernetes label value allows: shorten the cluster or pool name", name, len(name))
	}
	return nil
}
