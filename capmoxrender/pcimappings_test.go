package capmoxrender_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestParsePCIMappingsFromFake: what the Proxmox VE fake answers on GET
// /cluster/mapping/pci, as the data array and as the whole answer, reads
// back as the mappings it was seeded with.
func TestParsePCIMappingsFromFake(t *testing.T) {
	srv := pvefake.NewServer(t, pvefake.WithNodes("pve1", "pve2"))
	for _, m := range []pvefake.PCIMappingSpec{
		{ID: "a100", Description: "NVIDIA A100", LiveMigrationCapable: true, Map: []string{
			"node=pve1,path=0000:01:00.0,id=10de:20b5,iommugroup=12", "node=pve1,path=0000:02:00.0,id=10de:20b5,subsystem-id=10de:1533",
			"node=pve2,path=0000:41:00.0;0000:41:00.1,id=10de:20b5"}},
		{ID: "Vgpu", Mdev: true, Map: []string{"node=pve2,path=0000:81:00.0,id=10de:2236,description=slot 3"}},
	} {
		if err := srv.AddPCIMapping(m); err != nil {
			t.Fatal(err)
		}
	}
	var data json.RawMessage
	if err := srv.Client().Get(context.Background(), "/cluster/mapping/pci", &data); err != nil {
		t.Fatal(err)
	}
	want := []capmoxrender.PCIMapping{
		{ID: "Vgpu", Mdev: true, Devices: []capmoxrender.PCIMappedDevice{{Node: "pve2", Path: "0000:81:00.0", ID: "10de:2236", IOMMUGroup: -1, Description: "slot 3"}}},
		{ID: "a100", Description: "NVIDIA A100", LiveMigrationCapable: true, Devices: []capmoxrender.PCIMappedDevice{
			{Node: "pve1", Path: "0000:01:00.0", ID: "10de:20b5", IOMMUGroup: 12},
			{Node: "pve1", Path: "0000:02:00.0", ID: "10de:20b5", SubsystemID: "10de:1533", IOMMUGroup: -1},
			{Node: "pve2", Path: "0000:41:00.0;0000:41:00.1", ID: "10de:20b5", IOMMUGroup: -1}}},
	}
	for name, doc := range map[string][]byte{"data": data, "whole": []byte(`{"data": ` + string(data) + `}`)} {
		got, err := capmoxrender.ParsePCIMappings(doc)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: -want +got:\n%s", name, diff)
		}
	}
	if got := want[1].NodeDevices(); !cmp.Equal(got, map[string]int{"pve1": 2, "pve2": 1}) {
		t.Errorf("NodeDevices() = %v", got)
	}
	if v := want[1].Devices[0].Vendor(); v != "10de" {
		t.Errorf("Vendor() = %q", v)
	}
}

