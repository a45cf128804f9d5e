// Package v1 mirrors the few fields of the Kube-OVN kubeovn.io/v1 kinds Vlan,
// Subnet and ProviderNetwork that pxsubstrate reads or writes. The real CRDs
// are Kube-OVN's own; this package generates none. Tests create objects
// through these types against the real CRDs and read them back unchanged, so
// every json tag here is the one Kube-OVN serves.
//
// A mirror does not know the fields it omits: change a live Kube-OVN object
// with a patch computed from two mirrors (client.MergeFrom), never with a
// full Update, which would drop those fields.
//
// +kubebuilder:object:generate=true
// +groupName=kubeovn.io
package v1
