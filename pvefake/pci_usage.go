package pvefake

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// pciHold is a host PCI device a running guest holds: a line of the
// node's /run/qemu-server/pci-id-reservations (qemu-server's
// reserve_pci_usage) for each of its IDs, or a mediated device, which
// reserves nothing.
type pciHold struct {
	key     string   // hostpciN
	mapping string   // the mapping's ID, "" for a host device
	ids     []string // the PCI IDs, as lspci names them
	mdev    string   // the mediated device type, "" for passthrough
}

// pciDevice is a parsed hostpciN option (parse_hostpci): its alternatives,
// each the IDs of one multifunction device.
type pciDevice struct {
	key          string
	mapping      string
	mdev         string
	pcie         bool
	alternatives [][]string
}

// parseHostPCIDevices is parse_hostpci_devices for a guest starting on
// node: a mapped device takes the mapping's items for the node as its
// alternatives (an item's ';'-separated paths together), a host device its
// own IDs. The fake has no hardware: every ID exists and matches its
// mapping's vendor, device and IOMMU group.
func (s *state) parseHostPCIDevices(conf map[string]string, node string) ([]pciDevice, error) {
	var out []pciDevice
	for i := range maxHostPCI {
		key := "hostpci" + strconv.Itoa(i)
		if conf[key] == "" {
			continue
		}
		d, err := parseHostPCI(conf[key], key)
		if err != nil {
			return nil, err
		}
		dev := pciDevice{key: key, mapping: d["mapping"], mdev: d["mdev"], pcie: d["pcie"] == "1"}
		_, hasHost := d["host"]
		_, hasMapping := d["mapping"]
		switch {
		case hasHost && hasMapping:
			return nil, errors.New("Cannot set both 'host' and 'mapping'.")
		case d["mapping"] != "":
			var entries []pciMapEntry
			if m := s.pciMap(d["mapping"]); m != nil {
				entries = m.nodeEntries(node)
			}
			if len(entries) == 0 {
				return nil, fmt.Errorf("PCI device mapping not found for '%s'", d["mapping"])
			}
			for _, e := range entries {
				dev.alternatives = append(dev.alternatives, lspciIDs(e.devices()))
			}
		case d["host"] != "":
			dev.alternatives = [][]string{lspciIDs(strings.Split(d["host"], ";"))}
		default:
			return nil, errors.New("Either 'host' or 'mapping' must be set.")
		}
		out = append(out, dev)
	}
	return out, nil
}

func lspciIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = lspciID(id)
	}
	return out
}

// lspciID is the PCI ID lspci reports for a configured one: with the
// domain, which the configuration may leave out.
func lspciID(id string) string {
	if strings.Count(id, ":") == 1 {
		return "0000:" + id
	}
	return id
}

// pciConflict reports whether two PCI IDs name the same hardware: equal,
// or one a whole device (no function) and the other one of its functions,
// as lspci expands a whole device to all of them.
func pciConflict(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
}

// pciHolder returns the guest other than vmid that, running on node, holds
// a device conflicting with id, and the function in conflict: a whole
// device lspci would have expanded to its functions, so the held function
// names it when id is one; reserve_pci_usage's reservation of a guest that
// no longer runs is a leftover another guest takes.
func (s *state) pciHolder(node, id string, vmid int) (int, string, bool) {
	for _, other := range s.vmIDs() {
		g := s.vms[other]
		if other == vmid || !g.running || g.node != node {
			continue
		}
		for _, h := range g.pci {
			if h.mdev != "" {
				continue
			}
			for _, held := range h.ids {
				if !pciConflict(id, held) {
					continue
				}
				if len(held) > len(id) {
					return other, held, true
				}
				return other, id, true
			}
		}
	}
	return 0, "", false
}

// pciUsed are the PCI IDs a starting guest has taken so far.
type pciUsed []string

// conflict returns an ID of ids the guest has taken, "" when none: the
// function, when one of the two is the whole device.
func (u pciUsed) conflict(ids []string) string {
	for _, id := range ids {
		for _, taken := range u {
			if pciConflict(id, taken) {
				return max(id, taken)
			}
		}
	}
	return ""
}

// choosePCIDevices is choose_hostpci_devices and vm_start_nolock's
// reservation for guest vmid starting on node: a mediated device is made
// on the first device of the first alternative (vm_start_nolock tries
// them in order; the fake's first never fails) and reserves nothing; a
// device with one alternative takes it, one with several the first whose
// devices this guest does not use yet and no other running guest holds
// ("could not find a free device"); then every chosen ID is reserved, in
// hostpci order, failing on one another running guest on the node holds.
func (s *state) choosePCIDevices(devs []pciDevice, vmid int, node string) ([]pciHold, error) {
	var used pciUsed
	holds := make([]pciHold, 0, len(devs))
	for _, d := range devs {
		h := pciHold{key: d.key, mapping: d.mapping, mdev: d.mdev}
		switch {
		case d.mdev != "":
			h.ids = d.alternatives[0][:1]
		case len(d.alternatives) == 1:
			h.ids = d.alternatives[0]
			if id := used.conflict(h.ids); id != "" {
				return nil, fmt.Errorf("device '%s' assigned more than once", id)
			}
			used = append(used, h.ids...)
		default:
			h.ids = s.freeAlternative(d.alternatives, used, vmid, node)
			if h.ids == nil {
				return nil, fmt.Errorf("could not find a free device for '%s'", d.key)
			}
			used = append(used, h.ids...)
		}
		holds = append(holds, h)
	}
	if err := s.reservePCI(holds, vmid, node); err != nil {
		return nil, err
	}
	return holds, nil
}

