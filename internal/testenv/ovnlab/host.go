//go:build linux

package ovnlab

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// Host is a network namespace with one interface, eth0: a VM on the
// hypervisor bridge or a pod on a chassis' br-int.
type Host struct {
	// Name is the host's short name.
	Name string
	// NS is its network namespace.
	NS string
	// Addr is eth0's address with its prefix length.
	Addr netip.Prefix
	// MTU is eth0's MTU.
	MTU int

	lab *Lab
}

// VM describes a VM for AddVM.
type VM struct {
	// Name is short: the hypervisor port is "vm-<name>" (15 bytes at most).
	Name string
	// VLAN is the tag of the VM's NIC on vmbr0, as Proxmox's tag=<vlan>.
	VLAN int
	// Addr is the VM's address and prefix length; Gateway its default route.
	Addr    netip.Prefix
	Gateway netip.Addr
	// MTU of the NIC; 1500 when 0.
	MTU int
}

// AddVM creates a VM: a namespace whose eth0 is a veth into the hypervisor
// bridge, where its peer is an access port with the VM's VLAN tag.
func (l *Lab) AddVM(vm VM) *Host {
	l.t.Helper()
	if vm.VLAN < 1 || vm.VLAN > 4094 {
		l.t.Fatalf("VM %s: VLAN %d is outside 1..4094", vm.Name, vm.VLAN)
	}
	port := "vm-" + vm.Name
	h := l.newHost(vm.Name, vm.Addr, vm.MTU)
	l.must(l.veth(h.NS, "eth0", l.Hypervisor.NS, port))
	l.must(l.Hypervisor.vsctl("add-port", "vmbr0", port, "tag="+strconv.Itoa(vm.VLAN)))
	h.configure(vm.Gateway)
	return h
}

// Pod describes a pod for AddPod.
type Pod struct {
	// Name is the pod's logical switch port; the chassis side of its veth
	// is "p-<name>" (15 bytes at most).
	Name string
	// Chassis binds the pod; Subnet is its logical switch.
	Chassis *Chassis
	Subnet  Subnet
	// Addr is the pod's address and prefix length.
	Addr netip.Prefix
	// MTU of the pod's eth0; 1500 when 0.
	MTU int
}

// AddPod creates a pod as Kube-OVN plugs one: a logical switch port with
// the pod's MAC and address, and a namespace whose eth0 is a veth into the
// chassis' br-int with external_ids:iface-id naming the port. It waits
// until ovn-controller has bound the port.
func (l *Lab) AddPod(p Pod) *Host {
	l.t.Helper()
	l.nextMAC++
	mac := fmt.Sprintf("0a:00:00:01:%02x:%02x", l.nextMAC>>8, l.nextMAC&0xff)
	l.NBCtl("lsp-add", p.Subnet.Name, p.Name, "--", "lsp-set-addresses", p.Name, mac+" "+p.Addr.Addr().String())
	return l.PlugPort(Plug{Name: p.Name, Port: p.Name, Chassis: p.Chassis, MAC: mac, Addr: p.Addr, Gateway: p.Subnet.Gateway.Addr(), MTU: p.MTU})
}

// Plug describes a workload for PlugPort.
type Plug struct {
	// Name is the host's short name: the chassis side of its veth is
	// "p-<name>" (15 bytes at most).
	Name string
	// Port is the logical switch port the workload binds, the iface-id of
	// its OVS interface.
	Port string
	// Chassis binds the port.
	Chassis *Chassis
	// MAC and Addr (with its prefix length) are eth0's; Gateway is its
	// default route.
	MAC     string
	Addr    netip.Prefix
	Gateway netip.Addr
	// MTU of eth0; 1500 when 0.
	MTU int
}

// PlugPort plugs a workload into a logical switch port that already exists
// in the NB, made by whoever manages the logical topology, as a CNI plugin
// plugs the port its controller made (Kube-OVN's kube-ovn-cni: a veth whose
// chassis side joins br-int with external_ids:iface-id naming the port).
// It waits until ovn-controller has bound the port.
func (l *Lab) PlugPort(p Plug) *Host {
	l.t.Helper()
	h := l.newHost(p.Name, p.Addr, p.MTU)
	port := "p-" + p.Name
	l.must(l.veth(h.NS, "eth0", p.Chassis.NS, port))
	l.must(l.ip("-n", h.NS, "link", "set", "eth0", "address", p.MAC))
	l.must(p.Chassis.vsctl("add-port", "br-int", port, "--", "set", "Interface", port, "external_ids:iface-id="+p.Port))
	h.configure(p.Gateway)
	l.WaitBinding(p.Port, p.Chassis.Name, 20*time.Second)
	return h
}

func (l *Lab) newHost(name string, addr netip.Prefix, mtu int) *Host {
	l.t.Helper()
	if mtu == 0 {
		mtu = 1500
	}
	ns, err := l.addNamespace(name)
	l.must(err)
	return &Host{Name: name, NS: ns, Addr: addr, MTU: mtu, lab: l}
}

func (h *Host) configure(gw netip.Addr) {
	l := h.lab
	l.t.Helper()
	// The userspace datapath forwards a frame as the veth hands it over,
	// with the checksum a sender offloading it never filled in; a real NIC
	// or the kernel datapath completes it. Without offload the kernel
	// computes TCP and UDP checksums itself (ICMP's it always does).
	if _, err := h.Run("ethtool", "-K", "eth0", "tx", "off"); err != nil {
		l.t.Fatalf("host %s: cannot turn off checksum offload: %v", h.Name, err)
	}
	l.must(l.ip("-n", h.NS, "link", "set", "eth0", "mtu", strconv.Itoa(h.MTU)))
	l.must(l.ip("-n", h.NS, "addr", "add", h.Addr.String(), "dev", "eth0"))
	l.must(l.ip("-n", h.NS, "route", "add", "default", "via", gw.String()))
}

func (l *Lab) must(err error) {
	l.t.Helper()
	if err != nil {
		l.t.Fatal(err)
	}
}

// Ping sends one ICMP echo request of the given IP packet size (0 for
// ping's default) from the host and waits up to timeout for the reply. With
// df the packet carries don't-fragment (ping -M do). It returns ping's
// output and an error when no reply came.
func (h *Host) Ping(dst netip.Addr, size int, df bool, timeout time.Duration) (string, error) {
	args := []string{"netns", "exec", h.NS, "ping", "-n", "-c", "1", "-W", strconv.FormatFloat(timeout.Seconds(), 'f', 2, 64)}
	if df {
		args = append(args, "-M", "do")
	}
	if size > 0 {
		if size < 28 {
			return "", fmt.Errorf("an IP packet of %d bytes cannot carry an ICMP echo (28 bytes of headers)", size)
		}
		args = append(args, "-s", strconv.Itoa(size-28))
	}
	args = append(args, dst.String())
	return run(nil, "ip", args...)
}

// Neighbor returns the host kernel's neighbour entry for addr
// (`ip neigh show <addr>`), e.g. "10.100.0.1 dev eth0 lladdr 0a:... REACHABLE".
func (h *Host) Neighbor(addr netip.Addr) string {
	out, err := run(nil, "ip", "-n", h.NS, "neigh", "show", addr.String())
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(out)
}

// Run runs a program inside the host's namespace and returns its output.
func (h *Host) Run(name string, args ...string) (string, error) {
	p, err := testproc.Find(name)
	if err != nil {
		return "", err
	}
	return run(nil, "ip", append([]string{"netns", "exec", h.NS, p}, args...)...)
}