func TestParsePCIMappingsRefusals(t *testing.T) {
	const good = `{"id":"a100","type":"pci","map":["node=pve1,path=0000:01:00.0,id=10de:20b5"]}`
	cases := map[string]struct {
		doc, want string
	}{
		"Control":      {doc: `[` + good + `]`},
		"YAML":         {doc: "- id: a100\n  map: [\"node=pve1,path=0000:01:00.0,id=10de:20b5\"]\n"},
		"Empty":        {doc: `[]`},
		"UnknownField": {doc: `[` + good + `,{"id":"b","map":["node=pve1,path=0000:02:00.0,id=10de:20b5"],"foo":1}]`, want: "unknown field [1].foo: a PCI mapping has id, type, map, description, digest, mdev and live-migration-capable"},
		"UnknownWhole": {doc: `{"data":[{"id":"a100","Map":[]}]}`, want: "unknown field data[0].Map"},
		"Checks":       {doc: `[{"id":"a100","map":["node=pve1,path=0000:01:00.0,id=10de:20b5"],"checks":[]}]`, want: "[0].checks: the answer was read with check-node; read it without (pvesh get /cluster/mapping/pci --output-format json)"},
		"NoData":       {doc: `{"mappings":[]}`, want: "unknown field mappings"},
		"NotAList":     {doc: `"a100"`, want: "the document is not a list of mappings"},
		"BadID":        {doc: `[{"id":"1a","map":["node=pve1,path=0000:01:00.0,id=10de:20b5"]}]`, want: `[0].id is "1a", which is not a Proxmox VE mapping id`},
		"Twice":        {doc: `[` + good + `,` + good + `]`, want: `[1].id "a100" is listed again (first at [0])`},
		"OtherType":    {doc: `[{"id":"ab","type":"usb","map":["node=pve1,path=0000:01:00.0,id=10de:20b5"]}]`, want: `[0].type is "usb"`},
		"NoMap":        {doc: `[{"id":"a100"}]`, want: `[0] ("a100") has no map`},
		"EmptyMap":     {doc: `[{"id":"a100","map":[]}]`, want: `[0] ("a100") has no map`},
		"ItemKey":      {doc: `[{"id":"ab","map":["node=pve1,path=0000:01:00.0,id=10de:20b5,iommu-group=3"]}]`, want: `[0].map[0]: unknown key "iommu-group": a map item has node, path, id, subsystem-id, iommugroup, description`},
		"ItemNoNode":   {doc: `[{"id":"ab","map":["path=0000:01:00.0,id=10de:20b5"]}]`, want: "[0].map[0]: node is missing"},
		"ItemPath":     {doc: `[{"id":"ab","map":["node=pve1,path=01:00.0,id=10de:20b5"]}]`, want: `[0].map[0]: path "01:00.0" is not a PCI address`},
		"ItemGroup":    {doc: `[{"id":"ab","map":["node=pve1,path=0000:01:00.0,id=10de:20b5,iommugroup=x"]}]`, want: `[0].map[0]: iommugroup "x" is not an integer`},
		"ItemTwice":    {doc: `[{"id":"ab","map":["node=pve1,path=0000:01:00.0,id=10de:20b5","node=pve1,path=0000:01:00.0,id=10de:20b5"]}]`, want: "[0].map[1] is node pve1's device 0000:01:00.0 again (as [0].map[0])"},
		"ItemKeyTwice": {doc: `[{"id":"ab","map":["node=pve1,node=pve2,path=0000:01:00.0,id=10de:20b5"]}]`, want: `[0].map[0]: key "node" is given twice`},
		"Mdev":         {doc: `[{"id":"ab","mdev":"yes","map":["node=pve1,path=0000:01:00.0,id=10de:20b5"]}]`, want: `[0].mdev: want 0 or 1`},
		"SecondDoc":    {doc: "[]\n---\n[]\n", want: "invalid PCI mappings"},
	}
	for name, tc := range cases {
		got, err := capmoxrender.ParsePCIMappings([]byte(tc.doc))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, capmoxrender.ErrPCIMappings) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParsePCIMappings = %v, %v; want an ErrPCIMappings containing %q", name, got, err, tc.want)
		}
	}
}

// FuzzParsePCIMappings: nothing panics, every error wraps ErrPCIMappings,
// and every mapping read has a PVE id, a device at least, and devices
// whose node and vendor:device id are PVE's.
func FuzzParsePCIMappings(f *testing.F) {
	for _, s := range []string{
		`[{"id":"a100","type":"pci","digest":"x","mdev":0,"live-migration-capable":1,"map":["node=pve1,path=0000:01:00.0,id=10de:20b5,iommugroup=12"]}]`,
		`{"data":[{"id":"B_2","map":["node=pve2,path=0000:41:00.0;0000:41:00.1,id=10de:20b5,subsystem-id=10de:1533,description=x"]}]}`,
		"- id: a\n  map: [node=n,path=0000:01:00.0,id=1002:73bf]\n", `[{"id":"ab","map":["node=pve1,,path=0000:01:00.0,id=10de:20b5"]}]`, `[]`, `{}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		ms, err := capmoxrender.ParsePCIMappings(doc)
		if err != nil {
			if !errors.Is(err, capmoxrender.ErrPCIMappings) {
				t.Fatalf("error outside ErrPCIMappings: %v", err)
			}
			return
		}
		ids := map[string]bool{}
		for _, m := range ms {
			if !capmox.ValidMappingID(m.ID) || ids[m.ID] || len(m.Devices) == 0 {
				t.Fatalf("mapping %+v read from %q", m, doc)
			}
			ids[m.ID] = true
			n := 0
			for node, c := range m.NodeDevices() {
				if node == "" || c < 1 {
					t.Fatalf("node %q with %d devices in %+v", node, c, m)
				}
				n += c
			}
			if n != len(m.Devices) {
				t.Fatalf("NodeDevices counts %d of %d devices", n, len(m.Devices))
			}
			for _, d := range m.Devices {
				if len(d.Vendor()) != 4 || d.Path == "" {
					t.Fatalf("device %+v", d)
				}
			}
		}
	})
}
