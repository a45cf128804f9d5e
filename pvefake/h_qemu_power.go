package pvefake

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// powerRoutes are POST status/start, stop and shutdown, as qemu-server's
// vm_start, vm_stop and vm_shutdown (src/PVE/API2/Qemu.pm): VM.PowerMgmt
// on the guest, the root-only parameters refused for everyone else, and a
// worker (qmstart, qmstop, qmshutdown) that loads the configuration and
// checks the lock as vm_start and _do_vm_stop in src/PVE/QemuServer.pm do.
func powerRoutes() []*route {
	power := perm{path: "/vms/{vmid}", privs: []string{"VM.PowerMgmt"}}
	timeout := param{name: "timeout", typ: tInt, optional: true, min: &zero}
	return []*route{
		{method: "POST", path: "/nodes/{node}/qemu/{vmid}/status/start", check: power, handle: startVM,
			schema: []param{nodeParam, vmidParam, opt("skiplock", tBool), opt("stateuri", tString),
				{name: "migratedfrom", optional: true, format: fmtNode},
				{name: "migration_type", optional: true, enum: []string{"secure", "insecure"}},
				opt("migration_network", tString), opt("machine", tString), opt("force-cpu", tString),
				opt("targetstorage", tString), timeout, opt("with-conntrack-state", tBool), opt("nets-host-mtu", tString)}},
		{method: "POST", path: "/nodes/{node}/qemu/{vmid}/status/stop", check: power,
			handle: func(c *call) (any, *apiError) { return stopVM(c, "qmstop") },
			schema: []param{nodeParam, vmidParam, opt("skiplock", tBool), {name: "migratedfrom", optional: true, format: fmtNode},
				timeout, opt("keepActive", tBool), opt("overrule-shutdown", tBool)}},
		{method: "POST", path: "/nodes/{node}/qemu/{vmid}/status/shutdown", check: power,
			handle: func(c *call) (any, *apiError) { return stopVM(c, "qmshutdown") },
			schema: []param{nodeParam, vmidParam, opt("skiplock", tBool), timeout, opt("forceStop", tBool), opt("keepActive", tBool)}},
	}
}

// rootOnly refuses the named parameters, when set, to anyone but root@pam.
func (c *call) rootOnly(names ...string) *apiError {
	for _, n := range names {
		if c.p.has(n) && c.p[n] != "" && c.p[n] != "0" && !c.isRoot() {
			return paramErr(n, "Only root may use this option.")
		}
	}
	return nil
}

// guestOf is load_config inside a worker: the guest, or the error PVE
// dies with when the node holds no such configuration.
func (c *call) guestOf(vmid int) (*guest, error) {
	g, ok := c.s.vms[vmid]
	if !ok || g.node != c.node {
		return nil, fmt.Errorf("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", c.node, vmid)
	}
	return g, nil
}

func startVM(c *call) (any, *apiError) {
	if err := c.rootOnly("stateuri", "skiplock", "migratedfrom", "migration_type", "migration_network",
		"targetstorage", "force-cpu", "with-conntrack-state", "nets-host-mtu"); err != nil {
		return nil, err
	}
	if c.p.has("targetstorage") && !c.p.has("migratedfrom") {
		return nil, paramErr("targetstorage", "targetstorage can only by used with migratedfrom.")
	}
	vmid, skiplock := c.p.int("vmid"), c.p.flag("skiplock", false)
	if c.s.vmIsHAManaged(vmid) && !c.p.has("stateuri") {
		return c.haRequest(vmid, "started"), nil
	}
	var started *guest
	upid := c.startTask("qmstart", strconv.Itoa(vmid), func(l *taskLog) error {
		g, err := c.guestOf(vmid)
		if err != nil {
			return err
		}
		if g.conf["template"] == "1" {
			return errors.New("you can't start a vm if it's a template")
		}
		if lock := g.conf["lock"]; lock != "" && lock != "suspended" && !skiplock {
			return fmt.Errorf("VM is locked (%s)", lock)
		}
		if g.running {
			return fmt.Errorf("VM %d already running", vmid)
		}
		if err := c.s.activateVolumes(g); err != nil {
			return err
		}
		if err := c.s.startGuest(g); err != nil {
			return err
		}
		started = g
		return nil
	})
	if started != nil {
		c.boot(c.s.bootingVM(started, upid))
	}
	return upid, nil
}

