// Package admission decides which NIC, network attachment or logical-switch
// pin a tenant object may carry, so that no tenant reaches another tenant's
// VLAN or the shared transit network through capmox, Multus or Kube-OVN.
//
// It holds the four policy sets of the proxmox-network package:
//
//   - proxmox-network-machine-binding: CREATE of ProxmoxMachine and
//     ProxmoxMachineTemplate (both capmox API versions, in every namespace):
//     every NIC's bridge is a Linux bridge name and its VLAN a VLAN ID
//     (capmox.ValidBridge, capmox.ValidVLAN), since capmox writes the bridge
//     into net0 unescaped; a NIC on a zone bridge must be one of the
//     namespace's own networks, as listed in its
//     proxmox.cozystack.io/networks annotation; a NIC on a zone's Proxmox
//     SDN VNet carries no tag and must be one of the namespace's
//     <vnet>/<pool> entries; no NIC on another bridge may carry a zone's
//     uplink VLAN; no NIC may sit on an uplink bridge; in a namespace that
//     owns networks every NIC must be one of them and network.default must
//     be set.
//   - proxmox-network-vm-attachments: CREATE and UPDATE of KubeVirt
//     VirtualMachines and VirtualMachineInstances: multus networks and the
//     annotations KubeVirt copies onto the launcher pod stay in the object's
//     own namespace.
//   - proxmox-network-pod-attachments: the same annotation rule on pods.
//   - proxmox-kubernetes-immutable-fields: UPDATE of the Kubernetes and
//     KubernetesNodes applications (apps.cozystack.io, judged by the
//     aggregated API server's own admission) and of the Flux HelmReleases
//     it stores them as (helm.toolkit.fluxcd.io, told by their
//     apps.cozystack.io/application.* labels): substrate, and a pool's
//     cluster and storageClass, may not change, nor those labels.
//
// The attachment policies skip cozy-* namespaces, kube-system, the package's
// release namespace, every zone's egress gateway namespace and a configured
// list, and objects being deleted; on UPDATE they judge only new or changed
// entries.
//
// The same rules run three ways, and agree: Validator.Review (pure Go, no
// I/O), the admission/v1 webhook Handler, and the ValidatingAdmissionPolicy
// and ValidatingAdmissionPolicyBinding objects of Policies, whose CEL a
// kube-apiserver evaluates with failurePolicy Fail.
//
// A differential test holds them together on every run: in a real
// kube-apiserver (1.37, envtest) serving the capmox v0.9 CRDs (v1alpha1 and
// v1alpha2; the machine CRDs without their bounds on a NIC's bridge and
// vlan, so that the policies judge those values), KubeVirt's VM and VMI kinds, Flux's HelmRelease CRD and
// stand-ins for the two applications, the 83 table pairs (166 requests) and
// 400 generated requests (100 machines, 100 VMs and VMIs, 100 pods, 100
// HelmReleases and applications, drawn by pgregory.net/rapid)
// go through the generated policies as server-side dry runs, CREATE and
// UPDATE, and each answer must equal the Go validator's; the 166 pair
// requests then go through the webhook Handler over TLS instead.
//
// The package never writes to a cluster and never reads one except through
// the NamespaceGetter a caller hands to the Handler.
package admission
