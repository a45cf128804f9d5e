package capmox

// The names the renderer (capmoxrender) writes on a tenant cluster's
// objects, the proxmox-network controller selects them by, and verify
// reads back: one spelling for the three, so that none keeps a copy.

// Labels Cluster API puts on the objects of a cluster (Machines,
// ProxmoxMachines) and of a pool (MachineDeployments, Machines), which
// select them.
const (
	LabelClusterName    = "cluster.x-k8s.io/cluster-name"
	LabelDeploymentName = "cluster.x-k8s.io/deployment-name"
)

// AnnotationManagedBy marks a Cluster API infrastructure cluster as managed
// outside Cluster API. The renderer never sets it on a ProxmoxCluster:
// with it Cluster API never sets the ownerRef and capmox waits forever,
// which verify reports.
const AnnotationManagedBy = "cluster.x-k8s.io/managed-by"

// Pool HA (proxmox.ha): the label on the MachineDeployment and its
// Machines that the proxmox-network controller selects them by, and the
// Cluster API pre-terminate hook on each Machine, which holds the
// Machine's deletion after its Node is drained and before capmox destroys
// the VM, until the controller has removed the VM's HA resource (capmox
// never does, and qemu-server refuses to destroy an HA-managed VM).
const (
	LabelHA = "proxmox.cozystack.io/ha"
	HookHA  = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/proxmox-ha"
	// HookOwner is the hook annotation's value, the controller that
	// removes it.
	HookOwner = "proxmox-network-controller"
)

// The management-side controllers of a tenant cluster: the Deployments
// <cluster>-pccm (the Proxmox cloud-controller-manager) and
// <cluster>-pcsi-controller (the Proxmox CSI controller), each mounting
// its credentials Secret as the volume CredentialsVolume.
const (
	SuffixCCM           = "-pccm"
	SuffixCSIController = "-pcsi-controller"
	CredentialsVolume   = "proxmox-credentials"
)

// HostEntriesPath is the Talos machine config path of the host entries a
// worker resolves its control plane endpoint with: the renderer writes the
// patch, and verify reads it back from each Machine's TalosConfig.
const HostEntriesPath = "/machine/network/extraHostEntries"
