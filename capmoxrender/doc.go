// Package capmoxrender renders the Cluster API objects of a tenant
// Kubernetes cluster whose workers run on Proxmox VE through capmox
// (Cozystack's substrate: proxmox), for both capmox API generations:
// v1alpha1 (capmox v0.7, CAPI contract v1beta1) and v1alpha2 (capmox v0.8
// and later, CAPI v1beta2).
//
// RenderCluster turns a Kubernetes object into the CAPI Cluster, the Kamaji
// control plane published as a LoadBalancer, the ProxmoxCluster, the Proxmox
// CCM and CSI controllers that run in the management cluster, and the
// tenant-side CSI HelmRelease. RenderNodes turns a KubernetesNodes pool into
// its hash-named ProxmoxMachineTemplate and TalosConfigTemplate, its
// MachineDeployment and its MachineHealthCheck.
//
// Rendering is pure and deterministic. Every refusal is a *RefusalError
// (errors.Is ErrRefused) whose message is Cozystack's where one exists, and
// every capmox value is checked against the constraints of the real CRD
// schema before it is returned (a value the schema would reject is rounded,
// such as memoryMiB to a multiple of 8, or refused). Live questions (the
// substrate guards, VPC subnet lookups) go through SubstrateLookup and
// NetworkLookup; without them the guards do nothing.
//
// It never talks to a cluster or to Proxmox, and never reads or emits a
// credential value: the controllers build their cloud-config from the
// credentials Secret at Pod start.
package capmoxrender