// freeAlternative is the first alternative that the guest does not use
// yet and no other running guest on node holds, nil when there is none.
func (s *state) freeAlternative(alts [][]string, used pciUsed, vmid int, node string) []string {
	for _, alt := range alts {
		if used.conflict(alt) == "" && !s.pciHeld(node, alt, vmid) {
			return alt
		}
	}
	return nil
}

// reservePCI is reserve_pci_usage of the chosen devices but mediated ones.
func (s *state) reservePCI(holds []pciHold, vmid int, node string) error {
	for _, h := range holds {
		if h.mdev != "" {
			continue
		}
		for _, id := range h.ids {
			if other, fn, ok := s.pciHolder(node, id, vmid); ok {
				return fmt.Errorf("PCI device '%s' already in use by VMID '%d'", fn, other)
			}
		}
	}
	return nil
}

// pciHeld reports whether another running guest on node holds one of ids.
func (s *state) pciHeld(node string, ids []string, vmid int) bool {
	for _, id := range ids {
		if _, _, ok := s.pciHolder(node, id, vmid); ok {
			return true
		}
	}
	return false
}

// pciStart returns the devices guest g takes when it starts on node. The
// reservation comes first, then config_to_command's check of each device
// (print_hostpci_devices): a PCI Express device (pcie=1) needs a q35
// machine.
func (s *state) pciStart(g *guest, node string) ([]pciHold, error) {
	devs, err := s.parseHostPCIDevices(g.conf, node)
	if err != nil || len(devs) == 0 {
		return nil, err
	}
	holds, err := s.choosePCIDevices(devs, g.vmid, node)
	if err != nil {
		return nil, err
	}
	for _, d := range devs {
		if d.pcie && !machineIsQ35(g.conf["machine"]) {
			return nil, errors.New("q35 machine model is not enabled")
		}
	}
	return holds, nil
}

// machineIsQ35 is machine_type_is_q35 (PVE::QemuServer::Machine) over a
// guest's machine option: its type (the default key of the property
// string) names q35, such as q35, pc-q35-9.2+pve1 or type=q35,viommu=intel.
func machineIsQ35(machine string) bool {
	for _, part := range strings.Split(machine, ",") {
		if k, v, ok := strings.Cut(part, "="); !ok || k == "type" {
			if !ok {
				v = part
			}
			return strings.Contains(v, "q35")
		}
	}
	return false
}

// startGuest runs a stopped guest: its PCI devices are reserved first, and
// a device that is missing or in use fails the start, the guest stopped
// and holding nothing (cleanup_pci_devices).
func (s *state) startGuest(g *guest) error {
	holds, err := s.pciStart(g, g.node)
	if err != nil {
		return err
	}
	g.pci, g.running = holds, true
	return nil
}

// stopGuest stops a guest; vm_stop_cleanup frees its PCI devices.
func (s *state) stopGuest(g *guest) {
	g.running, g.pci = false, nil
}

// pciLiveMigrate is what a live migration of running guest g to target
// does with its PCI devices (QemuMigrate's prepare with
// check_local_resources, then vm_start on the target): a host device
// blocks it, a mapped one needs an item for target and a
// live-migration-capable mapping, and the target takes its devices as a
// start there would. On success the guest holds the target's devices.
func (s *state) pciLiveMigrate(g *guest, target string) error {
	var local, missing, notLive []string
	for _, k := range sortedKeys(g.conf) {
		if !hostPCIKeyRe.MatchString(k) {
			continue
		}
		d, err := parseHostPCI(g.conf[k], k)
		if err != nil || d["mapping"] == "" {
			local = append(local, k)
			continue
		}
		m := s.pciMap(d["mapping"])
		if m == nil || len(m.nodeEntries(target)) == 0 {
			missing = append(missing, k)
		}
		if m == nil || m.opts["live-migration-capable"] != "1" {
			notLive = append(notLive, k+":"+d["mapping"])
		}
	}
	switch {
	case len(local) > 0:
		return fmt.Errorf("can't migrate VM which uses local devices: %s", strings.Join(local, ", "))
	case len(missing) > 0:
		return fmt.Errorf("can't migrate to '%s': missing mapped devices %s", target, strings.Join(missing, ", "))
	case len(notLive) > 0:
		return fmt.Errorf("can't live migrate running VM which uses following mapped devices: %s", strings.Join(notLive, ", "))
	}
	holds, err := s.pciStart(g, target)
	if err != nil {
		return err
	}
	g.pci = holds
	return nil
}

// PCIDevice is a host PCI device a running guest holds.
type PCIDevice struct {
	// Key is the guest's option, hostpci0 to hostpci15.
	Key string
	// Mapping is the resource mapping the device was taken from, "" for a
	// host device (hostpciN: <pci id>).
	Mapping string
	// Node is the node whose device it is.
	Node string
	// Path is the device's PCI ID as lspci writes it, with the domain
	// ("0000:01:00.0"); the IDs of a multifunction device taken together
	// are separated by ';', as in a mapping's path.
	Path string
	// Mdev is the mediated device type; such a device is a slice of the
	// physical one, which other guests may slice too.
	Mdev string
}

// VMPCIDevices returns the host PCI devices a guest holds, in hostpci
// order: those it took when it started, for as long as it runs. A stopped
// or unknown guest holds none.
func (srv *Server) VMPCIDevices(vmid int) []PCIDevice {
	var out []PCIDevice
	_ = srv.withState(func(s *state) error {
		if g, ok := s.vms[vmid]; ok && g.running {
			out = g.pciDevices()
		}
		return nil
	})
	return out
}

func (g *guest) pciDevices() []PCIDevice {
	var out []PCIDevice
	for _, h := range g.pci {
		out = append(out, PCIDevice{Key: h.key, Mapping: h.mapping, Node: g.node, Path: strings.Join(h.ids, ";"), Mdev: h.mdev})
	}
	return out
}
