package pvefake

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// sdnSection is one section of zones.cfg or vnets.cfg: its options, the
// section type ("vlan", "vnet", ...) under "type".
type sdnSection map[string]string

// sdnConfig is the SDN configuration: the files under /etc/pve/sdn
// (pending) or the committed .running-config.
type sdnConfig struct {
	zones map[string]sdnSection
	vnets map[string]sdnSection
}

func newSDNConfig() sdnConfig {
	return sdnConfig{zones: map[string]sdnSection{}, vnets: map[string]sdnSection{}}
}

func (c sdnConfig) clone() sdnConfig {
	out := newSDNConfig()
	for id, z := range c.zones {
		out.zones[id] = maps.Clone(z)
	}
	for id, v := range c.vnets {
		out.vnets[id] = maps.Clone(v)
	}
	return out
}

// sdnState is what pve-network keeps: the pending configuration files, the
// running configuration with its version, the global lock token, and the
// nodes' /etc/network/interfaces.
type sdnState struct {
	pending sdnConfig
	running *sdnConfig // nil until the first apply
	version int
	lock    string
	ipams   map[string]bool
	ifaces  map[string]map[string]Interface // node -> iface -> interface
	// nodeFiles is each node's /etc/network/interfaces.d/sdn, written by
	// its last reload; nodeLive is the file its last successful ifreload
	// brought up.
	nodeFiles map[string]string
	nodeLive  map[string]string
	// reloadFail holds the error of a node's next network reloads;
	// unreachable nodes answer no proxied request.
	reloadFail  map[string]string
	unreachable map[string]bool
}

// sdn returns the SDN state, creating it on first use.
func (s *state) sdn() *sdnState {
	if s.sdnSt == nil {
		s.sdnSt = &sdnState{pending: newSDNConfig(), ipams: map[string]bool{"pve": true},
			ifaces: map[string]map[string]Interface{}, nodeFiles: map[string]string{}, nodeLive: map[string]string{},
			reloadFail: map[string]string{}, unreachable: map[string]bool{}}
	}
	return s.sdnSt
}

// runningOrEmpty returns the running configuration (empty before the first
// apply).
func (n *sdnState) runningOrEmpty() sdnConfig {
	if n.running == nil {
		return newSDNConfig()
	}
	return *n.running
}

// Interface is one stanza of a node's /etc/network/interfaces, as
// GET /nodes/{node}/network shows it.
type Interface struct {
	Name string
	// Type is bridge, eth, bond, vlan, OVSBridge, ... (default eth).
	Type string
	// VLANAware sets bridge-vlan-aware; VIDs is bridge-vids (for example
	// "2-4094" or "100 200-300"), shown only when set.
	VLANAware bool
	VIDs      string
	Ports     string // bridge-ports
	MTU       int    // 0: not set (1500)
	// VLANID and RawDevice are a VLAN interface's vlan-id and
	// vlan-raw-device; an interface named "<dev>.<id>" needs neither.
	VLANID    int
	RawDevice string
	CIDR      string
	// Inactive marks an interface that is configured but not up.
	Inactive bool
}

// defaultInterfaces is what the Proxmox VE installer writes: the NIC and
// vmbr0 on it, not VLAN-aware.
func defaultInterfaces(node *node) map[string]Interface {
	return map[string]Interface{
		"eno1":  {Name: "eno1", Type: "eth"},
		"vmbr0": {Name: "vmbr0", Type: "bridge", Ports: "eno1", CIDR: node.ip + "/24"},
	}
}

// nodeIfaces returns a node's interfaces, the installer's until set.
func (s *state) nodeIfaces(name string) map[string]Interface {
	n := s.sdn()
	if _, ok := n.ifaces[name]; !ok {
		n.ifaces[name] = defaultInterfaces(s.nodes[name])
	}
	return n.ifaces[name]
}

// SetInterface adds or replaces an interface of a node's network
// configuration (applied, as after ifreload).
func (srv *Server) SetInterface(node string, i Interface) error {
	return srv.withState(func(s *state) error {
		if _, ok := s.nodes[node]; !ok {
			return fmt.Errorf("cannot set interface %q: no such cluster node '%s'", i.Name, node)
		}
		if !ifaceNameRe.MatchString(i.Name) {
			return fmt.Errorf("cannot set interface %q on %s: invalid interface name", i.Name, node)
		}
		if i.VIDs != "" {
			if err := checkVLANList(i.VIDs); err != nil {
				return fmt.Errorf("cannot set interface %s on %s: bridge_vids: %w", i.Name, node, err)
			}
		}
		if i.MTU != 0 && (i.MTU < 1280 || i.MTU > 65520) {
			return fmt.Errorf("cannot set interface %s on %s: mtu %d is outside 1280-65520", i.Name, node, i.MTU)
		}
		if i.Type == "" {
			i.Type = "eth"
		}
		s.nodeIfaces(node)[i.Name] = i
		return nil
	})
}

