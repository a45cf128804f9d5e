package verify

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// DefaultCAPIVersion is the Cluster API version the Machines are read in
// when Target.CAPIVersion is empty: v1beta1, what Cluster API v1.10 serves.
const DefaultCAPIVersion = "v1beta1"

// Target names the cluster Gather reads and Judge judges.
type Target struct {
	// Namespace and Cluster (kubernetes-<name>) of the Cluster object.
	// Without a Cluster, Gather reads what is the namespace's alone (its
	// Machines, ProxmoxMachines and networks, and Proxmox VE), for the
	// checks of its pools' VMs and HA resources.
	Namespace, Cluster string
	// CAPIVersion is the cluster.x-k8s.io version every Machine is read
	// in, v1beta1 or v1beta2; "" means DefaultCAPIVersion.
	CAPIVersion string
	// TenantKubeconfig is the tenant kubeconfig's file, for the fixes.
	TenantKubeconfig string
}

// Snapshot is what Gather read of one Target, as plain values: Judge needs
// nothing else.
type Snapshot struct {
	Target Target
	// Taken is when Gather began; the worker VM checks tell the time of
	// the controller's pool healing from it.
	Taken      time.Time
	Management Management
	Tenant     Tenant
	// Proxmox is nil when Gather was given no Proxmox VE API: its checks
	// are then not made.
	Proxmox *Proxmox
}

// Management is what the management cluster holds of the target.
type Management struct {
	// IPAMServed is whether the API server serves InClusterIPPool, that
	// is whether the Cluster API in-cluster IPAM provider is installed.
	IPAMServed bool
	// ProxmoxCluster is the cluster's ProxmoxCluster; nil when there is
	// none (or capmox is not installed).
	ProxmoxCluster *ProxmoxCluster
	// Service is the cluster's control plane Service (named after the
	// cluster); nil when there is none.
	Service *Service
	// Machines are the namespace's Machines, of every cluster, in the
	// order the API server lists them.
	Machines []Machine
	// ProxmoxMachines are the namespace's ProxmoxMachines, of every
	// cluster, read in the newest version capmox serves; none when capmox
	// is not installed.
	ProxmoxMachines []ProxmoxMachine
	// TalosConfigs are the host entries of the TalosConfigs the cluster's
	// Machines bootstrap with, by TalosConfig name; nil when the API
	// server serves no TalosConfig.
	TalosConfigs map[string][]HostEntry
	// CCM and CSIController are the cluster's <cluster>-pccm and
	// <cluster>-pcsi-controller Deployments; nil when absent.
	CCM, CSIController *Deployment
	// Region is the region key of the credentials Secret the CCM mounts,
	// and RegionSource names that Secret; both empty when the CCM mounts
	// none, or the Secret or the key is missing. Nothing else of the
	// Secret is kept.
	Region, RegionSource string
	// IPPool is the InClusterIPPool capmox made from ipv4Config
	// (<cluster>-v4-icip); nil when absent or not served.
	IPPool *IPPool
	// Networks are the namespace's ProxmoxNetworks; none when the API
	// server does not serve them.
	Networks []Network
	// HealingPools are the namespace's MachineDeployments labelled
	// poolheal.Label, whose pools the controller heals (proxmox.heal).
	HealingPools map[string]bool
}

// ProxmoxCluster is what the checks read of a ProxmoxCluster.
type ProxmoxCluster struct {
	Annotations map[string]string
}

// Service is what the checks read of the control plane Service.
type Service struct {
	// Type is the Service's spec.type; LoadBalancerIP the first address
	// of its status.loadBalancer.ingress, "" when it has none.
	Type, LoadBalancerIP string
}

// Machine is what the checks read of a Cluster API Machine.
type Machine struct {
	Name   string
	Labels map[string]string
	// ProviderID is spec.providerID and NodeRef status.nodeRef.name.
	ProviderID, NodeRef string
	// InfrastructureRef names its ProxmoxMachine.
	InfrastructureRef string
	// BootstrapKind and BootstrapName are its bootstrap configRef's.
	BootstrapKind, BootstrapName string
	// Phase is its Cluster API phase (Provisioning, Running, ...) and
	// Address its InternalIP (else its first address), when reported.
	Phase, Address string
	// Deleting is whether its deletion has begun.
	Deleting bool
}

