package capmoxrender

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

var (
	percent  = regexp.MustCompile(`^[0-9]+%$`)
	bareInt  = regexp.MustCompile(`^[0-9]+$`)
	wholeDur = regexp.MustCompile(`^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`)
	extraNIC = regexp.MustCompile(`^net([1-9]|[12][0-9]|3[01])$`)
)

func planHealth(p *nodesPlan, s NodesSpec, _ Options) error {
	mu := DefaultMaxUnhealthy
	if s.MaxUnhealthy != nil {
		mu = string(*s.MaxUnhealthy)
	}
	switch {
	case percent.MatchString(mu):
		// Cluster API's webhook reads the percentage with strconv.Atoi
		// (intstr.GetScaledValueFromIntOrPercent) and refuses what
		// overflows it.
		if _, err := strconv.Atoi(strings.TrimSuffix(mu, "%")); err != nil {
			return refuse("maxUnhealthy", "maxUnhealthy %q is too large: Cluster API refuses a percentage that does not fit a 64-bit integer; anything from 100%% up lets every worker be remediated at once", mu)
		}
		p.maxUnhealthy = intstr.FromString(mu)
	case bareInt.MatchString(mu):
		v, err := strconv.ParseInt(mu, 10, 32)
		if err != nil {
			return refuse("maxUnhealthy", "maxUnhealthy %q is too large", mu)
		}
		p.maxUnhealthy = intstr.FromInt32(int32(v))
	default:
		return refuse("maxUnhealthy", "maxUnhealthy must be a bare integer (e.g. 0, 1) or an integer percentage (e.g. 50%%), got %q", mu)
	}
	var err error
	durations := []struct {
		field, value, def string
		into              *time.Duration
	}{
		{"nodeStartupTimeout", s.NodeStartupTimeout, DefaultNodeStartupTimeout, &p.startup},
		{"readyUnknownTimeout", s.ReadyUnknownTimeout, DefaultReadyUnknownTimeout, &p.readyUnknown},
		{"readyFalseTimeout", s.ReadyFalseTimeout, DefaultReadyFalseTimeout, &p.readyFalse},
	}
	for _, d := range durations {
		if *d.into, err = positiveDuration(d.field, or(d.value, d.def)); err != nil {
			return err
		}
	}
	if p.startup < MinNodeStartupTimeout {
		return refuse("nodeStartupTimeout", "nodeStartupTimeout %q is below %s, the least Cluster API's MachineHealthCheck webhook admits (\"must be at least 30s\"); a worker needs longer than that to clone, boot and join anyway", or(s.NodeStartupTimeout, DefaultNodeStartupTimeout), MinNodeStartupTimeout)
	}
	p.provisionTime = or(s.MaxNodeProvisionTime, DefaultMaxNodeProvisionTime)
	if !wholeDur.MatchString(p.provisionTime) {
		return refuse("maxNodeProvisionTime", "maxNodeProvisionTime %q must be a whole number of hours, minutes or seconds such as 30m or 1h30m", p.provisionTime)
	}
	_, err = positiveDuration("maxNodeProvisionTime", p.provisionTime)
	return err
}

// maxTimeout is the longest timeout a pool's duration fields take:
// 2^31-1 seconds (596523h14m7s), the most the MachineHealthCheck's 32-bit
// seconds fields hold (nodeStartupTimeoutSeconds, timeoutSeconds).
const maxTimeout = time.Duration(1<<31-1) * time.Second

func positiveDuration(field, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, refuse(field, "%s %q is not a duration: write a positive whole number of seconds, minutes or hours such as 5m or 1h30m", field, v)
	case d <= 0:
		return 0, refuse(field, "%s %q must be a positive whole number of seconds, minutes or hours such as 5m: a zero or negative timeout would remediate the moment the condition flips", field, v)
	case d%time.Second != 0:
		return 0, refuse(field, "%s %q is not a whole number of seconds: write it in seconds, minutes or hours such as 90s or 5m", field, v)
	case d > maxTimeout:
		return 0, refuse(field, "%s %q is too large: the most is %s (2^31-1 seconds, what the MachineHealthCheck's 32-bit seconds fields hold)", field, v, maxTimeout)
	}
	return d, nil
}