// RemoveInterface removes an interface from a node's configuration.
func (srv *Server) RemoveInterface(node, name string) error {
	return srv.withState(func(s *state) error {
		if _, ok := s.nodes[node]; !ok {
			return fmt.Errorf("cannot remove interface %q: no such cluster node '%s'", name, node)
		}
		delete(s.nodeIfaces(node), name)
		return nil
	})
}

// FailNodeReload makes every later network reload of a node fail with
// message (ifreload's error, for example "command 'ifreload -a' failed:
// exit code 1"); an empty message makes reloads succeed again.
func (srv *Server) FailNodeReload(node, message string) {
	_ = srv.withState(func(s *state) error {
		if message == "" {
			delete(s.sdn().reloadFail, node)
		} else {
			s.sdn().reloadFail[node] = message
		}
		return nil
	})
}

// SetNodeUnreachable makes requests proxied to a node (its /nodes/{node}/...
// paths) fail as pveproxy fails when the node is down, and the SDN apply's
// reload on it fail; false brings it back.
func (srv *Server) SetNodeUnreachable(node string, down bool) {
	_ = srv.withState(func(s *state) error {
		s.sdn().unreachable[node] = down
		return nil
	})
}

// SDNLockToken returns the SDN configuration's global lock token ("" when
// unlocked), as /etc/pve/sdn/.lock holds it.
func (srv *Server) SDNLockToken() string {
	var out string
	_ = srv.withState(func(s *state) error { out = s.sdn().lock; return nil })
	return out
}

// SDNVersion returns the running configuration's version (0 before the
// first apply).
func (srv *Server) SDNVersion() int {
	var out int
	_ = srv.withState(func(s *state) error { out = s.sdn().version; return nil })
	return out
}

// unreachableErr is pveproxy's answer for a request it cannot proxy.
// pve-http-server's proxy_request (src/PVE/APIServer/AnyEvent.pm) hands
// the status AnyEvent::HTTP gives a failed connection (595, the reason
// being the system error) and its undefined body to response(), which
// sends the status line and headers only: no JSON envelope, so a client
// that decodes every non-error body (go-proxmox before v0.10) fails on the
// empty one instead of reading "success with no data".
func (s *state) unreachableErr(node string) *apiError {
	if node == "" || !s.sdn().unreachable[node] {
		return nil
	}
	return &apiError{Status: 595, Msg: "No route to host\n", NoBody: true}
}

// checkVLANList is pve-vlan-id-or-range-list: VLAN IDs 2-4094 and
// ascending ranges, separated by spaces, commas or semicolons.
func checkVLANList(v string) error {
	items := splitVLANList(v)
	if len(items) == 0 {
		return fmt.Errorf("VLAN list items are empty")
	}
	for _, item := range items {
		if _, _, err := parseVLANItem(item); err != nil {
			return err
		}
	}
	return nil
}

func splitVLANList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '\t' || r == 0 })
}

// parseVLANItem is pve_verify_vlan_id_or_range for one item.
func parseVLANItem(item string) (int, int, error) {
	lo, hi, isRange := strings.Cut(item, "-")
	start, err := strconv.Atoi(lo)
	if err != nil || lo == "" || strings.TrimLeft(lo, "0123456789") != "" {
		return 0, 0, fmt.Errorf("invalid VLAN configuration '%s'", item)
	}
	end := start
	if isRange {
		end, err = strconv.Atoi(hi)
		if err != nil || hi == "" || strings.TrimLeft(hi, "0123456789") != "" {
			return 0, 0, fmt.Errorf("invalid VLAN configuration '%s'", item)
		}
	}
	for _, tag := range []int{start, end} {
		if tag < 2 || tag > 4094 {
			return 0, 0, fmt.Errorf("invalid VLAN tag '%d'", tag)
		}
	}
	if isRange && start >= end {
		return 0, 0, fmt.Errorf("VLAN range must go from lower to higher tag '%s'", item)
	}
	return start, end, nil
}