// activateVolumes is vm_start_nolock's volume check (src/PVE/QemuServer.pm):
// get_current_vm_volumes takes each drive's volume, in drive order, and
// check_volume_storage_type refuses a storage without the volume's content
// type; activate_volumes then fails on a volume a file storage does not
// hold (pve-storage's Plugin.pm activate_volume). A cloud-init drive is
// regenerated at start and other storages' volumes are not checked.
func (s *state) activateVolumes(g *guest) error {
	for _, k := range append(bootDriveOrder(), "efidisk0", "tpmstate0") {
		d, err := parseDrive(g.conf[k])
		if g.conf[k] == "" || err != nil || d.cloudinit() {
			continue
		}
		sid, name, ok := parseVolid(d.file)
		st, known := s.stores[sid]
		if !ok || !known || strings.HasPrefix(d.file, "/") {
			continue
		}
		if vtype, _, err := parseVolname(name); err == nil && !st.content[vtype] {
			return fmt.Errorf("storage '%s' does not support content-type '%s'", sid, vtype)
		}
		if _, found := s.volume(g.node, d.file); !found && st.fileBased() {
			return fmt.Errorf("volume '%s' does not exist", d.file)
		}
	}
	return nil
}

// stopVM is vm_stop (qmstop) and vm_shutdown (qmshutdown): a guest that is
// not running ends the task at once and OK, as _do_vm_stop returns.
func stopVM(c *call, typ string) (any, *apiError) {
	if err := c.rootOnly("skiplock", "keepActive", "migratedfrom"); err != nil {
		return nil, err
	}
	vmid, skiplock := c.p.int("vmid"), c.p.flag("skiplock", false)
	if c.s.vmIsHAManaged(vmid) && (typ != "qmstop" || !c.p.has("migratedfrom")) {
		if typ == "qmstop" && c.p.flag("overrule-shutdown", false) {
			return nil, paramErr("overrule-shutdown", "Not applicable for HA resources.")
		}
		return c.haRequest(vmid, "stopped"), nil
	}
	return c.startTask(typ, strconv.Itoa(vmid), func(l *taskLog) error {
		g, ok := c.s.vms[vmid]
		if !ok || g.node != c.node {
			// check_running's assert_config_exists_on_node
			return fmt.Errorf("unable to find configuration file for VM %d on node '%s'", vmid, c.node)
		}
		if !g.running {
			return nil
		}
		if lock := g.conf["lock"]; lock != "" && !skiplock {
			return fmt.Errorf("VM is locked (%s)", lock)
		}
		c.s.stopGuest(g)
		return nil
	}), nil
}

// haRequest is vm_start, vm_stop and vm_shutdown of an HA-managed guest
// (PVE::HA::Config::vm_is_ha_managed, src/PVE/API2/Qemu.pm): an hastart or
// hastop worker that runs "ha-manager set vm:<vmid> --state started" or
// "ha-manager crm-command stop vm:<vmid> <timeout>", which leaves the
// resource's requested state 'started' or 'stopped'; the CRM and the LRM
// then start or stop the guest (enact), which the fake does at once.
func (c *call) haRequest(vmid int, state string) string {
	r := c.s.haResourceOf(vmid)
	g := c.s.vms[vmid]
	wasRunning := g != nil && g.running
	typ, word := "hastart", "start"
	if state == "stopped" {
		typ, word = "hastop", "stop"
	}
	upid := c.startTask(typ, strconv.Itoa(vmid), func(l *taskLog) error {
		l.printf("Requesting HA %s for VM %d", word, vmid)
		r.opts["state"] = state
		c.s.enact(r)
		return nil
	})
	if g != nil && !wasRunning && g.running {
		c.boot(c.s.bootingVM(g, upid))
	}
	return upid
}
