// Package ovnadapter plugs package ovngateway into package network: it is a
// network.Gateway that ranks the provider network's trunk Nodes, keeps each
// network's OVN HA_Chassis_Group with ovngateway's Client, maps outcomes to
// GatewayReady with ovngateway's NB grace, and releases a network's group by
// its router port or, when the subnet (and so the VPC) is already gone, by
// the group's network tag.
//
// It reads Nodes through the given reader and never writes Kubernetes
// objects; it writes OVN only through ovngateway.
package ovnadapter
