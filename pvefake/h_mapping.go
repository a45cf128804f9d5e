package pvefake

import (
	"errors"
	"maps"
	"slices"
	"strings"
)

// mappingRoutes are /cluster/mapping and its PCI mappings, as pve-manager's
// PVE/API2/Cluster/Mapping.pm and Mapping/PCI.pm serve them over
// pve-guest-common's PVE::Mapping::PCI (mapping/pci.cfg). Directory and USB
// mappings are not served.
func mappingRoutes() []*route {
	id := param{name: "id", format: fmtConfigID}
	modify := perm{path: "/mapping/pci", privs: []string{"Mapping.Modify"}}
	return []*route{
		{method: "GET", path: "/cluster/mapping", handle: mappingIndex},
		{method: "GET", path: "/cluster/mapping/pci", handle: listPCIMappings,
			schema: []param{{name: "check-node", optional: true, format: fmtNode}}},
		{method: "POST", path: "/cluster/mapping/pci", check: modify, handle: createPCIMapping, schema: pciMappingSchema(true)},
		{method: "GET", path: "/cluster/mapping/pci/{id}", handle: readPCIMapping, schema: []param{id},
			check: or{perm{path: "/mapping/pci/{id}", privs: []string{"Mapping.Use"}},
				perm{path: "/mapping/pci/{id}", privs: []string{"Mapping.Modify"}},
				perm{path: "/mapping/pci/{id}", privs: []string{"Mapping.Audit"}}}},
		{method: "PUT", path: "/cluster/mapping/pci/{id}", handle: updatePCIMapping, schema: pciMappingSchema(false),
			check: perm{path: "/mapping/pci/{id}", privs: []string{"Mapping.Modify"}}},
		{method: "DELETE", path: "/cluster/mapping/pci/{id}", check: modify, handle: deletePCIMapping, schema: []param{id}},
	}
}

// pciMappingSchema is SectionConfig's createSchema(1) (map required) or
// updateSchema (map optional, digest and delete added) of the PCI plugin.
func pciMappingSchema(create bool) []param {
	out := []param{{name: "id", format: fmtConfigID}, {name: "description", optional: true, maxLen: 4096},
		opt("mdev", tBool), opt("live-migration-capable", tBool),
		{name: "map", optional: !create, items: func(v, path string) error {
			_, err := parsePCIMapEntry(v, path)
			return err
		}}}
	if !create {
		out = append(out, param{name: "digest", optional: true, maxLen: 64},
			param{name: "delete", optional: true, maxLen: 4096, format: fmtConfigIDList})
	}
	return out
}

// fmtConfigIDList is pve-configid-list.
func fmtConfigIDList(v string) error {
	for _, id := range splitPVEList(v) {
		if err := fmtConfigID(id); err != nil {
			return err
		}
	}
	return nil
}

// mappingIndex lists the mapping types, to every user.
func mappingIndex(*call) (any, *apiError) {
	return []map[string]string{{"name": "dir"}, {"name": "pci"}, {"name": "usb"}}, nil
}

var mappingSeePrivs = []string{"Mapping.Modify", "Mapping.Use", "Mapping.Audit"}

// listPCIMappings is the index: every mapping on whose /mapping/pci/<id>
// the caller holds Mapping.Modify, Use or Audit, sorted by ID (PVE's hash
// order varies). With check-node, which the request is proxied to, each
// entry has checks: a warning when the node has no item; the fake has no
// hardware that could fail an item's check.
func listPCIMappings(c *call) (any, *apiError) {
	check, checking := c.p["check-node"]
	if checking && check != "localhost" {
		if err := c.nodeExists(check); err != nil {
			return nil, err
		}
		if err := c.s.unreachableErr(check); err != nil {
			return nil, err
		}
	}
	digest := c.s.pciDigest()
	out := []map[string]any{}
	for _, id := range sortedKeys(c.s.pciMaps) {
		if ok, _ := c.checkAny("/mapping/pci/"+id, mappingSeePrivs, true); !ok {
			continue
		}
		m := c.s.pciMap(id)
		if m == nil {
			continue
		}
		e := m.entry()
		e["id"], e["digest"] = id, digest
		if checking {
			checks := []map[string]string{}
			if len(m.nodeEntries(check)) == 0 {
				checks = append(checks, map[string]string{"severity": "warning", "message": "No mapping for node " + check + "."})
			}
			e["checks"] = checks
		}
		out = append(out, e)
	}
	return out, nil
}

