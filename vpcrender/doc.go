// Package vpcrender turns a tenant VPC spec into the objects that make its
// subnets real: the Kube-OVN Vpc and Subnets, one NetworkAttachmentDefinition
// per subnet, and for every subnet marked `proxmox: {}` the VLAN-backed
// switch of the tenant's own router, its InClusterIPPool over the VM range
// and the ProxmoxNetwork the controller allocates a VLAN for; with egress,
// the VpcEgressGateway and the Vpc policy routes that keep routed traffic
// away from it.
//
// Names are deterministic and need no lookup: the VPC is
// "vpc-" + the first 6 hex characters of sha256("<ns>/virtualprivatecloud-<vpc>")
// and a subnet is "subnet-" + the first 8 hex characters of
// sha256("<ns>/<vpc id>/<subnet>"). The Kube-OVN Subnet, the Vlan the
// controller creates, the InClusterIPPool, the ProxmoxNetwork and the
// NetworkAttachmentDefinition all carry the subnet id.
//
// Render is a pure function: it reads only its argument, does no I/O, and
// returns the same objects in the same order for the same spec. A spec the
// platform must not accept is refused with a *RefusalError (errors.Is
// ErrRefused) whose message says what is wrong and what to change.
//
// The package never creates a Vlan (the controller allocates those), never
// talks to a cluster, and never decides admission: see package admission.
package vpcrender
