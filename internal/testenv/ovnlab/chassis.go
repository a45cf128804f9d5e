//go:build linux

package ovnlab

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// Switch is an Open vSwitch instance: its own ovsdb-server with an
// Open_vSwitch database and ovs-vswitchd on the userspace datapath, running
// in its own network namespace with its own run directory.
type Switch struct {
	// Name is the switch's short name, e.g. "hv" or "ch1".
	Name string
	// NS is the network namespace ovs-vswitchd runs in.
	NS string
	// DB is the switch's ovsdb-server; VSwitchd its ovs-vswitchd.
	DB       *testproc.OVSDB
	VSwitchd *testproc.Process

	dir string
	lab *Lab
}

// newSwitch creates the namespace and run directory of a switch and starts
// its ovsdb-server and ovs-vswitchd.
func (l *Lab) newSwitch(name, what string) (*Switch, error) {
	s := &Switch{Name: name, dir: filepath.Join(l.dir, name), lab: l}
	if err := os.Mkdir(s.dir, 0o700); err != nil {
		return nil, err
	}
	var err error
	if s.NS, err = l.addNamespace(name); err != nil {
		return nil, err
	}
	if s.DB, err = testproc.StartOVSDB(testproc.OVSDBOptions{Name: "ovsdb-server of " + what, Dir: s.dir, File: "conf",
		Schema: vswitchSchema, Unix: true}); err != nil {
		return nil, err
	}
	l.daemons = append(l.daemons, &s.DB.Process)
	if _, err := run(nil, "ovs-vsctl", "--db=unix:"+s.socket(), "--no-wait", "init"); err != nil {
		return nil, err
	}
	ctl := filepath.Join(s.dir, "vswitchd.ctl")
	vswitchd, err := testproc.Find("ovs-vswitchd")
	if err != nil {
		return nil, err
	}
	if s.VSwitchd, err = l.daemon("ovs-vswitchd of "+what, s.dir, "vswitchd", s.env(),
		"ip", "netns", "exec", s.NS, vswitchd, "unix:"+s.socket(), "--unixctl="+ctl); err != nil {
		return nil, err
	}
	s.VSwitchd.Ready = func() error {
		_, err := run(nil, "ovs-appctl", "-t", ctl, "version")
		return err
	}
	return s, l.launch(s.VSwitchd)
}

func (s *Switch) socket() string { return s.DB.Socket }

// env points OVS tools and ovs-vswitchd at the switch's run directory,
// where ovs-vswitchd puts the bridges' management sockets.
func (s *Switch) env() []string {
	return []string{"OVS_RUNDIR=" + s.dir, "OVS_DBDIR=" + s.dir, "OVS_LOGDIR=" + s.dir}
}

// vsctl runs ovs-vsctl against the switch's database and waits until
// ovs-vswitchd applied the change.
func (s *Switch) vsctl(args ...string) error {
	_, err := s.VSCtl(args...)
	return err
}

// VSCtl runs ovs-vsctl against the switch's database.
func (s *Switch) VSCtl(args ...string) (string, error) {
	return run(nil, "ovs-vsctl", append([]string{"--db=unix:" + s.socket(), "--timeout=20"}, args...)...)
}

// Chassis is an OVN chassis: a Switch with br-int, a tunnel underlay on
// br-phy and, for trunk chassis, a provider bridge, plus ovn-controller.
type Chassis struct {
	Switch
	// EncapIP is the Geneve tunnel address on br-phy.
	EncapIP string
	// Trunk says whether the chassis has the provider bridge.
	Trunk bool
	// Controller is the chassis' ovn-controller.
	Controller *testproc.Process
}

// startChassis starts chassis number i (0-based).
func (l *Lab) startChassis(i int, spec ChassisSpec) (*Chassis, error) {
	if spec.Name == "" || strings.ContainsAny(spec.Name, "/ ") {
		return nil, fmt.Errorf("chassis %d: the name %q must be non-empty without '/' or spaces", i, spec.Name)
	}
	sw, err := l.newSwitch(spec.Name, "chassis "+spec.Name)
	if err != nil {
		return nil, err
	}
	c := &Chassis{Switch: *sw, EncapIP: fmt.Sprintf("192.0.2.%d", i+1), Trunk: spec.Trunk}
	ids := []string{
		"external_ids:system-id=" + spec.Name,
		"external_ids:hostname=" + spec.Name,
		"external_ids:ovn-remote=" + l.SBEndpoint(),
		"external_ids:ovn-encap-type=geneve",
		"external_ids:ovn-encap-ip=" + c.EncapIP,
		"external_ids:ovn-bridge-datapath-type=netdev",
	}
	if spec.Trunk {
		ids = append(ids, "external_ids:ovn-bridge-mappings="+l.provider+":br-provider")
	}
	if err := c.vsctl(append([]string{"set", "Open_vSwitch", "."}, ids...)...); err != nil {
		return nil, err
	}
	if err := l.wireUnderlay(c, spec.Name); err != nil {
		return nil, err
	}
	if spec.Trunk {
		if err := l.wireTrunk(c, spec.Name); err != nil {
			return nil, err
		}
	}
	// br-int made before ovn-controller starts, as OVN's own test suite
	// attaches a chassis (ovn_az_attach): ovn-controller would create it
	// itself, but connects to its management socket before ovs-vswitchd has
	// made it and logs "br-int.mgmt: connection failed" until then.
	if err := c.vsctl("--may-exist", "add-br", "br-int", "--", "set", "bridge", "br-int",
		"fail_mode=secure", "datapath_type=netdev", "other_config:disable-in-band=true"); err != nil {
		return nil, err
	}
	controller, err := testproc.Find("ovn-controller")
	if err != nil {
		return nil, err
	}
	if c.Controller, err = l.daemon("ovn-controller of chassis "+spec.Name, c.dir, "controller",
		append(c.env(), "OVN_RUNDIR="+c.dir, "OVN_LOGDIR="+c.dir), "ip", "netns", "exec", c.NS, controller, "unix:"+c.socket()); err != nil {
		return nil, err
	}
	c.Controller.Ready = c.registered
	return c, l.launch(c.Controller)
}

