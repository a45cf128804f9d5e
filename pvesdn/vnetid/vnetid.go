// Package vnetid names the Proxmox SDN VNets of a zone's VLANs: the zone's
// prefix and the VLAN ID in four digits ("pxa" and 117 give "pxa0117").
// It imports only the standard library, so that the admission rules
// recognise a zone's VNets by the same rule pvesdn creates them with,
// without the Proxmox client.
package vnetid

import (
	"fmt"
	"regexp"
)

// Digits is how many digits of the VLAN ID end every VNet ID.
const Digits = 4

// prefixRe: 1-4 letters and digits starting with a letter, so that the
// prefix and four digits make at most 8 characters, pve-network's limit
// of a VNet ID (pve-sdn-vnet-id).
var prefixRe = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]{0,3}$`)

// Prefix is a zone's VNet prefix: vnetPrefix when set, else the first four
// characters of the Proxmox SDN zone ID sdnZone.
func Prefix(sdnZone, vnetPrefix string) string {
	if vnetPrefix != "" {
		return vnetPrefix
	}
	if len(sdnZone) > Digits {
		return sdnZone[:Digits]
	}
	return sdnZone
}

// ValidPrefix reports whether p can start a VNet ID: 1-4 letters and
// digits, starting with a letter.
func ValidPrefix(p string) bool { return prefixRe.MatchString(p) }

// ID is the VNet of VLAN vlan under prefix.
func ID(prefix string, vlan int) string { return fmt.Sprintf("%s%0*d", prefix, Digits, vlan) }

// Match reports whether name is a VNet ID under prefix: the prefix and
// exactly four digits. It names every ID the prefix can make, not only
// those of VLANs a zone hands out, so that no VNet of the zone's namespace
// of names escapes a rule that guards them.
func Match(prefix, name string) bool {
	if prefix == "" || len(name) != len(prefix)+Digits || name[:len(prefix)] != prefix {
		return false
	}
	for _, c := range name[len(prefix):] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