func readPCIMapping(c *call) (any, *apiError) {
	m := c.s.pciMap(c.p["id"])
	if m == nil {
		return nil, die("mapping '%s' not found", c.p["id"])
	}
	e := m.entry()
	e["digest"] = c.s.pciDigest()
	return e, nil
}

// pciMappingOpts is check_config over the request's options: a value with
// a line break is refused, booleans are kept as 0 or 1. An empty
// description is kept as "", which the file does not write (see
// pciConfigText and withoutEmpty).
func (c *call) pciMappingOpts() (map[string]string, error) {
	opts := map[string]string{}
	for _, k := range pciMapOptions {
		v, ok := c.p[k]
		if !ok {
			continue
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, errors.New("property contains a line feed")
		}
		opts[k] = v
	}
	return opts, nil
}

// withoutEmpty drops the options write_config leaves out (an empty value),
// so the mapping is what reading the file back gives.
func withoutEmpty(opts map[string]string) map[string]string {
	maps.DeleteFunc(opts, func(_, v string) bool { return v == "" })
	return opts
}

// pciWriteCheck is write_config over mapping/pci.cfg as the method read
// it: a section that did not read back (no map line, see valid) is an
// undefined entry, which write_config refuses as a section of no type,
// unless the method replaced it (a create of its ID).
func (s *state) pciWriteCheck(replaced string) error {
	for _, id := range s.pciOrder {
		if id != replaced && !s.pciMaps[id].valid() {
			return errors.New("unknown section type ''")
		}
	}
	return nil
}

// createPCIMapping is POST /cluster/mapping/pci: check_config first, then
// under the file's lock ("create hardware mapping failed: ...") the
// duplicate check and the write. A mapping with an empty map is written
// but does not read back.
func createPCIMapping(c *call) (any, *apiError) {
	id := c.p["id"]
	opts, err := c.pciMappingOpts()
	if err != nil {
		return nil, die("%v", err)
	}
	if c.s.pciMap(id) != nil {
		return nil, die("create hardware mapping failed: pci ID '%s' already defined", id)
	}
	if err := c.s.pciWriteCheck(id); err != nil {
		return nil, die("create hardware mapping failed: %v", err)
	}
	c.s.putPCIMap(&pciMapping{id: id, opts: withoutEmpty(opts), maps: slices.Clone(c.lists.values(c.p, "map"))})
	return nil, nil
}

// updatePCIMapping is PUT /cluster/mapping/pci/{id}, all of it under the
// lock ("update hardware mapping failed: ..."): the digest, the ID, then
// check_config as for a create (so map must be sent again), then the
// deletes (delete_from_config) and the new values.
func updatePCIMapping(c *call) (any, *apiError) {
	id := c.p["id"]
	fail := func(format string, args ...any) *apiError {
		return die("update hardware mapping failed: "+format, args...)
	}
	if d := c.p["digest"]; d != "" && d != c.s.pciDigest() {
		return nil, fail("detected modified configuration - file changed by other user? Try again.")
	}
	old := c.s.pciMap(id)
	if old == nil {
		return nil, fail("pci ID '%s' does not exist", id)
	}
	opts, err := c.pciMappingOpts()
	if err != nil {
		return nil, fail("%v", err)
	}
	if !c.p.has("map") {
		return nil, fail("missing value for required option 'map'")
	}
	m := &pciMapping{id: id, opts: maps.Clone(old.opts), maps: slices.Clone(c.lists.values(c.p, "map"))}
	for _, k := range splitPVEList(c.p["delete"]) {
		switch {
		case k == "map":
			return nil, fail("unable to delete required option 'map'")
		case !slices.Contains(pciMapOptions, k):
			return nil, fail("no such option '%s'", k)
		case c.p.has(k):
			return nil, fail("cannot set and delete property '%s' at the same time!", k)
		}
		delete(m.opts, k)
	}
	maps.Copy(m.opts, opts)
	withoutEmpty(m.opts)
	if err := c.s.pciWriteCheck(""); err != nil {
		return nil, fail("%v", err)
	}
	c.s.pciMaps[id] = m
	return nil, nil
}

// deletePCIMapping is DELETE /cluster/mapping/pci/{id}: Mapping.Modify on
// /mapping/pci; an unknown ID is no error ("delete pci mapping failed: ..."
// only from the write).
func deletePCIMapping(c *call) (any, *apiError) {
	id := c.p["id"]
	if err := c.s.pciWriteCheck(""); err != nil {
		return nil, die("delete pci mapping failed: %v", err)
	}
	if c.s.pciMap(id) != nil {
		c.s.dropPCIMap(id)
	}
	return nil, nil
}
