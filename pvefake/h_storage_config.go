package pvefake

import (
	"crypto/sha1" //nolint:gosec // PVE's config digest is SHA-1
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// The cluster's storage configuration follows pve-storage at commit
// 0c56bad8b2a7d69e5ce2c243651fe830d6caa936: the methods and their
// permissions from src/PVE/API2/Storage/Config.pm (index, read, create,
// delete), the options, content types and checks of each type from
// src/PVE/Storage/{Plugin,DirPlugin,LVMPlugin,LvmThinPlugin,NFSPlugin}.pm,
// and SectionConfig's check_config and check_value from pve-common
// (f665029eac78022e81810ab2e44eace57ade13fb, src/PVE/SectionConfig.pm).

// storageTypes is $storage_type_enum, PVE::Storage::Plugin->lookup_types:
// every registered plugin, sorted.
var storageTypes = []string{"btrfs", "cephfs", "cifs", "dir", "esxi", "iscsi", "iscsidirect", "lvm", "lvmthin",
	"nfs", "pbs", "rbd", "zfs", "zfspool"}

// sharedStorageTypes is Plugin.pm's @SHARED_STORAGE: parse_config marks
// these shared.
var sharedStorageTypes = []string{"iscsi", "nfs", "cifs", "rbd", "cephfs", "iscsidirect", "zfs", "drbd", "pbs"}

// storagePlugin is what the server models of a plugin: the options it
// takes of the parameters the server serves (true: required, as options()
// declares them without optional), its plugindata content (the supported
// types, the default) and the server's defaults for a seeded storage.
type storagePlugin struct {
	options    map[string]bool
	content    []string
	defContent []string
	defaults   map[string]string
}

// fileContent is what DirPlugin and NFSPlugin take, but 'none'.
var fileContent = []string{"backup", "images", "import", "iso", "rootdir", "snippets", "vztmpl"}

var storagePlugins = map[string]storagePlugin{
	"dir": {options: map[string]bool{"path": true, "nodes": false, "shared": false, "disable": false, "content": false},
		content: append([]string{"none"}, fileContent...), defContent: []string{"images", "rootdir"}},
	"lvm": {options: map[string]bool{"vgname": true, "nodes": false, "shared": false, "disable": false, "content": false},
		content: []string{"images", "rootdir"}, defContent: []string{"images"}, defaults: map[string]string{"vgname": "pve"}},
	"lvmthin": {options: map[string]bool{"thinpool": true, "vgname": true, "nodes": false, "disable": false, "content": false},
		content: []string{"images", "rootdir"}, defContent: []string{"images", "rootdir"},
		defaults: map[string]string{"vgname": "pve", "thinpool": "data"}},
	"nfs": {options: map[string]bool{"path": true, "server": true, "export": true, "nodes": false, "disable": false, "content": false},
		content: fileContent, defContent: []string{"images"}},
}

func storageConfigRoutes() []*route {
	st := param{name: "storage", format: fmtStorageID}
	allocate := perm{path: "/storage", privs: []string{"Datastore.Allocate"}}
	return []*route{
		{method: "GET", path: "/storage", schema: []param{{name: "type", optional: true, enum: storageTypes}},
			handle: listStorageConfigs},
		{method: "GET", path: "/storage/{storage}", schema: []param{st},
			check: perm{path: "/storage/{storage}", privs: []string{"Datastore.Allocate"}}, handle: readStorageConfig},
		{method: "POST", path: "/storage", check: allocate, handle: createStorage, schema: []param{st,
			{name: "type", enum: storageTypes},
			{name: "content", optional: true, format: fmtList(fmtStorageContent)},
			{name: "nodes", optional: true, format: fmtList(fmtNode)},
			opt("shared", tBool), opt("disable", tBool),
			{name: "path", optional: true, format: fmtStoragePath},
			{name: "vgname", optional: true, format: fmtLVMName},
			{name: "thinpool", optional: true, format: fmtLVMName},
			{name: "server", optional: true, format: fmtStorageServer},
			{name: "export", optional: true, format: fmtStoragePath}}},
		{method: "DELETE", path: "/storage/{storage}", schema: []param{st}, check: allocate, handle: deleteStorage},
	}
}

// fmtStorageContent is Plugin.pm's verify_content: dir's content types
// (which include every other type's) and import.
func fmtStorageContent(v string) error {
	if !slices.Contains(storagePlugins["dir"].content, v) {
		return fmt.Errorf("invalid content type '%s'", v)
	}
	return nil
}

var absPathRe = regexp.MustCompile(`^/[^;()]+`)

// fmtStoragePath is Plugin.pm's verify_path.
func fmtStoragePath(v string) error {
	if !absPathRe.MatchString(v) {
		return errors.New("value does not look like a valid absolute path")
	}
	return nil
}

var lvmNameRe = regexp.MustCompile(`(?i)^[a-z0-9][a-z0-9\-_.]*[a-z0-9]$`)

// fmtLVMName is Plugin.pm's parse_lvm_name.
func fmtLVMName(v string) error {
	if !lvmNameRe.MatchString(v) {
		return fmt.Errorf("lvm name '%s' contains illegal characters", v)
	}
	return nil
}

// fmtStorageServer is Plugin.pm's verify_server: an IP address or a DNS
// name.
func fmtStorageServer(v string) error {
	if a, err := netip.ParseAddr(v); (err == nil && a.Zone() == "") || dnsName.MatchString(v) {
		return nil
	}
	return errors.New("value does not look like a valid server name or IP address")
}

// listStorageConfigs is Config.pm's index: every storage on which the
// caller has Datastore.Audit or Datastore.AllocateSpace, of one type with
// type.
func listStorageConfigs(c *call) (any, *apiError) {
	out := []map[string]any{}
	for _, sid := range sortedKeys(c.s.stores) {
		if ok, _ := c.checkAny("/storage/"+sid, []string{"Datastore.Audit", "Datastore.AllocateSpace"}, true); !ok {
			continue
		}
		if t := c.p["type"]; t != "" && t != c.s.stores[sid].typ {
			continue
		}
		out = append(out, c.s.storageConfig(c.s.stores[sid]))
	}
	return out, nil
}

// readStorageConfig is Config.pm's read.
func readStorageConfig(c *call) (any, *apiError) {
	st, ok := c.s.stores[c.p["storage"]]
	if !ok {
		return nil, die("storage '%s' does not exist", c.p["storage"])
	}
	return c.s.storageConfig(st), nil
}

// storageConfig is Config.pm's $api_storage_config: the section's options,
// its ID, the digest of storage.cfg, content and nodes as lists.
func (s *state) storageConfig(st *storage) map[string]any {
	e := map[string]any{"storage": st.id, "type": st.typ, "digest": s.storageDigest(), "content": st.contentValue()}
	for k, v := range st.opts {
		e[k] = v
	}
	if st.nodes != nil {
		e["nodes"] = strings.Join(st.nodes, ",")
	}
	if st.shared {
		e["shared"] = 1
	}
	if st.disabled {
		e["disable"] = 1
	}
	return e
}

// contentValue is encode_value of content: the list, or none when empty.
func (s *storage) contentValue() string {
	if l := s.contentList(); l != "" {
		return l
	}
	return "none"
}

// storageDigest is the SHA-1 of storage.cfg as the server writes it.
func (s *state) storageDigest() string {
	var b strings.Builder
	for _, sid := range sortedKeys(s.stores) {
		st := s.stores[sid]
		fmt.Fprintf(&b, "%s: %s\n", st.typ, sid)
		if st.disabled {
			b.WriteString("\tdisable\n")
		}
		for _, k := range sortedKeys(st.opts) {
			fmt.Fprintf(&b, "\t%s %s\n", k, st.opts[k])
		}
		fmt.Fprintf(&b, "\tcontent %s\n", st.contentValue())
		if st.nodes != nil {
			fmt.Fprintf(&b, "\tnodes %s\n", strings.Join(st.nodes, ","))
		}
		if st.shared {
			b.WriteString("\tshared 1\n")
		}
		b.WriteString("\n")
	}
	sum := sha1.Sum([]byte(b.String())) //nolint:gosec // PVE's config digest is SHA-1
	return hex.EncodeToString(sum[:])
}

// createStorage is Config.pm's create: an empty nodes is dropped, the
// plugin's check_config checks the options (outside the lock, so its
// errors are plain), then under the lock an existing ID is refused. PVE
// then activates the storage on the node that answers; the server has no
// disks, mounts or volume groups, so that never fails here.
func createStorage(c *call) (any, *apiError) {
	typ, sid := c.p["type"], c.p["storage"]
	conf := map[string]string{}
	for k, v := range c.p {
		if k != "type" && k != "storage" {
			conf[k] = v
		}
	}
	if conf["nodes"] == "" || conf["nodes"] == "0" {
		delete(conf, "nodes")
	}
	pl, ok := storagePlugins[typ]
	if !ok {
		return nil, die("storage type '%s' is not implemented by the Proxmox VE API fake (dir, lvm, lvmthin and nfs are)", typ)
	}
	spec, err := pl.checkConfig(typ, sid, conf)
	if err != nil {
		return nil, die("%v", err)
	}
	if err := c.s.addStorage(spec); err != nil {
		return nil, die("create storage failed: %v", err)
	}
	return map[string]any{"storage": sid, "type": typ}, nil
}

var dirPathRe = regexp.MustCompile(`^/[-/a-zA-Z0-9_.@]+$`)

// checkConfig is the plugin's check_config for a create (SectionConfig's,
// with NFSPlugin's default path and DirPlugin's path check): each option
// must be one of the type's (check_value; PVE walks them in hash order,
// the server sorted) and is decoded (decode_value), then every required
// option must be set.
func (pl storagePlugin) checkConfig(typ, sid string, conf map[string]string) (StorageSpec, error) {
	if typ == "nfs" && (conf["path"] == "" || conf["path"] == "0") {
		conf["path"] = "/mnt/pve/" + sid
	}
	spec := StorageSpec{ID: sid, Type: typ}
	for _, k := range sortedKeys(conf) {
		v := conf[k]
		if _, ok := pl.options[k]; !ok {
			return spec, fmt.Errorf("unexpected property '%s'", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return spec, errors.New("property contains a line feed")
		}
		switch k {
		case "content":
			list, err := pl.decodeContent(v)
			if err != nil {
				return spec, err
			}
			spec.Content = list
		case "nodes":
			spec.Nodes = decodeNodes(v)
		case "shared":
			spec.Shared = v == "1"
		case "disable":
			spec.Disabled = v == "1"
		case "path":
			spec.Path = v
		case "vgname":
			spec.VGName = v
		case "thinpool":
			spec.ThinPool = v
		case "server":
			spec.Server = v
		case "export":
			spec.Export = v
		}
	}
	for _, k := range sortedKeys(pl.options) {
		if _, ok := conf[k]; pl.options[k] && !ok {
			return spec, fmt.Errorf("missing value for required option '%s'", k)
		}
	}
	if typ == "dir" {
		if !dirPathRe.MatchString(spec.Path) {
			return spec, fmt.Errorf("illegal path for directory storage: %s", spec.Path)
		}
		spec.Path = canonPath(spec.Path)
	}
	return spec, nil
}

// decodeContent is Plugin.pm's decode_value of content: a type the plugin
// does not support is dropped (PVE only warns, in its log), none goes with
// nothing else, and nothing left is none, which not every plugin allows
// (and which storage.cfg then holds as "content none").
func (pl storagePlugin) decodeContent(v string) ([]string, error) {
	set := map[string]bool{}
	for _, ct := range pveacl.SplitList(v) {
		if slices.Contains(pl.content, ct) {
			set[ct] = true
		}
	}
	if set["none"] && len(set) > 1 {
		return nil, errors.New("unable to combine 'none' with other content types")
	}
	if len(set) == 0 && !slices.Contains(pl.content, "none") {
		return nil, errors.New("storage does not support content type 'none'")
	}
	if len(set) == 0 {
		return []string{"none"}, nil
	}
	return sortedKeys(set), nil
}

// decodeNodes is decode_value of nodes: the valid node names, once each.
// None left is no restriction, as storage.cfg then has no nodes line.
func decodeNodes(v string) []string {
	var out []string
	for _, n := range pveacl.SplitList(v) {
		if fmtNode(n) == nil && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

var (
	multiSlashRe = regexp.MustCompile(`/{2,}`)
	dotSegmentRe = regexp.MustCompile(`(?:/\.)+(?:/|$)`)
	leadingDotRe = regexp.MustCompile(`^(?:\./)+`)
	rootUpRe     = regexp.MustCompile(`^/(?:\.\./)+`)
)

// canonPath is Perl's File::Spec::Unix canonpath, which DirPlugin's
// check_config applies to the path: no repeated slashes, no "." segments,
// no ".." right under the root, no trailing slash. Other ".." stay.
func canonPath(p string) string {
	p = multiSlashRe.ReplaceAllString(p, "/")
	p = dotSegmentRe.ReplaceAllString(p, "/")
	if p != "./" {
		p = leadingDotRe.ReplaceAllString(p, "")
	}
	p = rootUpRe.ReplaceAllString(p, "/")
	if p == "/.." {
		p = "/"
	}
	if p != "/" {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

// deleteStorage is Config.pm's delete: the section goes (storage_is_used
// refuses a storage another one's base volume is on; the server takes no
// base option, so none is), then remove_storage_access drops the ACL
// entries on /storage/<id> and the storage from every pool. Guests and
// volumes are not looked at: their configurations keep naming the storage,
// as on PVE, and the volume records stay, as the files and LVs do.
func deleteStorage(c *call) (any, *apiError) {
	sid := c.p["storage"]
	if _, ok := c.s.stores[sid]; !ok {
		return nil, die("delete storage failed: storage '%s' does not exist", sid)
	}
	delete(c.s.stores, sid)
	c.s.dropACLUnder("/storage/" + sid)
	for name, p := range c.s.cfg.Pools {
		if i, ok := slices.BinarySearch(p.Storages, sid); ok {
			p.Storages = nilIfEmpty(slices.Delete(slices.Clone(p.Storages), i, i+1))
			c.s.cfg.Pools[name] = p
		}
	}
	c.s.touch()
	return nil, nil
}
