package admission

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/samber/lo"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/pvesdn/vnetid"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// DefaultReleaseNamespace is where the proxmox-network package runs.
const DefaultReleaseNamespace = "cozy-proxmox-network"

// Config is what the policies are built from: the zones and the admission
// section of the proxmox-network package values.
type Config struct {
	// ReleaseNamespace is the package's own namespace; the attachment
	// policies skip it.
	ReleaseNamespace string
	Zones            []Zone
	// MachineBinding switches proxmox-network-machine-binding on
	// (admission.enabled).
	MachineBinding bool
	// VMAttachments switches proxmox-network-vm-attachments on
	// (admission.vmNetworkNamespace).
	VMAttachments bool
	// PodAttachments switches proxmox-network-pod-attachments on
	// (admission.podNetworkNamespace).
	PodAttachments bool
	// ImmutableFields switches proxmox-kubernetes-immutable-fields on
	// (admission.immutableFields).
	ImmutableFields bool
	// ValidationActions of every binding; empty means Deny.
	ValidationActions []admissionregistrationv1.ValidationAction
	// ExemptNamespaces are skipped by both attachment policies, on top of
	// the platform's own.
	ExemptNamespaces []string
}

// Zone is what admission needs of a ProxmoxNetworkZone.
type Zone struct {
	Name   string
	Bridge string
	// UplinkVLAN is the outer VLAN carrying the zone bridge between
	// hypervisors; 0 means unset. No NIC on another bridge may use it.
	UplinkVLAN int
	// UplinkBridges enslave the uplink's parent device; no NIC may use them.
	UplinkBridges []string
	// EgressGatewayNamespace runs the zone's egress gateways; the
	// attachment policies skip it.
	EgressGatewayNamespace string
	// VNetPrefix is set when the zone gives each VLAN its own Proxmox SDN
	// VNet (sdn.mode VNets): the zone's VNets are the prefix and four
	// digits (pxa0117), as pvesdn names them. A NIC on one must carry no
	// VLAN tag and be a <vnet>/<pool> of its namespace. Empty: no VNets.
	VNetPrefix string
}

// DefaultConfig is the package default: every policy on, Deny, no zones.
func DefaultConfig() Config {
	return Config{ReleaseNamespace: DefaultReleaseNamespace, MachineBinding: true, VMAttachments: true, PodAttachments: true, ImmutableFields: true}
}

// ErrConfig marks a configuration the policies cannot be built from.
var ErrConfig = errors.New("invalid admission configuration")

// Validate returns the package's render failures, with their exact text.
func (c Config) Validate() error {
	var errs []error
	bridges := map[string]bool{}
	for i, z := range c.Zones {
		if z.Name == "" {
			errs = append(errs, fmt.Errorf("%w: zones[%d]: set the zone's name", ErrConfig, i))
		}
		if z.Bridge == "" {
			errs = append(errs, fmt.Errorf("%w: zones[%s]: set the zone's bridge", ErrConfig, termsafe.Cut(z.Name)))
		}
		bridges[z.Bridge] = true
		if z.UplinkVLAN != 0 && (z.UplinkVLAN < 1 || z.UplinkVLAN > 4094) {
			errs = append(errs, fmt.Errorf("%w: zones[%s].uplinkVLAN must be a VLAN ID (1-4094), got %d", ErrConfig, termsafe.Cut(z.Name), z.UplinkVLAN))
		}
		if z.VNetPrefix != "" && !vnetid.ValidPrefix(z.VNetPrefix) {
			errs = append(errs, fmt.Errorf("%w: zones[%s].sdn.vnetPrefix %s must be 1-4 letters and digits starting with a letter", ErrConfig, termsafe.Cut(z.Name), termsafe.Quote(z.VNetPrefix)))
		}
	}
	for _, z := range c.Zones {
		for _, p := range c.vnetPrefixes() {
			if vnetid.Match(p, z.Bridge) {
				errs = append(errs, fmt.Errorf("%w: zones[%s].bridge %s is named like a VNet of prefix %s: rename the bridge or choose another sdn.vnetPrefix", ErrConfig, termsafe.Cut(z.Name), termsafe.Cut(z.Bridge), p))
			}
		}
	}
	for _, b := range c.uplinkBridges() {
		if bridges[b] {
			errs = append(errs, fmt.Errorf("%w: uplinkBridges lists %s, which is a zone bridge", ErrConfig, termsafe.Cut(b)))
		}
	}
	deny, warn := false, false
	for _, a := range c.ValidationActions {
		switch a {
		case admissionregistrationv1.Deny:
			deny = true
		case admissionregistrationv1.Warn:
			warn = true
		case admissionregistrationv1.Audit:
		default:
			errs = append(errs, fmt.Errorf("%w: admission.validationActions: %s is not Deny, Warn or Audit", ErrConfig, termsafe.Quote(string(a))))
		}
	}
	if deny && warn {
		errs = append(errs, fmt.Errorf("%w: admission.validationActions: Deny and Warn cannot be used together", ErrConfig))
	}
	return termsafe.Join(errs...)
}

