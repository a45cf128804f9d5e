package pvefake

import (
	"regexp"
	"sort"
	"strconv"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

var nodeNameRe = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$`)

func fmtNode(v string) error {
	if !nodeNameRe.MatchString(v) {
		return errString("value does not look like a valid node name")
	}
	return nil
}

func clusterRoutes() []*route {
	node := param{name: "node", format: fmtNode}
	return []*route{
		{method: "GET", path: "/version", handle: readVersion},
		{method: "GET", path: "/cluster/status", check: perm{path: "/", privs: []string{"Sys.Audit"}}, handle: clusterStatus},
		{method: "GET", path: "/cluster/resources", handle: clusterResources,
			schema: []param{{name: "type", optional: true, enum: []string{"vm", "storage", "node", "sdn"}}}},
		{method: "GET", path: "/cluster/nextid", schema: []param{{name: "vmid", optional: true, format: fmtVMID}}, handle: nextID},
		{method: "GET", path: "/nodes", handle: listNodes},
		{method: "GET", path: "/nodes/{node}/status", schema: []param{node},
			check: perm{path: "/nodes/{node}", privs: []string{"Sys.Audit"}}, handle: nodeStatus},
	}
}

// Version strings the server reports per major version.
var versions = map[pveacl.Version][2]string{pveacl.PVE8: {"8.4.1", "8.4"}, pveacl.PVE9: {"9.1.1", "9.1"}}

func readVersion(c *call) (any, *apiError) {
	full, rel := c.srv.cfg.releaseOf()
	return map[string]any{"version": full, "release": rel, "repoid": "d0ec33c6"}, nil
}

func clusterStatus(c *call) (any, *apiError) {
	out := []map[string]any{}
	if c.s.cluster != "" {
		out = append(out, map[string]any{"type": "cluster", "id": "cluster", "name": c.s.cluster,
			"nodes": len(c.s.nodes), "quorate": b2i(c.s.quorate()), "version": len(c.s.nodes) + 1})
	}
	for i, name := range sortedKeys(c.s.nodes) {
		n := c.s.nodes[name]
		out = append(out, map[string]any{"type": "node", "id": "node/" + name, "name": name, "nodeid": n.id,
			"ip": n.ip, "online": b2i(c.s.online(name)), "local": b2i(i == 0), "level": ""})
	}
	return out, nil
}

func (c *call) nodeExists(name string) *apiError {
	if _, ok := c.s.nodes[name]; !ok {
		return die("no such cluster node '%s'", name)
	}
	return nil
}

func (s *state) nodeEntry(name string, audit bool) map[string]any {
	n := s.nodes[name]
	e := map[string]any{"id": "node/" + name, "node": name, "type": "node", "status": "online"}
	if !s.online(name) {
		// extract_node_stats (PVE/API2Tools.pm): the RRD's level and
		// maxima stay, the current values and "online" go
		e["status"] = "offline"
	}
	if audit {
		e["level"] = ""
		e["maxcpu"], e["maxmem"], e["maxdisk"] = n.maxCPU, n.maxMem, uint64(100<<30)
		if s.online(name) {
			e["cpu"], e["mem"], e["uptime"], e["disk"] = 0.02, n.maxMem/8, 86400, uint64(8<<30)
		}
	}
	return e
}

func listNodes(c *call) (any, *apiError) {
	out := []map[string]any{}
	for _, name := range sortedKeys(c.s.nodes) {
		ok, _ := c.checkAll("/nodes/"+name, []string{"Sys.Audit"}, true)
		out = append(out, c.s.nodeEntry(name, ok))
	}
	return out, nil
}

// nodeStatus is GET /nodes/{node}/status with the fields pve-manager's
// status method (PVE/API2/Nodes.pm) returns: numbers for the memory,
// swap, KSM and root file system sizes, the load averages as strings, as
// /proc/loadavg holds them.
func nodeStatus(c *call) (any, *apiError) {
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	n := c.s.nodes[c.node]
	full, _ := c.srv.cfg.releaseOf()
	used := n.maxMem / 8
	return map[string]any{
		"uptime": 86400, "cpu": 0.02, "wait": 0, "idle": 0, "loadavg": []string{"0.08", "0.12", "0.10"},
		"pveversion": "pve-manager/" + full + "/d0ec33c6", "kversion": "Linux 6.8.12-pve",
		"current-kernel": map[string]any{"sysname": "Linux", "release": "6.8.12-pve", "version": "#1 SMP PREEMPT_DYNAMIC PMX 6.8.12-1", "machine": "x86_64"},
		"boot-info":      map[string]any{"mode": "efi", "secureboot": 0},
		"memory":         map[string]any{"total": n.maxMem, "used": used, "free": n.maxMem - used, "available": n.maxMem - used},
		"ksm":            map[string]any{"shared": 0},
		"swap":           map[string]any{"total": 0, "used": 0, "free": 0},
		"rootfs":         map[string]any{"total": uint64(100 << 30), "used": uint64(8 << 30), "free": uint64(92 << 30), "avail": uint64(92 << 30)},
		"cpuinfo":        map[string]any{"cpus": n.maxCPU, "sockets": 1, "cores": n.maxCPU, "model": "pxfake virtual CPU", "mhz": "2400.000", "hvm": "1", "user_hz": 100},
	}, nil
}

// vmStats is a guest as /cluster/resources and pool members show it.
func (s *state) vmStats(g *guest) map[string]any {
	if !s.online(g.node) {
		// extract_vm_stats without the guest's RRD data, which the lost
		// node no longer sends
		return map[string]any{"id": "qemu/" + strconv.Itoa(g.vmid), "type": "qemu", "vmid": g.vmid, "node": g.node,
			"status": "unknown"}
	}
	status := "stopped"
	if g.running {
		status = "running"
	}
	e := map[string]any{"id": "qemu/" + strconv.Itoa(g.vmid), "type": "qemu", "vmid": g.vmid, "node": g.node,
		"name": g.conf["name"], "status": status, "template": b2i(g.conf["template"] == "1"),
		"maxmem": g.memBytes(), "maxdisk": s.bootDiskSize(g), "maxcpu": g.cpus(),
		"mem": 0, "disk": 0, "cpu": 0, "uptime": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0}
	return e
}

// storageNode is the node whose view of a storage is shown (the first one
// the storage is enabled on).
func (s *state) storageNode(st *storage) string {
	for _, n := range sortedKeys(s.nodes) {
		if st.onNode(n) {
			return n
		}
	}
	return s.defaultNode()
}

func (s *state) storageStats(st *storage, node string) map[string]any {
	if !s.online(node) {
		// extract_storage_stats without RRD data
		return map[string]any{"id": "storage/" + node + "/" + st.id, "type": "storage", "storage": st.id, "node": node,
			"status": "unknown", "content": st.contentList(), "plugintype": st.typ, "shared": b2i(st.shared)}
	}
	return map[string]any{"id": "storage/" + node + "/" + st.id, "type": "storage", "storage": st.id, "node": node,
		"status": "available", "content": st.contentList(), "plugintype": st.typ, "shared": b2i(st.shared),
		"disk": s.storageUsed(st, node), "maxdisk": st.total}
}

func (s *state) storageUsed(st *storage, node string) uint64 {
	var used uint64
	for k, v := range s.volumes {
		if v.storage == st.id && (st.shared || k.node == node) {
			used += v.size
		}
	}
	return used
}

// clusterResources lists pools (Pool.Audit), guests (VM.Audit; tags and
// pool only then, the pool only with Pool.Audit), nodes (stats with
// Sys.Audit) and storages (Datastore.Audit), one storage entry per node.
func clusterResources(c *call) (any, *apiError) {
	typ := c.p["type"]
	out := []map[string]any{}
	if typ == "" {
		for _, p := range sortedKeys(c.s.cfg.Pools) {
			if ok, _ := c.checkAll("/pool/"+p, []string{"Pool.Audit"}, true); ok {
				out = append(out, map[string]any{"id": "/pool/" + p, "type": "pool", "pool": p})
			}
		}
	}
	if typ == "" || typ == "vm" {
		out = append(out, c.vmResources()...)
	}
	if typ == "" || typ == "node" {
		for _, n := range sortedKeys(c.s.nodes) {
			ok, _ := c.checkAll("/nodes/"+n, []string{"Sys.Audit"}, true)
			out = append(out, c.s.nodeEntry(n, ok))
		}
	}
	if typ == "" || typ == "sdn" {
		out = append(out, c.sdnResources(typ)...)
	}
	if typ == "" || typ == "storage" {
		for _, sid := range sortedKeys(c.s.stores) {
			if ok, _ := c.checkAll("/storage/"+sid, []string{"Datastore.Audit"}, true); !ok {
				continue
			}
			st := c.s.stores[sid]
			for _, n := range sortedKeys(c.s.nodes) {
				if st.onNode(n) {
					out = append(out, c.s.storageStats(st, n))
				}
			}
		}
	}
	return out, nil
}

// vmResources lists the guests in the order of pve-manager's resources
// method (PVE/API2/Cluster.pm, "for my $vmid (sort keys %$idlist)"): Perl's
// default sort compares the VMIDs as strings, so 10000 comes before 9000.
func (c *call) vmResources() []map[string]any {
	var out []map[string]any
	ids := c.s.vmIDs()
	sort.Slice(ids, func(i, j int) bool { return strconv.Itoa(ids[i]) < strconv.Itoa(ids[j]) })
	for _, id := range ids {
		if ok, _ := c.checkAll(vmPath(id), []string{"VM.Audit"}, true); !ok {
			continue
		}
		g := c.s.vms[id]
		e := c.s.vmStats(g)
		if t := g.conf["tags"]; t != "" {
			e["tags"] = t
		}
		if l := g.conf["lock"]; l != "" {
			e["lock"] = l
		}
		if p := c.s.poolOf(id); p != "" {
			if ok, _ := c.checkAll("/pool/"+p, []string{"Pool.Audit"}, true); ok {
				e["pool"] = p
			}
		}
		// the manager status' service state, else the configured state
		if r := c.s.haResourceOf(id); r != nil {
			e["hastate"] = c.s.haServiceState(r)
		}
		out = append(out, e)
	}
	return out
}

// nextID returns the lowest free VMID from 100 as a string, or with vmid
// that VMID when it is free.
func nextID(c *call) (any, *apiError) {
	if v := c.p["vmid"]; v != "" {
		id, _ := strconv.Atoi(v)
		if _, ok := c.s.vms[id]; ok {
			return nil, paramErr("vmid", "VM %d already exists", id)
		}
		return v, nil
	}
	for id := 100; id < 1000000; id++ {
		if _, ok := c.s.vms[id]; !ok {
			return strconv.Itoa(id), nil
		}
	}
	return nil, die("unable to get any free VMID in range [100, 1000000]")
}
