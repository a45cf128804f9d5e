// Package v1alpha1 holds the proxmox.cozystack.io/v1alpha1 API: the
// cluster-scoped ProxmoxNetworkZone (short name pxzone), which an
// infrastructure admin writes to describe a VLAN-aware Proxmox bridge, its
// Kube-OVN provider network and the VLAN IDs that may be handed out on it;
// the namespaced ProxmoxNetwork (pxnet), which binds one Kube-OVN subnet to a
// zone; and the cluster-scoped ProxmoxVLANClaim (pxvlan), the record that
// makes the Kubernetes API server refuse a second holder of one VLAN ID on
// one provider network.
//
// The package only declares types, constants and their validation markers.
// It never talks to a cluster and holds no logic beyond generated deep copies
// and two small helpers that derive claim names.
//
// +kubebuilder:object:generate=true
// +groupName=proxmox.cozystack.io
package v1alpha1