func (c Config) zoneBridges() []string {
	return uniq(lo.Map(c.Zones, func(z Zone, _ int) string { return z.Bridge }))
}

// vnetPrefixes lists the VNet prefixes of the zones in mode VNets.
func (c Config) vnetPrefixes() []string {
	return uniq(lo.Map(c.Zones, func(z Zone, _ int) string { return z.VNetPrefix }))
}

func (c Config) uplinkVLANs() []int {
	return lo.Uniq(lo.Without(lo.Map(c.Zones, func(z Zone, _ int) int { return z.UplinkVLAN }), 0))
}

func (c Config) uplinkBridges() []string {
	return uniq(lo.FlatMap(c.Zones, func(z Zone, _ int) []string { return z.UplinkBridges }))
}

// exemptNamespaces lists the namespaces both attachment policies skip, on
// top of every cozy-* namespace.
func (c Config) exemptNamespaces() []string {
	egress := lo.Map(c.Zones, func(z Zone, _ int) string { return z.EgressGatewayNamespace })
	return uniq(slices.Concat([]string{"kube-system", c.ReleaseNamespace}, egress, c.ExemptNamespaces))
}

func (c Config) validationActions() []admissionregistrationv1.ValidationAction {
	if len(c.ValidationActions) == 0 {
		return []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
	}
	return c.ValidationActions
}

// uniq drops empty strings and repeats, keeping the first of each.
func uniq(in []string) []string { return lo.Uniq(lo.Compact(in)) }

// rawConfig is the YAML shape of the package values the policies read.
type rawConfig struct {
	ReleaseNamespace *string   `json:"releaseNamespace"`
	Zones            []rawZone `json:"zones"`
	Admission        struct {
		Enabled             *bool                                      `json:"enabled"`
		ValidationActions   []admissionregistrationv1.ValidationAction `json:"validationActions"`
		VMNetworkNamespace  *bool                                      `json:"vmNetworkNamespace"`
		PodNetworkNamespace *bool                                      `json:"podNetworkNamespace"`
		ImmutableFields     *bool                                      `json:"immutableFields"`
		ExemptNamespaces    []string                                   `json:"exemptNamespaces"`
	} `json:"admission"`
}

type rawZone struct {
	Name          string `json:"name"`
	Bridge        string `json:"bridge"`
	UplinkVLAN    any    `json:"uplinkVLAN"`
	UplinkBridges any    `json:"uplinkBridges"`
	Egress        struct {
		GatewayNamespace string `json:"gatewayNamespace"`
	} `json:"egress"`
	SDN *rawSDN `json:"sdn"`
}

// rawSDN is what admission reads of a zone's spec.sdn: which bridge names
// are the zone's VNets. credentialsRef is the controller's.
type rawSDN struct {
	Mode       string `json:"mode"`
	Zone       string `json:"zone"`
	VNetPrefix string `json:"vnetPrefix"`
}

