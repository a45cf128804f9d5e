// Package cozyid derives the names Cozystack gives the objects of a VPC
// application, the same way its charts do, so that every package that
// renders or looks up those objects agrees with the charts and with each
// other.
//
// A VPC has a name (the application's name, VPCName) and an id (VPCID, the
// Kube-OVN Vpc name); a subnet has a name (SubnetName) and an id (SubnetID,
// shared by the Kube-OVN Subnet, the Vlan, the InClusterIPPool, the
// ProxmoxNetwork and the NetworkAttachmentDefinition). Each is its own type,
// so a name cannot be passed where an id is expected.
//
// The package imports only the standard library.
package cozyid

import (
	"crypto/sha256"
	"encoding/hex"
)

// ReleasePrefix is prepended to a VPC's name to form its Helm release name.
const ReleasePrefix = "virtualprivatecloud-"

// egressSubnet is the subnet name the egress gateway's own overlay subnet is
// hashed under. Subnet names are DNS labels, so it never collides with a
// tenant subnet.
const egressSubnet SubnetName = "__egress"

// VPCName is the name of a VPC application, as the tenant wrote it.
type VPCName string

// VPCID is the id Cozystack derives for a VPC: the name of its Kube-OVN Vpc.
type VPCID string

// SubnetName is the name of a subnet inside a VPC application.
type SubnetName string

// SubnetID is the id Cozystack derives for a subnet of a VPC.
type SubnetID string

// VPC is the id of VPC name in namespace:
// "vpc-" + the first 6 hex characters of sha256("<namespace>/virtualprivatecloud-<name>").
func VPC(namespace string, name VPCName) VPCID {
	return VPCID("vpc-" + shortHash(namespace+"/"+ReleasePrefix+string(name), 6))
}

// Subnet is the id of subnet in the VPC with id vpc:
// "subnet-" + the first 8 hex characters of sha256("<namespace>/<vpc>/<subnet>").
func Subnet(namespace string, vpc VPCID, subnet SubnetName) SubnetID {
	return SubnetID("subnet-" + shortHash(namespace+"/"+string(vpc)+"/"+string(subnet), 8))
}

// Egress is the id of the overlay subnet an egress gateway gets when the
// VPC with id vpc sets egress.internalCidr.
func Egress(namespace string, vpc VPCID) SubnetID {
	return Subnet(namespace, vpc, egressSubnet)
}

// Release is the Helm release name of VPC name: "virtualprivatecloud-<name>".
func Release(name VPCName) string { return ReleasePrefix + string(name) }

func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}
