package pvefake

import (
	"strings"
	"testing"
)

func FuzzParsePCIMapEntry(f *testing.F) {
	for _, s := range []string{"node=pve,path=0000:01:00.0,id=10de:2204,iommugroup=14",
		"node=pve2,path=0000:01:00.0;0000:01:00.1,id=10de:2204,subsystem-id=1458:403b,description=left slot",
		"node=pve,path=0000:01:00,id=10de:2204", " node=pve , path=0000:01:00.0", "node=pve,,path=0000:01:00.0,id=8086:1521,",
		"node=pve,node=pve2", "pve", "=x", "node=", "node=pve\n,path=0000:01:00.0,id=10de:2204", "iommugroup=+1", "\n=0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		e, err := parsePCIMapEntry(v, "map[0]")
		if err != nil {
			if rest, ok := strings.CutPrefix(err.Error(), "format error\n"); ok {
				for _, line := range strings.Split(rest, "\n") {
					if _, known := pciMapFormat[strings.SplitN(strings.TrimPrefix(line, "map[0]."), ":", 2)[0]]; !known {
						t.Fatalf("check_object's error names a key of the format under map[0]: %q", line)
					}
				}
			}
			return
		}
		if e.node == "" || e.id == "" || len(e.devices()) == 0 || !mapPCIPathRe.MatchString(e.path) {
			t.Fatalf("%q parsed to an entry without node, id or a valid path: %+v", v, e)
		}
		for _, d := range e.devices() {
			if d == "" || strings.ContainsAny(d, ";,") {
				t.Fatalf("%q has the device %q", v, d)
			}
		}
		again, err := parsePCIMapEntry(e.String(), "map[0]")
		if err != nil {
			t.Fatalf("the printed entry %q of %q does not parse: %v", e.String(), v, err)
		}
		if again != e {
			t.Fatalf("print/parse changed the entry %q: %+v, then %+v", v, e, again)
		}
		if again.String() != e.String() {
			t.Fatalf("printing is not stable: %q then %q", e.String(), again.String())
		}
	})
}

func FuzzParseHostPCI(f *testing.F) {
	for _, s := range []string{"mapping=gpu,pcie=1", "0000:01:00.0;0000:01:00.1,x-vga=on", "host=01:00.0,rombar=no",
		"mapping=gpu,romfile=vbios.bin,driver=keep", "01:00.0,02:00.0", "host=01:00.0,mapping=gpu", "pcie=maybe", "mdev=nvidia-35", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := parseHostPCI(v, "hostpci0")
		if err != nil {
			return
		}
		for k, val := range d {
			if _, ok := hostPCIFormat[k]; !ok {
				t.Fatalf("%q parsed the key %q the format lacks", v, k)
			}
			if hostPCIBooleans[k] && val != "0" && val != "1" {
				t.Fatalf("%q parsed the boolean %s as %q", v, k, val)
			}
		}
		if h := d["host"]; h != "" {
			for _, id := range strings.Split(h, ";") {
				if n := lspciID(id); strings.Count(n, ":") != 2 || !strings.HasSuffix(n, id) {
					t.Fatalf("lspciID(%q) = %q", id, n)
				}
			}
		}
	})
}

func FuzzPCIConflict(f *testing.F) {
	f.Add("0000:01:00", "0000:01:00.1")
	f.Add("0000:01:00.0", "0000:01:00.0")
	f.Add("0000:01:00.0", "0000:01:00.1")
	f.Fuzz(func(t *testing.T, a, b string) {
		if pciConflict(a, b) != pciConflict(b, a) {
			t.Fatalf("pciConflict(%q, %q) is not symmetric", a, b)
		}
		if !pciConflict(a, a) {
			t.Fatalf("%q does not conflict with itself", a)
		}
	})
}
