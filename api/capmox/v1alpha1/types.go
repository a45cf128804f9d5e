package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// GroupVersion is infrastructure.cluster.x-k8s.io/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: capmox.Group, Version: "v1alpha1"}

// ProxmoxClusterSpec is the rendered part of ProxmoxCluster.spec.
type ProxmoxClusterSpec struct {
	// ExternalManagedControlPlane lets the control-plane provider own the endpoint.
	ExternalManagedControlPlane bool `json:"externalManagedControlPlane,omitempty"`
	// AllowedNodes are the PVE nodes capmox may clone onto; empty means all.
	AllowedNodes []string `json:"allowedNodes,omitempty"`
	// IPv4Config becomes the cluster's InClusterIPPool.
	IPv4Config *IPConfigSpec `json:"ipv4Config,omitempty"`
	// IPv6Config becomes the cluster's IPv6 InClusterIPPool (dual stack
	// next to IPv4Config).
	IPv6Config *IPConfigSpec `json:"ipv6Config,omitempty"`
	// DNSServers is required by the schema (minItems 1).
	DNSServers []string `json:"dnsServers"`
	// CredentialsRef names the Secret (keys url, token, secret, and
	// optional insecure and root_ca) capmox uses for this cluster instead
	// of its controller-wide credentials (capmox v0.7.7 and later).
	CredentialsRef *corev1.SecretReference `json:"credentialsRef,omitempty"`
	// SchedulerHints steer capmox's choice of node for each clone.
	SchedulerHints *SchedulerHints `json:"schedulerHints,omitempty"`
}

// SchedulerHints are capmox's node-scheduling knobs.
type SchedulerHints struct {
	// MemoryAdjustment is the percentage of each node's memory capmox's
	// scheduler may hand out (default 100; above 100 overcommits, 0 turns
	// the memory check off).
	MemoryAdjustment *uint64 `json:"memoryAdjustment,omitempty"`
}

// IPConfigSpec is an address pool: IPs, ranges a-b or CIDRs, a prefix and a gateway.
type IPConfigSpec struct {
	Addresses []string `json:"addresses"`
	Prefix    int      `json:"prefix"`
	Gateway   string   `json:"gateway,omitempty"`
	Metric    *uint32  `json:"metric,omitempty"`
}

// ProxmoxMachineTemplateSpec is ProxmoxMachineTemplate.spec.
type ProxmoxMachineTemplateSpec struct {
	Template ProxmoxMachineTemplateResource `json:"template"`
}

// ProxmoxMachineTemplateResource is spec.template.
type ProxmoxMachineTemplateResource struct {
	Spec ProxmoxMachineSpec `json:"spec"`
}

// ProxmoxMachineSpec is the rendered or read part of a machine spec.
type ProxmoxMachineSpec struct {
	ProviderID       *string           `json:"providerID,omitempty"`
	VirtualMachineID *int64            `json:"virtualMachineID,omitempty"`
	TemplateSelector *TemplateSelector `json:"templateSelector,omitempty"`
	Full             *bool             `json:"full,omitempty"`
	Pool             string            `json:"pool,omitempty"`
	Storage          string            `json:"storage,omitempty"`
	NumSockets       int32             `json:"numSockets,omitempty"`
	NumCores         int32             `json:"numCores,omitempty"`
	MemoryMiB        int32             `json:"memoryMiB,omitempty"`
	Network          *NetworkSpec      `json:"network,omitempty"`
	Checks           *Checks           `json:"checks,omitempty"`
	// Disks resizes the cloned boot disk before the first start.
	Disks *Storage `json:"disks,omitempty"`
	// VMIDRange is the range capmox picks the VM id from.
	VMIDRange *VMIDRange `json:"vmIDRange,omitempty"`
	// AllowedNodes narrows the ProxmoxCluster's nodes for this machine.
	AllowedNodes []string `json:"allowedNodes,omitempty"`
}

// Storage is spec.disks.
type Storage struct {
	BootVolume *DiskSize `json:"bootVolume,omitempty"`
}

// DiskSize names a disk device (scsi0) and its size in GiB (capmox writes
// it as <n>G, which Proxmox reads as GiB); the schema's minimum is 5 and
// the value is immutable.
type DiskSize struct {
	Disk   string `json:"disk"`
	SizeGB int32  `json:"sizeGb"`
}

// VMIDRange bounds the VM ids capmox allocates (100 to 999999999, end not
// below start).
type VMIDRange struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// TemplateSelector picks the VM template whose tag set equals MatchTags.
type TemplateSelector struct {
	MatchTags []string `json:"matchTags"`
}

// Checks turns off capmox's guest probes (Talos answers neither).
type Checks struct {
	SkipCloudInitStatus *bool `json:"skipCloudInitStatus,omitempty"`
	SkipQemuGuestAgent  *bool `json:"skipQemuGuestAgent,omitempty"`
}

// NetworkSpec holds net0 and the additional NICs.
type NetworkSpec struct {
	Default           *NetworkDevice            `json:"default,omitempty"`
	AdditionalDevices []AdditionalNetworkDevice `json:"additionalDevices,omitempty"`
}

// NetworkDevice is one NIC.
type NetworkDevice struct {
	Bridge      string                            `json:"bridge"`
	Model       *string                           `json:"model,omitempty"`
	MTU         *uint16                           `json:"mtu,omitempty"`
	VLAN        *uint16                           `json:"vlan,omitempty"`
	IPv4PoolRef *corev1.TypedLocalObjectReference `json:"ipv4PoolRef,omitempty"`
}

// AdditionalNetworkDevice is a NIC other than net0.
type AdditionalNetworkDevice struct {
	NetworkDevice `json:",inline"`
	Name          string `json:"name"`
}

// ProxmoxMachineStatus is the read part of ProxmoxMachine.status.
type ProxmoxMachineStatus struct {
	Ready       bool    `json:"ready,omitempty"`
	ProxmoxNode *string `json:"proxmoxNode,omitempty"`
	VMStatus    string  `json:"vmStatus,omitempty"`
}

// ProxmoxMachine is the read view of a machine: spec and status only.
type ProxmoxMachine struct {
	Spec   ProxmoxMachineSpec   `json:"spec"`
	Status ProxmoxMachineStatus `json:"status,omitempty"`
}