// fixedReplicas checks replicas: N, a pool of exactly N workers (the
// autoscaler's minimum and maximum both N). minReplicas or maxReplicas next
// to it must say the same.
func fixedReplicas(s NodesSpec) error {
	n := *s.Replicas
	if n < 1 {
		return refuse("replicas", "replicas %d: a fixed pool needs at least 1 worker; set minReplicas: 0 and maxReplicas for a pool that may scale to zero", n)
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{{"minReplicas", s.MinReplicas}, {"maxReplicas", s.MaxReplicas}} {
		if f.v != nil && *f.v != n {
			return refuse("replicas", "replicas %d fixes the pool at %d workers, but %s is %d: set either replicas, or minReplicas and maxReplicas for an autoscaled pool", n, n, f.name, *f.v)
		}
	}
	return nil
}

func planReplicas(p *nodesPlan, s NodesSpec, _ Options) error {
	p.minReplicas, p.maxReplicas = 0, 10
	if s.Replicas != nil {
		if err := fixedReplicas(s); err != nil {
			return err
		}
		p.minReplicas, p.maxReplicas = *s.Replicas, *s.Replicas
	}
	if s.MinReplicas != nil {
		p.minReplicas = *s.MinReplicas
	}
	if s.MaxReplicas != nil {
		p.maxReplicas = *s.MaxReplicas
	}
	if p.minReplicas < 0 || p.maxReplicas < 1 || p.minReplicas > p.maxReplicas {
		return refuse("maxReplicas", "minReplicas %d and maxReplicas %d must satisfy 0 <= minReplicas <= maxReplicas and maxReplicas >= 1", p.minReplicas, p.maxReplicas)
	}
	p.roles = append([]string(nil), s.Roles...)
	return nil
}

// planNICs resolves net0 and the additional NICs: a raw bridge, or VPC
// subnets looked up in the release namespace.
func planNICs(ctx context.Context, o Options, ns string, px NodesProxmox) ([]nic, error) {
	l, nw := o.Networks, px.Network
	vpcMode := nw.VPC != "" || nw.Subnet != ""
	var first nic
	switch {
	case vpcMode && (nw.Bridge != "" || nw.VLAN != nil):
		return nil, refuse("proxmox.network", "proxmox.network: set either vpc/subnet or bridge/vlan, not both; a VPC subnet's bridge and VLAN come from the platform")
	case vpcMode:
		n, err := vpcNIC(ctx, l, ns, "proxmox.network", "net0", SubnetRef{VPC: nw.VPC, Subnet: nw.Subnet}, nw.MTU)
		if err != nil {
			return nil, err
		}
		first = n
	case nw.Bridge == "":
		return nil, refuse("proxmox.network.bridge", "substrate proxmox requires proxmox.network.bridge")
	default:
		if !capmox.ValidBridge(nw.Bridge) {
			return nil, refuse("proxmox.network.bridge", "proxmox.network.bridge %q is not %s: "+
				"capmox writes it into the VM's net0 as it is, so a comma would start a setting of its own; put the VLAN in proxmox.network.vlan",
				nw.Bridge, capmox.BridgeName)
		}
		first = nic{name: "net0", bridge: nw.Bridge, vlan: nw.VLAN, mtu: nw.MTU}
	}
	if err := checkNICValues("proxmox.network", first); err != nil {
		return nil, err
	}
	out := []nic{first}
	seen := map[string]bool{}
	for _, a := range px.AdditionalNetworks {
		if !extraNIC.MatchString(a.Name) {
			return nil, refuse("proxmox.additionalNetworks", "proxmox.additionalNetworks: name %q must be net1..net31", a.Name)
		}
		if seen[a.Name] {
			return nil, refuse("proxmox.additionalNetworks", "proxmox.additionalNetworks: %s is used twice", a.Name)
		}
		seen[a.Name] = true
		f := fmt.Sprintf("proxmox.additionalNetworks[%s]", a.Name)
		if a.VPC == "" || a.Subnet == "" {
			return nil, refuse(f, "%s: set vpc and subnet; extra NICs only attach to Proxmox-backed VPC subnets", f)
		}
		n, err := vpcNIC(ctx, l, ns, f, a.Name, SubnetRef{VPC: a.VPC, Subnet: a.Subnet}, a.MTU)
		if err != nil {
			return nil, err
		}
		if err := checkNICValues(f, n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if o.Capmox != CapmoxV07 {
		if err := consecutiveNICs(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// consecutiveNICs holds the NICs to what capmox v0.8 and later admit: its
// ProxmoxMachine webhook sorts a machine's networkDevices by name as text
// and refuses one whose i-th name is not net<i> ("Non-consecutive proxmox
// interface name"). So the names must be net0 to net<N-1> without a gap,
// and net10 or beyond is never admitted, since "net10" sorts before
// "net2". The ProxmoxMachineTemplate webhook does not check it: a template
// would be admitted and every Machine made from it refused.
func consecutiveNICs(nics []nic) error {
	names := make([]string, 0, len(nics))
	for _, n := range nics {
		names = append(names, n.name)
	}
	for _, n := range names {
		if i, _ := strconv.Atoi(strings.TrimPrefix(n, "net")); i >= 10 {
			return refuse("proxmox.additionalNetworks", "proxmox.additionalNetworks: %s: capmox v0.8 and later order NIC names as text (net10 sorts before net2) and refuse a machine whose names are not net0, net1, net2, … in that order (\"Non-consecutive proxmox interface name\"), so no machine with net10 or beyond is admitted; use at most nine additional NICs, net1 to net9", n)
		}
	}
	slices.Sort(names)
	for i, n := range names {
		if n != fmt.Sprintf("net%d", i) {
			return refuse("proxmox.additionalNetworks", "proxmox.additionalNetworks: the NICs are %s: capmox v0.8 and later admit a machine only when its NICs are net0, net1, net2, … without a gap (\"Non-consecutive proxmox interface name\"), and the Machines made from this template would all be refused; name the additional NICs net1 to net%d", strings.Join(names, ", "), len(names)-1)
		}
	}
	return nil
}

func vpcNIC(ctx context.Context, l NetworkLookup, ns, field, name string, ref SubnetRef, mtu *int) (nic, error) {
	n, id, err := resolveNetwork(ctx, l, field, ns, ref)
	if err != nil {
		return nic{}, err
	}
	if n.Bridge == "" || n.VLAN < 1 {
		return nic{}, refuse(field, "%s: Proxmox network %s/%s reports no bridge or VLAN yet; wait until it is Ready with a VLAN", field, ns, id)
	}
	if !capmox.ValidBridge(n.Bridge) {
		return nic{}, refuse(field, "%s: Proxmox network %s/%s reports bridge %q, which is not %s", field, ns, id, n.Bridge, capmox.BridgeName)
	}
	out := nic{name: name, bridge: n.Bridge, vlan: ptr(n.VLAN), pool: id}
	if n.VNet != "" {
		// The zone gives the VLAN its own Proxmox SDN VNet: attach to the
		// VNet, untagged, as Proxmox expects of a NIC on a VLAN-zone VNet.
		out.bridge, out.vlan = n.VNet, nil
	}
	switch {
	case mtu != nil:
		out.mtu = mtu
	case n.MTU > 0:
		out.mtu = ptr(n.MTU)
	}
	return out, nil
}

func checkNICValues(field string, n nic) error {
	if n.vlan != nil && !capmox.ValidVLAN(int64(*n.vlan)) {
		return refuse(field+".vlan", "%s.vlan is %d: capmox takes a VLAN tag from 1 to 4094", field, *n.vlan)
	}
	if n.mtu != nil && *n.mtu != 1 && (*n.mtu < MinWebhookMTU || *n.mtu > 65520) {
		return refuse(field+".mtu", "%s.mtu is %d: capmox accepts 1 (inherit the bridge MTU) or %d to 65520", field, *n.mtu, MinWebhookMTU)
	}
	return nil
}
