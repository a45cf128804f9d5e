package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// GroupVersion is infrastructure.cluster.x-k8s.io/v1alpha2.
var GroupVersion = schema.GroupVersion{Group: capmox.Group, Version: "v1alpha2"}

// ProxmoxClusterSpec is the rendered part of ProxmoxCluster.spec.
type ProxmoxClusterSpec struct {
	ExternalManagedControlPlane *bool         `json:"externalManagedControlPlane,omitempty"`
	AllowedNodes                []string      `json:"allowedNodes,omitempty"`
	IPv4Config                  *IPConfigSpec `json:"ipv4Config,omitempty"`
	IPv6Config                  *IPConfigSpec `json:"ipv6Config,omitempty"`
	DNSServers                  []string      `json:"dnsServers"`
	// CredentialsRef names the per-cluster credentials Secret (see v1alpha1).
	CredentialsRef *corev1.SecretReference `json:"credentialsRef,omitempty"`
	// SchedulerHints steer capmox's choice of node for each clone.
	SchedulerHints *SchedulerHints `json:"schedulerHints,omitempty"`
}

// SchedulerHints are capmox's node-scheduling knobs (v1alpha2 keeps the
// percentage in an int64 with a minimum of 0).
type SchedulerHints struct {
	MemoryAdjustment *int64 `json:"memoryAdjustment,omitempty"`
}

// IPConfigSpec is an address pool; v1alpha2 requires the gateway.
type IPConfigSpec struct {
	Addresses []string `json:"addresses"`
	Prefix    int32    `json:"prefix"`
	Gateway   string   `json:"gateway"`
	Metric    *int32   `json:"metric,omitempty"`
}

// ProxmoxMachineTemplateSpec is ProxmoxMachineTemplate.spec.
type ProxmoxMachineTemplateSpec struct {
	Template ProxmoxMachineTemplateResource `json:"template"`
}

// ProxmoxMachineTemplateResource is spec.template (its metadata needs at
// least one property, so it is never rendered empty).
type ProxmoxMachineTemplateResource struct {
	Metadata *TemplateMetadata  `json:"metadata,omitempty"`
	Spec     ProxmoxMachineSpec `json:"spec"`
}

// TemplateMetadata is the labels and annotations Cluster API copies from a
// machine template onto each ProxmoxMachine it makes.
type TemplateMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ProxmoxMachineSpec is the rendered or read part of a machine spec.
type ProxmoxMachineSpec struct {
	ProviderID       string            `json:"providerID,omitempty"`
	VirtualMachineID *int64            `json:"virtualMachineID,omitempty"`
	TemplateSelector *TemplateSelector `json:"templateSelector,omitempty"`
	Full             *bool             `json:"full,omitempty"`
	Pool             *string           `json:"pool,omitempty"`
	Storage          *string           `json:"storage,omitempty"`
	NumSockets       *int32            `json:"numSockets,omitempty"`
	NumCores         *int32            `json:"numCores,omitempty"`
	MemoryMiB        *int32            `json:"memoryMiB,omitempty"`
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

// TemplateSelector picks the template by tags; MatchPolicy defaults to exact.
type TemplateSelector struct {
	MatchPolicy *string  `json:"matchPolicy,omitempty"`
	MatchTags   []string `json:"matchTags"`
}

// Checks turns off capmox's guest probes.
type Checks struct {
	SkipCloudInitStatus *bool `json:"skipCloudInitStatus,omitempty"`
	SkipQemuGuestAgent  *bool `json:"skipQemuGuestAgent,omitempty"`
}

// NetworkSpec lists every NIC, net0 first.
type NetworkSpec struct {
	NetworkDevices []NetworkDevice `json:"networkDevices"`
}

// NetworkDevice is one NIC; Name matches ^net[0-9]+$.
type NetworkDevice struct {
	Name      *string                            `json:"name,omitempty"`
	Bridge    *string                            `json:"bridge,omitempty"`
	Model     *string                            `json:"model,omitempty"`
	MTU       *int32                             `json:"mtu,omitempty"`
	VLAN      *int32                             `json:"vlan,omitempty"`
	IPPoolRef []corev1.TypedLocalObjectReference `json:"ipPoolRef,omitempty"`
}

// ProxmoxMachineStatus is the read part of ProxmoxMachine.status.
type ProxmoxMachineStatus struct {
	ProxmoxNode *string `json:"proxmoxNode,omitempty"`
	VMStatus    *string `json:"vmStatus,omitempty"`
}

// ProxmoxMachine is the read view of a machine: spec and status only.
type ProxmoxMachine struct {
	Spec   ProxmoxMachineSpec   `json:"spec"`
	Status ProxmoxMachineStatus `json:"status,omitempty"`
}