// wireUnderlay gives chassis c its underlay: br-phy holds the
// encapsulation address, as the userspace datapath needs for its tunnels,
// and a veth into the hypervisor's ul0.
func (l *Lab) wireUnderlay(c *Chassis, name string) error {
	ul := "ul-" + name
	if err := c.vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev"); err != nil {
		return err
	}
	if err := l.veth(c.NS, "ul0", l.Hypervisor.NS, ul); err != nil {
		return err
	}
	if err := l.ip("-n", l.Hypervisor.NS, "link", "set", ul, "master", "ul0"); err != nil {
		return err
	}
	if err := c.vsctl("add-port", "br-phy", "ul0"); err != nil {
		return err
	}
	if err := l.ip("-n", c.NS, "addr", "add", c.EncapIP+"/24", "dev", "br-phy"); err != nil {
		return err
	}
	if err := l.ip("-n", c.NS, "link", "set", "br-phy", "up"); err != nil {
		return err
	}
	return nil
}

// wireTrunk gives a trunk chassis its provider bridge, whose uplink is a
// trunk port of the hypervisor's vmbr0.
func (l *Lab) wireTrunk(c *Chassis, name string) error {
	tr := "tr-" + name
	if err := c.vsctl("add-br", "br-provider", "--", "set", "bridge", "br-provider", "datapath_type=netdev"); err != nil {
		return err
	}
	if err := l.veth(c.NS, "uplink", l.Hypervisor.NS, tr); err != nil {
		return err
	}
	if err := c.vsctl("add-port", "br-provider", "uplink"); err != nil {
		return err
	}
	if err := l.Hypervisor.vsctl("add-port", "vmbr0", tr); err != nil {
		return err
	}
	return nil
}

// registered reports nil once ovn-controller is connected to the SB and the
// chassis is there (a restarted ovn-controller finds its old row).
func (c *Chassis) registered() error {
	status, err := run(nil, "ovn-appctl", "-t", c.controllerCtl(), "connection-status")
	if err != nil {
		return err
	}
	if strings.TrimSpace(status) != "connected" {
		return fmt.Errorf("ovn-controller of chassis %s is %q to the SB", c.Name, strings.TrimSpace(status))
	}
	out, err := c.lab.sbctl("--bare", "--columns=name", "find", "Chassis", "name="+c.Name)
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != c.Name {
		return fmt.Errorf("chassis %s is not in the SB yet", c.Name)
	}
	return nil
}

// controllerCtl is ovn-controller's control socket, named after its pid.
func (c *Chassis) controllerCtl() string {
	return filepath.Join(c.dir, "ovn-controller."+strconv.Itoa(c.Controller.Pid())+".ctl")
}

// StopController ends ovn-controller with SIGTERM, as a process manager's
// stop does; the chassis stays registered in the SB.
func (c *Chassis) StopController() error { return c.Controller.Stop() }

// ExitController asks ovn-controller to exit (ovn-appctl exit), which
// removes the chassis from the SB and releases its ports, and waits for it.
func (c *Chassis) ExitController() error {
	if _, err := run(nil, "ovn-appctl", "-t", c.controllerCtl(), "exit"); err != nil {
		return fmt.Errorf("cannot stop the ovn-controller of chassis %s: %w", c.Name, err)
	}
	return c.Controller.Wait(10 * time.Second)
}

// Crash kills ovn-controller and ovs-vswitchd with SIGKILL, as a failed
// node would lose them: flows, tunnels and BFD go away at once.
func (c *Chassis) Crash() {
	c.Controller.Kill()
	c.VSwitchd.Kill()
}

// Start starts whatever of ovs-vswitchd and ovn-controller is not running
// and waits until the chassis is registered.
func (c *Chassis) Start() error {
	if !c.VSwitchd.Running() {
		if err := c.VSwitchd.Start(); err != nil {
			return err
		}
		// br-phy's internal port is a tap device that ended with the old
		// ovs-vswitchd, and with it the encapsulation address.
		if err := c.vsctl("--may-exist", "add-br", "br-phy"); err != nil {
			return err
		}
		if err := c.lab.ip("-n", c.NS, "addr", "replace", c.EncapIP+"/24", "dev", "br-phy"); err != nil {
			return err
		}
		if err := c.lab.ip("-n", c.NS, "link", "set", "br-phy", "up"); err != nil {
			return err
		}
	}
	if !c.Controller.Running() {
		return c.Controller.Start()
	}
	return nil
}
