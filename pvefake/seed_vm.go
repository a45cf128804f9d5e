package pvefake

import (
	"bytes"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"
)

// VMSpec describes a guest for AddVM.
type VMSpec struct {
	VMID int
	// Node defaults to the first node.
	Node     string
	Name     string
	Pool     string
	Template bool
	Tags     []string
	Running  bool
	// Disks maps drive keys to "STORAGE:SIZE_GiB", for example
	// {"scsi0": "local-lvm:8"}; each gets a new volume.
	Disks map[string]string
	// Config holds further options verbatim (memory, cores, net0, ...).
	// Without "boot" the guest gets the order qemu-server's create_vm gives
	// a new guest (its first disk, CD-ROM and network device); "boot": ""
	// leaves the option out, as in a configuration written before PVE 6.3.
	Config map[string]string
}

// AddVM adds a guest, its disks (as base volumes for a template) and its
// pool membership.
func (srv *Server) AddVM(spec VMSpec) error {
	return srv.withState(func(s *state) error {
		if err := fmtVMID(strconv.Itoa(spec.VMID)); err != nil {
			return fmt.Errorf("cannot add VM %d: %w", spec.VMID, err)
		}
		if g, ok := s.vms[spec.VMID]; ok {
			return fmt.Errorf("cannot add VM %d: VM %d already exists on node '%s'", spec.VMID, spec.VMID, g.node)
		}
		node := spec.Node
		if node == "" {
			node = s.defaultNode()
		}
		if _, ok := s.nodes[node]; !ok {
			return fmt.Errorf("cannot add VM %d: no such cluster node '%s'", spec.VMID, node)
		}
		if _, ok := s.cfg.Pools[spec.Pool]; spec.Pool != "" && !ok {
			return fmt.Errorf("cannot add VM %d: pool '%s' does not exist", spec.VMID, spec.Pool)
		}
		var holds []pciHold
		if spec.Running {
			var err error
			if holds, err = s.pciStart(&guest{vmid: spec.VMID, conf: spec.Config}, node); err != nil {
				return fmt.Errorf("cannot add VM %d: %w", spec.VMID, err)
			}
		}
		conf, err := seedConfig(s, spec, node)
		if err != nil {
			return err
		}
		s.vms[spec.VMID] = &guest{vmid: spec.VMID, node: node, conf: conf, running: spec.Running, pci: holds}
		if spec.Pool != "" {
			s.addToPool(spec.Pool, spec.VMID)
		}
		return nil
	})
}

func seedConfig(s *state, spec VMSpec, node string) (map[string]string, error) {
	conf := maps.Clone(spec.Config)
	if conf == nil {
		conf = map[string]string{}
	}
	if spec.Name != "" {
		conf["name"] = spec.Name
	}
	if len(spec.Tags) > 0 {
		conf["tags"] = normalizeTags(strings.Join(spec.Tags, ";"))
	}
	if conf["smbios1"] == "" {
		conf["smbios1"] = "uuid=" + s.newUUID()
	}
	for _, k := range sortedKeys(spec.Disks) {
		m := newDiskRe.FindStringSubmatch(spec.Disks[k])
		if !isDriveKey(k) || m == nil || m[2] == "" {
			return nil, fmt.Errorf("cannot add VM %d: disk %s=%q: use a drive key and STORAGE:SIZE_GiB", spec.VMID, k, spec.Disks[k])
		}
		st, ok := s.stores[m[2]]
		if !ok || !st.content["images"] || !st.onNode(node) {
			return nil, fmt.Errorf("cannot add VM %d: storage '%s' does not exist or holds no images on node '%s'", spec.VMID, m[2], node)
		}
		gib, _ := strconv.ParseFloat(m[3], 64)
		size := uint64(gib * (1 << 30))
		volid := s.allocDisk(node, st, spec.VMID, size, "")
		if spec.Template {
			vol, _ := s.volume(node, volid)
			s.dropVolume(node, volid)
			vol.volid = strings.Replace(volid, fmt.Sprintf("/vm-%d-", spec.VMID), fmt.Sprintf("/base-%d-", spec.VMID), 1)
			vol.volid = strings.Replace(vol.volid, fmt.Sprintf(":vm-%d-", spec.VMID), fmt.Sprintf(":base-%d-", spec.VMID), 1)
			vol.base = true
			s.putVolume(node, vol)
			volid = vol.volid
		}
		conf[k] = volid + ",size=" + formatSize(size)
	}
	if spec.Template {
		conf["template"] = "1"
	}
	switch b, ok := spec.Config["boot"]; {
	case !ok:
		conf["boot"] = newGuestBoot(conf)
	case b == "":
		delete(conf, "boot")
	}
	return conf, nil
}