// ProxmoxMachine is what the checks read of a capmox ProxmoxMachine.
type ProxmoxMachine struct {
	Name string
	// VMID is spec.virtualMachineID, 0 before capmox records one;
	// ProxmoxNode is status.proxmoxNode, where capmox reports the VM.
	VMID        int64
	ProxmoxNode string
	// Pool is the Proxmox pool it clones into (spec.pool).
	Pool string
	// BootVolumeGiB is disks.bootVolume.sizeGb, the system disk its pool
	// asked for; 0 when none was asked.
	BootVolumeGiB int32
	// Provisioned is whether capmox reports it provisioned
	// (status.initialization.provisioned, or status.ready before
	// v1alpha2).
	Provisioned bool
	// Machine is the Machine that owns it (its own name when none does).
	Machine string
	// Deleting is whether its deletion has begun; StoppedOnPurpose is
	// poolheal.StoppedAnnotation on it.
	Deleting, StoppedOnPurpose bool
}

// HostEntry is one entry of a TalosConfig's extraHostEntries patch.
type HostEntry struct {
	IP      string
	Aliases []string
}

// Deployment is what the checks read of a controller Deployment.
type Deployment struct {
	// Replicas is spec.replicas (1 when unset), Available
	// status.availableReplicas.
	Replicas, Available int64
}

// IPPool is what the checks read of an InClusterIPPool.
type IPPool struct {
	Name string
	// Free is status.ipAddresses.free; FreeKnown whether the pool
	// reports it.
	Free      int64
	FreeKnown bool
}

// Network is a ProxmoxNetwork of the namespace with its GatewayFailover
// condition (nil when it has none).
type Network struct {
	Name     string
	Failover *metav1.Condition
}

// Tenant is what the tenant cluster holds.
type Tenant struct {
	Nodes []Node
	// CSINodes maps a Node name to the CSI node plugin Pods on it, and
	// CSIDaemonSets names the tenant's CSI node plugin DaemonSets; both
	// are read only when the cluster runs the CSI controller.
	CSINodes      map[string][]CSINodePod
	CSIDaemonSets []string
}

// Node is what the checks read of a tenant Node.
type Node struct {
	Name          string
	ProviderID    string
	Labels        map[string]string
	Uninitialized bool
	// EphemeralStorage is status.capacity's ephemeral-storage in bytes
	// (the kubelet's filesystem, Talos's EPHEMERAL partition); 0 when the
	// Node does not report it.
	EphemeralStorage int64
}

// CSINodePod is a CSI node plugin Pod and whether it is ready.
type CSINodePod struct {
	Name  string
	Ready bool
	// Reason says why it is not ready (a container's waiting reason or
	// the Pod's phase).
	Reason string
}

// Proxmox is what Proxmox VE shows the token verify was given.
type Proxmox struct {
	// TokenID is the token's id, redacted, for the messages.
	TokenID string
	// HAResources are the HA resources the proxmox-network controller
	// made (those whose comment names a Machine); HAHidden is whether
	// the token may not read the HA resources at all.
	HAResources []HAResource
	HAHidden    bool
	// VMs are the guests the token may see.
	VMs []PoolVM
}

// HAResource is an HA resource the proxmox-network controller made
// (pveha.Resource with its comment read): its id and its Machine's
// namespace/name.
type HAResource struct {
	SID     string
	Machine string
}

// PoolVM is a guest as GET /cluster/resources?type=vm lists it.
type PoolVM struct {
	VMID       int
	Name, Node string
	// Pool is the Proxmox pool the guest is a member of.
	Pool string
	// Lock is the guest's lock (clone while a clone task runs).
	Lock string
	// Status is running, stopped, paused or unknown (a node offline).
	Status   string
	Template bool
	// Tags are the guest's tags.
	Tags []string
	// NodeOffline is whether its node is offline. Created is when the VM
	// was made (its configuration's meta ctime), read only for the VMs a
	// worker VM check may flag (NeedsConfig) on an online node; zero
	// otherwise.
	NodeOffline bool
	Created     time.Time
}

// clusterMachines are the Machines of the target cluster, in list order.
func (s *Snapshot) clusterMachines() []Machine {
	var out []Machine
	for _, m := range s.Management.Machines {
		if m.Labels[capmox.LabelClusterName] == s.Target.Cluster {
			out = append(out, m)
		}
	}
	return out
}

// proxmoxMachine is the namespace's ProxmoxMachine of that name, or nil.
func (s *Snapshot) proxmoxMachine(name string) *ProxmoxMachine {
	for i := range s.Management.ProxmoxMachines {
		if s.Management.ProxmoxMachines[i].Name == name {
			return &s.Management.ProxmoxMachines[i]
		}
	}
	return nil
}
