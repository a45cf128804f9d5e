package capmox

import "regexp"

// capmox writes a machine NIC into the VM's configuration as
// <model>,bridge=<bridge>[,mtu=N][,tag=N] without escaping, and Proxmox VE
// reads every comma-separated key=value pair of it. A bridge of
// "vmbr70,tag=102" therefore carries a VLAN tag of its own, past every rule
// that reads vlan. The bridge a NIC may name is what both ends accept as a
// plain name: Proxmox VE's bridge ID takes letters, digits, '-', '_' and
// '.', and Linux an interface name of at most 15 bytes. It also starts with
// a letter, as vmbrN and every Proxmox SDN VNet do, so that it is never "."
// or "..", nor read as an option.

// MaxBridgeBytes is the longest bridge name, Linux's limit of an interface
// name.
const MaxBridgeBytes = 15

// BridgePattern is the RE2 expression, anchored, of a bridge name a NIC may
// carry: 1 to 15 letters, digits, '-', '_' or '.', starting with a letter.
// Go and the CEL of the admission policies match it alike.
const BridgePattern = `^[A-Za-z][A-Za-z0-9_.-]{0,14}$`

// MinVLAN and MaxVLAN bound a NIC's VLAN tag, as capmox's CRDs and Proxmox
// VE's tag option do.
const (
	MinVLAN = 1
	MaxVLAN = 4094
)

// BridgeName says in words what BridgePattern matches, for refusals:
// "... is not " + BridgeName.
const BridgeName = "a Linux bridge name such as vmbr0 (1 to 15 letters, digits, hyphens, underscores or dots, starting with a letter)"

var bridgeRe = regexp.MustCompile(BridgePattern)

// ValidBridge reports whether name is a bridge name a NIC may carry
// (BridgePattern).
func ValidBridge(name string) bool { return bridgeRe.MatchString(name) }

// ValidVLAN reports whether id is a VLAN tag a NIC may carry, 1 to 4094.
func ValidVLAN(id int64) bool { return id >= MinVLAN && id <= MaxVLAN }