// VolumeSpec describes a volume for AddVolume.
type VolumeSpec struct {
	// Node defaults to the first node (ignored for shared storages).
	Node    string
	Storage string
	// Content is iso, vztmpl, import, images or backup.
	Content string
	// Name is the volume name after "STORAGE:", for example
	// "import/talos.raw" or "iso/ubuntu.iso".
	Name   string
	Size   uint64
	Format string
}

// AddVolume adds a volume and returns its volid.
func (srv *Server) AddVolume(spec VolumeSpec) (string, error) {
	var volid string
	err := srv.withState(func(s *state) error {
		st, ok := s.stores[spec.Storage]
		if !ok {
			return fmt.Errorf("cannot add volume: storage '%s' does not exist", spec.Storage)
		}
		vtype, owner, err := parseVolname(spec.Name)
		if err != nil || vtype != spec.Content || !st.content[vtype] {
			return fmt.Errorf("cannot add volume %s:%s: name, content %q and storage content (%s) disagree", spec.Storage, spec.Name, spec.Content, st.contentList())
		}
		node := spec.Node
		if node == "" {
			node = s.defaultNode()
		}
		volid = spec.Storage + ":" + spec.Name
		s.putVolume(node, &volume{volid: volid, storage: st.id, vtype: vtype, format: spec.Format, owner: owner,
			size: spec.Size, ctime: s.now().Unix()})
		return nil
	})
	return volid, err
}

// VMConfig returns a copy of a guest's configuration and its node.
func (srv *Server) VMConfig(vmid int) (map[string]string, string, bool) {
	var conf map[string]string
	var node string
	var ok bool
	_ = srv.withState(func(s *state) error {
		g, found := s.vms[vmid]
		if found {
			conf, node, ok = maps.Clone(g.conf), g.node, true
		}
		return nil
	})
	return conf, node, ok
}

// VolumeData returns a copy of the bytes of a volume uploaded through
// POST /nodes/{node}/storage/{storage}/upload (an ISO capmox built, say),
// by volid. node names the node whose copy is read on a storage that is
// not shared ("" is the first node). Volumes that were seeded, downloaded
// or allocated keep no bytes: ok is false for them as for a volume that
// does not exist.
func (srv *Server) VolumeData(node, volid string) ([]byte, bool) {
	var out []byte
	var ok bool
	_ = srv.withState(func(s *state) error {
		if node == "" {
			node = s.defaultNode()
		}
		if v, found := s.volume(node, volid); found && v.data != nil {
			out, ok = bytes.Clone(v.data), true
		}
		return nil
	})
	return out, ok
}

// VolumeInfo is a stored volume.
type VolumeInfo struct {
	Node    string // "" on shared storages
	VolID   string
	Content string
	Format  string
	Owner   int
	Size    uint64
}

// Volumes returns every volume, ordered by volid and node.
func (srv *Server) Volumes() []VolumeInfo {
	var out []VolumeInfo
	_ = srv.withState(func(s *state) error {
		keys := make([]volKey, 0, len(s.volumes))
		for k := range s.volumes {
			keys = append(keys, k)
		}
		sortVolKeys(keys)
		for _, k := range keys {
			v := s.volumes[k]
			out = append(out, VolumeInfo{Node: k.node, VolID: v.volid, Content: v.vtype, Format: v.format, Owner: v.owner, Size: v.size})
		}
		return nil
	})
	return out
}

// TaskInfo is a worker task as the server recorded it.
type TaskInfo struct {
	UPID       string
	Type, ID   string
	User       string
	ExitStatus string
	Log        []string
	Start      time.Time
}

// Tasks returns every task, in start order.
func (srv *Server) Tasks() []TaskInfo {
	var out []TaskInfo
	_ = srv.withState(func(s *state) error {
		for _, t := range s.tasks {
			out = append(out, TaskInfo{UPID: t.upid, Type: t.typ, ID: t.id, User: t.user, ExitStatus: t.exit,
				Log: append([]string(nil), t.log...), Start: t.start})
		}
		return nil
	})
	sortTasks(out)
	return out
}

// sortTasks orders tasks by their worker PID, which the server counts up.
func sortTasks(ts []TaskInfo) {
	pid := func(upid string) string { return strings.Split(upid, ":")[2] }
	sort.Slice(ts, func(i, j int) bool { return pid(ts[i].UPID) < pid(ts[j].UPID) })
}