// vnetPrefix is the zone's VNet prefix in mode VNets, "" in mode Check.
func (s *rawSDN) vnetPrefix(zone string) (string, error) {
	if s == nil {
		return "", nil
	}
	switch s.Mode {
	case v1alpha1.SDNModeCheck:
		return "", nil
	case v1alpha1.SDNModeVNets:
	default:
		return "", fmt.Errorf("%w: zones[%s].sdn.mode %s is neither Check nor VNets", ErrConfig, termsafe.Cut(zone), termsafe.Quote(s.Mode))
	}
	p := vnetid.Prefix(s.Zone, s.VNetPrefix)
	if p == "" {
		return "", fmt.Errorf("%w: zones[%s].sdn: mode VNets needs sdn.zone (its first four characters are the VNet prefix) or sdn.vnetPrefix", ErrConfig, termsafe.Cut(zone))
	}
	return p, nil
}

// ParseConfig reads the package values (releaseNamespace, zones and
// admission) from YAML or JSON. Keys it does not use, such as a zone's
// vlanRanges, are allowed, so the package's values file can be passed as is;
// a key it reads spelt in another case (Zones:, uplinkVlan:) or a key given
// twice is refused by its path.
// Missing switches take the package defaults.
func ParseConfig(data []byte) (Config, error) {
	var raw rawConfig
	if err := strictyaml.UnmarshalOpen(data, &raw); err != nil {
		return Config{}, fmt.Errorf("cannot parse admission configuration: %w: %w", ErrConfig, err)
	}
	c := DefaultConfig()
	if raw.ReleaseNamespace != nil {
		c.ReleaseNamespace = *raw.ReleaseNamespace
	}
	setBool(&c.MachineBinding, raw.Admission.Enabled)
	setBool(&c.VMAttachments, raw.Admission.VMNetworkNamespace)
	setBool(&c.PodAttachments, raw.Admission.PodNetworkNamespace)
	setBool(&c.ImmutableFields, raw.Admission.ImmutableFields)
	c.ValidationActions = raw.Admission.ValidationActions
	c.ExemptNamespaces = raw.Admission.ExemptNamespaces
	for i, rz := range raw.Zones {
		z, err := rz.zone(i)
		if err != nil {
			return Config{}, err
		}
		c.Zones = append(c.Zones, z)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

func (rz rawZone) zone(i int) (Zone, error) {
	z := Zone{Name: rz.Name, Bridge: rz.Bridge, EgressGatewayNamespace: rz.Egress.GatewayNamespace}
	if z.Name == "" {
		return Zone{}, fmt.Errorf("%w: zones[%d]: set the zone's name", ErrConfig, i)
	}
	if rz.UplinkVLAN != nil {
		v, ok := vlanID(rz.UplinkVLAN)
		if !ok {
			return Zone{}, fmt.Errorf("%w: zones[%s].uplinkVLAN must be a VLAN ID (1-4094), got %s", ErrConfig, termsafe.Cut(z.Name), termsafe.Cut(fmt.Sprint(rz.UplinkVLAN)))
		}
		z.UplinkVLAN = v
	}
	p, err := rz.SDN.vnetPrefix(z.Name)
	if err != nil {
		return Zone{}, err
	}
	z.VNetPrefix = p
	if rz.UplinkBridges != nil {
		list, ok := rz.UplinkBridges.([]any)
		if !ok {
			return Zone{}, fmt.Errorf("%w: zones[%s].uplinkBridges must be a list of bridge names", ErrConfig, termsafe.Cut(z.Name))
		}
		for _, b := range list {
			s, ok := b.(string)
			if !ok || s == "" {
				return Zone{}, fmt.Errorf("%w: zones[%s].uplinkBridges must be a list of bridge names", ErrConfig, termsafe.Cut(z.Name))
			}
			z.UplinkBridges = append(z.UplinkBridges, s)
		}
	}
	return z, nil
}

// vlanID accepts a whole number or a numeric string in 1..4094.
func vlanID(v any) (int, bool) {
	var n float64
	switch t := v.(type) {
	case int64:
		n = float64(t)
	case float64:
		n = t
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil {
			return 0, false
		}
		n = float64(i)
	default:
		return 0, false
	}
	if n != math.Trunc(n) || n < 1 || n > 4094 {
		return 0, false
	}
	return int(n), true
}
