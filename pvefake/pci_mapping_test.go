package pvefake_test

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

const (
	gpuA = "node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14"
	gpuB = "node=pve,path=0000:02:00.0,id=10de:2204,iommugroup=15"
)

// seedGPU adds the mapping "gpu": two devices on pve.
func seedGPU(t *testing.T, srv *pvefake.Server) {
	t.Helper()
	must(t, srv.AddPCIMapping(pvefake.PCIMappingSpec{ID: "gpu", Description: "RTX 3090", Map: []string{gpuA, gpuB}}))
}

// TestPCIMappingMethods: /cluster/mapping/pci as pve-manager's
// Mapping/PCI.pm serves it, each refusal next to a call that is admitted:
// Mapping.Modify on /mapping/pci to create and delete, on /mapping/pci/<id>
// to update, any of Use, Modify and Audit there to read; the schema's 400s
// (a map item is a property string checked item by item), then
// check_config's and the lock's plain 500s.
func TestPCIMappingMethods(t *testing.T) {
	create := func(extra map[string]any) map[string]any {
		b := map[string]any{"id": "nic", "map": []string{"node=pve,path=0000:03:00.0,id=8086:1521"}}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	update := func(extra map[string]any) map[string]any {
		b := map[string]any{"map": []string{gpuA}}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	admin := []string{"PVEMappingAdmin"}
	cases := map[string]endpointCase{
		"CreateRoot":     {reason: "root creates a mapping", method: "POST", path: "/cluster/mapping/pci", body: create(nil)},
		"CreateAdmitted": {reason: "Mapping.Modify on /mapping/pci admits a create", grants: map[string][]string{"/mapping/pci": admin}, method: "POST", path: "/cluster/mapping/pci", body: create(nil)},
		"CreateRefused": {reason: "Mapping.Use does not", grants: map[string][]string{"/": {"PVEMappingUser"}}, method: "POST", path: "/cluster/mapping/pci", body: create(nil),
			want: "Permission check failed (/mapping/pci, Mapping.Modify)"},
		"CreateOnOneMapping": {reason: "Mapping.Modify on another mapping does not either", grants: map[string][]string{"/mapping/pci/gpu": admin},
			method: "POST", path: "/cluster/mapping/pci", body: create(nil), want: "Permission check failed (/mapping/pci, Mapping.Modify)"},
		"AllOptions": {reason: "description, mdev, live-migration-capable and a second item", method: "POST", path: "/cluster/mapping/pci",
			body: create(map[string]any{"description": "Intel NIC", "mdev": false, "live-migration-capable": true,
				"map": []string{"node=pve,path=0000:03:00.0;0000:03:00.1,id=8086:1521,subsystem-id=8086:0001,iommugroup=7,description=port 1"}})},
		"MissingMap": {reason: "createSchema makes map required", method: "POST", path: "/cluster/mapping/pci", body: map[string]any{"id": "nic"},
			want: "map: property is missing and it is not optional"},
		"BadID": {reason: "id is pve-configid", method: "POST", path: "/cluster/mapping/pci", body: create(map[string]any{"id": "n"}),
			want: "id: invalid format - invalid configuration ID 'n'"},
		"UnknownParameter": {reason: "a parameter outside the schema is refused by name", method: "POST", path: "/cluster/mapping/pci",
			body: create(map[string]any{"vendor": "intel"}), want: "vendor: property is not defined in schema and the schema does not allow additional properties"},
		"UpperCasePath": {reason: "a map item's path is lower-case hex with the domain", method: "POST", path: "/cluster/mapping/pci",
			body: create(map[string]any{"map": []string{"node=pve,path=0000:0A:00.0,id=8086:1521"}}),
			want: "map[0]: invalid format - format error\nmap[0].path: value does not match the regex pattern"},
		"NoDomain": {reason: "$map_fmt's path needs the domain, which hostpciN may leave out", method: "POST", path: "/cluster/mapping/pci",
			body: create(map[string]any{"map": []string{"node=pve,path=03:00.0,id=8086:1521"}}),
			want: "map[0].path: value does not match the regex pattern"},
		"SecondItem": {reason: "each item is checked under its index", method: "POST", path: "/cluster/mapping/pci",
			body: create(map[string]any{"map": []string{gpuA, "node=pve,path=0000:03:00.0"}}),
			want: "map[1]: invalid format - format error\nmap[1].id: property is missing and it is not optional"},
		"BadNode": {reason: "node is pve-node", method: "POST", path: "/cluster/mapping/pci",
			body: create(map[string]any{"map": []string{"node=-pve,path=0000:03:00.0,id=8086:1521"}}),
			want: "map[0].node: invalid format - value does not look like a valid node name"},
		"BadIOMMUGroup": {reason: "iommugroup is an integer", method: "POST", path: "/cluster/mapping/pci",
			body: create(map[string]any{"map": []string{"node=pve,path=0000:03:00.0,id=8086:1521,iommugroup=x"}}),
			want: "map[0].iommugroup: type check ('integer') failed - got 'x'"},
		"UnknownKey": {reason: "parse_property_string refuses a key the format lacks", method: "POST", path: "/cluster/mapping/pci",
			body: create(map[string]any{"map": []string{"node=pve,path=0000:03:00.0,id=8086:1521,vendor=intel"}}),
			want: "map[0]: invalid format - invalid key in comma-separated list property: vendor"},
		"NoKey": {reason: "the format has no default key", method: "POST", path: "/cluster/mapping/pci",
			body: create(map[string]any{"map": []string{"pve,path=0000:03:00.0,id=8086:1521"}}),
			want: "map[0]: invalid format - value without key, but schema does not define a default key"},
		"LineFeed": {reason: "check_config refuses a line break, outside the lock", method: "POST", path: "/cluster/mapping/pci",
			body: create(map[string]any{"description": "a\nb"}), want: "500 property contains a line feed"},
		"Duplicate": {reason: "an existing ID, under the lock", method: "POST", path: "/cluster/mapping/pci", body: create(map[string]any{"id": "gpu"}),
			want: "create hardware mapping failed: pci ID 'gpu' already defined"},

		"ReadRoot":  {reason: "root reads a mapping", method: "GET", path: "/cluster/mapping/pci/gpu"},
		"ReadUse":   {reason: "Mapping.Use admits a read", grants: map[string][]string{"/mapping/pci/gpu": {"PVEMappingUser"}}, method: "GET", path: "/cluster/mapping/pci/gpu"},
		"ReadAudit": {reason: "so does Mapping.Audit", grants: map[string][]string{"/mapping": {"PVEAuditor"}}, method: "GET", path: "/cluster/mapping/pci/gpu"},
		"ReadRefused": {reason: "the 'or' check names no path", grants: map[string][]string{"/vms": {"PVEVMAdmin"}}, method: "GET", path: "/cluster/mapping/pci/gpu",
			want: "Permission check failed"},
		"ReadMissing": {reason: "an unknown ID", method: "GET", path: "/cluster/mapping/pci/nope", want: "mapping 'nope' not found"},

		"UpdateRoot": {reason: "root updates a mapping", method: "PUT", path: "/cluster/mapping/pci/gpu", body: update(map[string]any{"description": "one"})},
		"UpdateAdmitted": {reason: "Mapping.Modify on the mapping admits an update", grants: map[string][]string{"/mapping/pci/gpu": admin},
			method: "PUT", path: "/cluster/mapping/pci/gpu", body: update(nil)},
		"UpdateRefused": {reason: "Mapping.Use does not", grants: map[string][]string{"/mapping/pci/gpu": {"PVEMappingUser"}},
			method: "PUT", path: "/cluster/mapping/pci/gpu", body: update(nil), want: "Permission check failed (/mapping/pci/gpu, Mapping.Modify)"},
		"UpdateWithoutMap": {reason: "check_config runs as for a create, so map must be sent again", method: "PUT", path: "/cluster/mapping/pci/gpu",
			body: map[string]any{"description": "one"}, want: "update hardware mapping failed: missing value for required option 'map'"},
		"UpdateMissing": {reason: "an unknown ID", method: "PUT", path: "/cluster/mapping/pci/nope", body: update(nil),
			want: "update hardware mapping failed: pci ID 'nope' does not exist"},
		"UpdateDigest": {reason: "a stale digest", method: "PUT", path: "/cluster/mapping/pci/gpu", body: update(map[string]any{"digest": "0123"}),
			want: "update hardware mapping failed: detected modified configuration - file changed by other user? Try again."},
		"UpdateDeleteMap": {reason: "map is required", method: "PUT", path: "/cluster/mapping/pci/gpu", body: update(map[string]any{"delete": "map"}),
			want: "update hardware mapping failed: unable to delete required option 'map'"},
		"UpdateDeleteUnknown": {reason: "delete_from_config knows the options only", method: "PUT", path: "/cluster/mapping/pci/gpu", body: update(map[string]any{"delete": "node"}),
			want: "update hardware mapping failed: no such option 'node'"},
		"UpdateSetAndDelete": {reason: "set and delete at once", method: "PUT", path: "/cluster/mapping/pci/gpu",
			body: update(map[string]any{"delete": "description", "description": "x"}),
			want: "update hardware mapping failed: cannot set and delete property 'description' at the same time!"},
		"UpdateBadItem": {reason: "the items are checked as on create", method: "PUT", path: "/cluster/mapping/pci/gpu",
			body: map[string]any{"map": []string{"node=pve,path=0000:01:00.0,id=10de"}}, want: "map[0].id: value does not match the regex pattern"},

		"DeleteRoot": {reason: "root deletes a mapping", method: "DELETE", path: "/cluster/mapping/pci/gpu"},
		"DeleteAdmitted": {reason: "Mapping.Modify on /mapping/pci admits a delete", grants: map[string][]string{"/mapping/pci": admin},
			method: "DELETE", path: "/cluster/mapping/pci/gpu"},
		"DeleteRefused": {reason: "Mapping.Modify on the mapping alone does not", grants: map[string][]string{"/mapping/pci/gpu": admin},
			method: "DELETE", path: "/cluster/mapping/pci/gpu", want: "Permission check failed (/mapping/pci, Mapping.Modify)"},
		"DeleteMissing": {reason: "an unknown ID is no error", method: "DELETE", path: "/cluster/mapping/pci/nope"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, c := start(t)
			seedGPU(t, srv)
			if tc.grants != nil {
				c = grantee(t, srv, "u@pve", tc.grants)
			}
			err := request(c, tc.method, tc.path, tc.body)
			if strings.HasPrefix(tc.want, "500 ") {
				var ae *proxmox.APIError
				if !errors.As(err, &ae) || ae.StatusCode != 500 {
					t.Errorf("%s: want a 500, got %v", tc.reason, err)
				}
				tc.want = strings.TrimPrefix(tc.want, "500 ")
			}
			wantMessage(t, tc.reason, err, tc.want)
			wantDenied(t, srv, tc.reason, tc.want)
		})
	}
}

// pciCfg is the SHA-1 of a mapping/pci.cfg text, the digest PVE returns.
func pciCfg(text string) string {
	sum := sha1.Sum([]byte(text))
	return hex.EncodeToString(sum[:])
}

// TestPCIMappingContents: what a create and an update write, as GET reads
// it back (type, map, the options, booleans as numbers) with the digest
// of mapping/pci.cfg as SectionConfig writes it.
func TestPCIMappingContents(t *testing.T) {
	srv, root := start(t)
	seedGPU(t, srv)
	nic := "node=pve,path=0000:03:00.0,id=8086:1521"
	must(t, root.Post(ctx, "/cluster/mapping/pci", map[string]any{"id": "nic", "map": []string{nic}, "mdev": 0,
		"live-migration-capable": true}, nil))
	var got map[string]any
	must(t, root.Get(ctx, "/cluster/mapping/pci/nic", &got))
	text := "gpu\n\tmap " + gpuA + "\n\tmap " + gpuB + "\n\tdescription RTX 3090\n\n" +
		"nic\n\tmap " + nic + "\n\tlive-migration-capable 1\n\tmdev 0\n\n"
	want := map[string]any{"type": "pci", "map": []any{nic}, "mdev": float64(0), "live-migration-capable": float64(1), "digest": pciCfg(text)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET nic: -want +got:\n%s", diff)
	}

	must(t, root.Put(ctx, "/cluster/mapping/pci/gpu", map[string]any{"map": []string{gpuB}, "delete": "description",
		"digest": got["digest"]}, nil))
	got = nil
	must(t, root.Get(ctx, "/cluster/mapping/pci/gpu", &got))
	text = "gpu\n\tmap " + gpuB + "\n\n" + "nic\n\tmap " + nic + "\n\tlive-migration-capable 1\n\tmdev 0\n\n"
	want = map[string]any{"type": "pci", "map": []any{gpuB}, "digest": pciCfg(text)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET gpu after the update: -want +got:\n%s", diff)
	}

	// a form sends an array as the key repeated, which pve-http-server
	// makes an array of; one value is an array of one
	form := url.Values{"id": {"two"}, "map": {gpuA, gpuB}}
	status, body := send(t, srv, "POST", "/cluster/mapping/pci", rootAuth(srv), form)
	wantStatus(t, "POST form", status, body, "200")
	m, err := root.Cluster(ctx)
	must(t, err)
	two, err := m.PCIMapping(ctx, "two")
	must(t, err)
	if !cmp.Equal(two.Map, []string{gpuA, gpuB}) || two.ID != "two" {
		t.Errorf("a form's repeated map: %+v", two)
	}

	// an empty description is not written, so it reads back as none
	for _, desc := range []string{"x", ""} {
		must(t, m.UpdatePCIMapping(ctx, "two", &proxmox.ClusterPCIMappingOptions{Map: []string{gpuA}}))
		must(t, root.Put(ctx, "/cluster/mapping/pci/two", map[string]any{"map": []string{gpuA}, "description": desc}, nil))
		got = nil
		must(t, root.Get(ctx, "/cluster/mapping/pci/two", &got))
		if d, ok := got["description"]; ok != (desc != "") || ok && d != desc {
			t.Errorf("description %q reads back as %v (%v)", desc, d, ok)
		}
	}
}

// TestPCIMappingList: the index lists, sorted, the mappings on which the
// caller holds Mapping.Modify, Use or Audit, with id and digest; with
// check-node a warning for a node without an item; /cluster/mapping names
// the types. go-proxmox reads both.
func TestPCIMappingList(t *testing.T) {
	srv, root := start(t, pvefake.WithNodes("pve", "pve2"))
	seedGPU(t, srv)
	must(t, srv.AddPCIMapping(pvefake.PCIMappingSpec{ID: "nic", Map: []string{"node=pve2,path=0000:03:00.0,id=8086:1521"}, Mdev: true}))
	cl, err := root.Cluster(ctx)
	must(t, err)
	all, err := cl.PCIMappings(ctx, "")
	must(t, err)
	if len(all) != 2 || all[0].ID != "gpu" || all[1].ID != "nic" || all[0].Description != "RTX 3090" || !bool(all[1].MDev) ||
		all[0].Digest == "" || all[0].Digest != all[1].Digest || all[0].Checks != nil {
		t.Errorf("root's list: %+v %+v", all[0], all[1])
	}
	checked, err := cl.PCIMappings(ctx, "pve2")
	must(t, err)
	if len(checked) != 2 || len(checked[0].Checks) != 1 || checked[0].Checks[0].Message != "No mapping for node pve2." ||
		checked[0].Checks[0].Severity != "warning" || len(checked[1].Checks) != 0 {
		t.Errorf("check-node=pve2: %+v %+v", checked[0].Checks, checked[1].Checks)
	}
	_, err = cl.PCIMappings(ctx, "pve3")
	wantMessage(t, "check-node names a node of the cluster", err, "no such cluster node 'pve3'")

	u := grantee(t, srv, "u@pve", map[string][]string{"/mapping/pci/nic": {"PVEAuditor"}, "/vms": {"PVEVMAdmin"}})
	ucl, err := u.Cluster(ctx) // reads /cluster/status, which needs Sys.Audit
	must(t, err)
	srv.ResetRequests()
	seen, err := ucl.PCIMappings(ctx, "")
	must(t, err)
	if len(seen) != 1 || seen[0].ID != "nic" {
		t.Errorf("Mapping.Audit on /mapping/pci/nic shows nic alone: %+v", seen)
	}
	if len(srv.Denied()) != 0 {
		t.Errorf("the list filters and refuses nothing: %v", srv.Denied())
	}
	types, err := ucl.Mappings(ctx)
	must(t, err)
	if len(types) != 3 || types[0].Name != "dir" || types[1].Name != "pci" || types[2].Name != "usb" {
		t.Errorf("/cluster/mapping: %+v", types)
	}
}

// TestPCIMappingEmptyMap: an empty map passes the schema and is written
// without a map line, so the section does not read back: the ID is
// unknown, and every later write of mapping/pci.cfg dies on the undefined
// section until a create of that ID replaces it.
func TestPCIMappingEmptyMap(t *testing.T) {
	srv, root := start(t)
	seedGPU(t, srv)
	must(t, root.Post(ctx, "/cluster/mapping/pci", map[string]any{"id": "empty", "map": []string{}}, nil))
	var got map[string]any
	wantMessage(t, "the section does not read back", root.Get(ctx, "/cluster/mapping/pci/empty", &got), "mapping 'empty' not found")
	wantMessage(t, "a create of another ID", root.Post(ctx, "/cluster/mapping/pci", map[string]any{"id": "nic", "map": []string{gpuA}}, nil),
		"create hardware mapping failed: unknown section type ''")
	wantMessage(t, "a delete of it", root.Delete(ctx, "/cluster/mapping/pci/empty", nil), "delete pci mapping failed: unknown section type ''")
	wantMessage(t, "an update", root.Put(ctx, "/cluster/mapping/pci/empty", map[string]any{"map": []string{gpuA}}, nil),
		"update hardware mapping failed: pci ID 'empty' does not exist")
	wantMessage(t, "a create of the ID replaces it", root.Post(ctx, "/cluster/mapping/pci", map[string]any{"id": "empty", "map": []string{gpuA}}, nil), "")
	wantMessage(t, "then other writes pass", root.Delete(ctx, "/cluster/mapping/pci/gpu", nil), "")
	var list []map[string]any
	must(t, root.Get(ctx, "/cluster/mapping/pci", &list))
	if len(list) != 1 || list[0]["id"] != "empty" {
		t.Errorf("the mappings left: %v", list)
	}
}
