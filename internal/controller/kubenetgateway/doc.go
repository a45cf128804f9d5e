// Package kubenetgateway is the network.Gateway of the proxmox-network
// controller: it turns what the network reconciler knows about a
// ProxmoxNetwork (namespace, name, provider network, VPC, subnet, VLAN) into
// an ovngateway.Gateway, asks the northbound database to match it, and maps
// the outcome to the GatewayReady condition with its timing.
//
// # Contract
//
//   - Ensure ranks the Nodes ready on the network's provider network that
//     carry an OVN chassis (kubegateway.Candidates, read from a cached
//     reader), reconciles the router port "<vpc>-<subnet>" and reports
//     GatewayReady: True/ChassisAssigned, or False with the reason
//     ovngateway found. While the northbound database fails, a network
//     keeps the GatewayReady condition an earlier pass decided for
//     ovngateway.NBGrace, then turns False/NBUnavailable; a network whose
//     gateway was never decided is False/NBUnavailable at once, so it does
//     not become Ready without a gateway. Errors are returned with the status, so the
//     network reconciler counts them and retries after RetryAfter.
//   - Release deletes every HA_Chassis_Group tagged owner=proxmox-network
//     and network=<namespace>/<name>, so it needs neither the VPC nor the
//     subnet, which are gone by the time a network is released.
//   - Collector deletes, at start and every ovngateway.ResyncPeriod, the
//     owned groups whose ProxmoxNetwork no longer exists, asked through an
//     uncached reader.
//   - ChangedProviders says which provider networks a Node event concerns,
//     so a controller re-reconciles only their networks.
//
// # What it never does
//
// It never writes to Kubernetes, never creates or deletes router ports,
// never touches a group without the owner tag (ovngateway guarantees it),
// and never logs a TLS secret: it does not see one.
package kubenetgateway
