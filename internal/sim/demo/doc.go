// Package demo is the story `pxsubstrate demo` tells: a sequence of named
// acts played on the simulator (package sim) and printed as short tables,
// ending with a table of invariants checked on the final world. Each act
// lives in its own file and adds itself to Acts in order; a later concern
// adds its act the same way.
//
// The controller runs with gateways: Run starts libovsdb's in-memory OVN
// northbound database on unix sockets in a temporary directory (removed at
// the end), the simulated Kube-OVN writes each VPC subnet's router port
// there, and the controller gives every port an HA_Chassis_Group of the
// trunk Nodes through ovngateway and the controller's own gateway adapter
// (internal/controller/kubenetgateway). The gateway
// invariants are judged on rows read back from that database.
//
// The demo needs no flags and no cluster: everything runs in memory with a
// fake clock. It reads no configuration from the machine's environment and
// talks to nothing outside the process: the Proxmox VE API listens on
// loopback and the NB on unix sockets. While the NB runs it silences the
// standard library logger, where libovsdb's server reports the connection
// the demo cuts on purpose.
package demo
