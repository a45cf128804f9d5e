package pvesdn

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvesdn/vnetid"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// Zone is what pvesdn needs of a VLAN zone.
type Zone struct {
	// Name names the zone in messages (the ProxmoxNetworkZone's name).
	Name string
	// Bridge is the Proxmox bridge the zone's VLANs ride on every node.
	Bridge string
	// VLANs are the IDs the zone may hand out (ranges minus reserved).
	VLANs vlanalloc.Set
	// MTU is the zone's MTU; 0 leaves it unchecked.
	MTU int
	// SDNZone is the Proxmox SDN zone of the zone's VNets (Phase 2); its
	// VNets on the zone's bridge are the zone's own, not a conflict. Empty:
	// no VNets are ours.
	SDNZone string
	// VNetPrefix starts every VNet ID of the zone (1-4 characters, letters
	// and digits, starting with a letter); default the first four
	// characters of SDNZone.
	VNetPrefix string
}

// ErrInvalidZone wraps every refusal of a Zone.
var ErrInvalidZone = errors.New("invalid zone")

var (
	// sdnIDRe is pve-network's pve-sdn-zone-id and pve-sdn-vnet-id
	// (src/PVE/Network/SDN/Zones/Plugin.pm, VnetPlugin.pm): 2 to 8
	// characters.
	sdnIDRe    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]*[a-zA-Z0-9]$`)
	ifaceNameR = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]{0,14}$`)
)

// prefix returns the VNet prefix, the default filled in.
func (z Zone) prefix() string { return vnetid.Prefix(z.SDNZone, z.VNetPrefix) }

// Validate checks the fields Check needs; withSDN also those of VNets.
func (z Zone) Validate(withSDN bool) error {
	switch {
	case !ifaceNameR.MatchString(z.Bridge):
		return errorf("%w %q: bridge %q is not a Linux interface name", ErrInvalidZone, z.Name, z.Bridge)
	case z.VLANs.Len() == 0:
		return errorf("%w %q: it has no VLANs to hand out", ErrInvalidZone, z.Name)
	case z.MTU < 0:
		return errorf("%w %q: mtu %d is negative", ErrInvalidZone, z.Name, z.MTU)
	}
	if !withSDN {
		return nil
	}
	if z.SDNZone == "" || len(z.SDNZone) > 8 || !sdnIDRe.MatchString(z.SDNZone) {
		return errorf("%w %q: sdn.zone %q is not a Proxmox SDN zone ID (2-8 letters and digits, starting with a letter)",
			ErrInvalidZone, z.Name, z.SDNZone)
	}
	if p := z.prefix(); !vnetid.ValidPrefix(p) {
		return errorf("%w %q: sdn.vnetPrefix %q must be 1-4 letters and digits starting with a letter, so that "+
			"prefix and a 4-digit VLAN ID make a VNet ID of at most 8 characters", ErrInvalidZone, z.Name, p)
	}
	return nil
}

// VNetID is the VNet of a VLAN: the prefix and the VLAN ID in four digits
// ("pxa" and 117 give "pxa0117"), which satisfies Proxmox's VNet ID rule.
func (z Zone) VNetID(vlan int) string { return vnetid.ID(z.prefix(), vlan) }

// errText renders an API error as PVE words it: the status code and the
// message, with the parameter errors, each cut as termsafe cuts a value.
func errText(err error) string {
	var ae *proxmox.APIError
	if !errors.As(err, &ae) {
		return termsafe.Cut(err.Error())
	}
	msg := fmt.Sprintf("%d %s", ae.StatusCode, termsafe.Cut(strings.TrimSpace(ae.Message)))
	for _, k := range slices.Sorted(maps.Keys(ae.Errors)) {
		msg += fmt.Sprintf("; %s: %s", termsafe.Cut(k), termsafe.Cut(strings.TrimSpace(ae.Errors[k])))
	}
	return msg
}

// sprintf and errorf print every string argument cut (termsafe.CutArgs):
// the names, states and texts their messages echo come from the API (or
// from a zone spec), and a message stays a line whatever they hold. Only
// values go through them, never a sentence the code wrote.
func sprintf(format string, args ...any) string {
	return fmt.Sprintf(format, termsafe.CutArgs(args...)...)
}

func errorf(format string, args ...any) error {
	return fmt.Errorf(format, termsafe.CutArgs(args...)...)
}
