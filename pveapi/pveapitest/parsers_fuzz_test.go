package pveapitest

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

func FuzzParseDrive(f *testing.F) {
	for _, s := range []string{"local-lvm:vm-100-disk-0,size=8G", "local-lvm:0,import-from=local:import/a.raw,discard=on",
		"file=tank:base-9000-disk-0/vm-101-disk-0,ssd=1", "none,media=cdrom", ",", "a=b=c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := parseDrive(v)
		if err != nil {
			return
		}
		again, err := parseDrive(d.String())
		if err != nil {
			t.Fatalf("the printed drive %q of %q does not parse: %v", d.String(), v, err)
		}
		if diff := cmp.Diff(d, again, cmp.AllowUnexported(drive{})); diff != "" {
			t.Fatalf("print/parse changed the drive %q: -first +second:\n%s", v, diff)
		}
		if again.String() != d.String() {
			t.Fatalf("printing is not stable: %q then %q", d.String(), again.String())
		}
	})
}

func FuzzSizes(f *testing.F) {
	for _, s := range []string{"+1G", "1536M", "8", "0.5T", "+0", "1.5", "G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, _, err := parseSize(s)
		if err != nil || n > 1<<50 {
			return
		}
		back, rel, err := parseSize(formatSize(n))
		if err != nil || rel || back != n {
			t.Fatalf("formatSize(%d) = %q reads back as %d (%v, relative %v)", n, formatSize(n), back, err, rel)
		}
	})
}

func FuzzParseVolname(f *testing.F) {
	for _, s := range []string{"iso/a.iso", "import/talos.raw", "vm-100-disk-0", "base-9000-disk-0/vm-101-disk-0",
		"9000/base-9000-disk-0.qcow2/101/vm-101-disk-0.qcow2", "backup/vzdump-qemu-100-2024_01_01-00_00_00.vma.zst", "x",
		"vm-512345-pvc-0b7e6a52-3f1d-4c6e-9d8a-1e2f3a4b5c6d", "512345/vm-512345-pvc-0b7e6a52.raw"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		vtype, owner, err := parseVolname(name)
		if err != nil {
			return
		}
		if !containsStr(contentTypes, vtype) {
			t.Fatalf("parseVolname(%q) gave the unknown content type %q", name, vtype)
		}
		if (vtype == "images" || vtype == "backup") != (owner > 0) {
			t.Fatalf("parseVolname(%q) = %s owned by %d: images and backups have an owner, nothing else", name, vtype, owner)
		}
	})
}

func FuzzNormalizeTags(f *testing.F) {
	for _, s := range []string{"b;a;a", "k8s,talos v1", "", ";;", "Talos;TALOS;talos", "B;a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tags string) {
		once := normalizeTags(tags)
		if twice := normalizeTags(once); twice != once {
			t.Fatalf("normalizeTags is not idempotent: %q -> %q -> %q", tags, once, twice)
		}
		if strings.Contains(once, ";;") || strings.HasPrefix(once, ";") {
			t.Fatalf("normalizeTags(%q) = %q has an empty tag", tags, once)
		}
		if once != strings.ToLower(once) {
			t.Fatalf("normalizeTags(%q) = %q is not lower-cased (tag-style case-sensitive=0)", tags, once)
		}
		asciiUpper := strings.Map(func(r rune) rune { // pve-tag is ASCII
			if r >= 'a' && r <= 'z' {
				return r - 'a' + 'A'
			}
			return r
		}, tags)
		if upper := normalizeTags(asciiUpper); upper != once {
			t.Fatalf("tags that differ only in case are one tag: %q -> %q, upper-cased -> %q", tags, once, upper)
		}
		list := pveacl.SplitList(once)
		if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
			t.Fatalf("normalizeTags(%q) = %q is not sorted and unique", tags, once)
		}
	})
}

func FuzzReadParamsJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":true,"c":"x","d":null,"e":["1","2"]}`, `{"a":{"b":1}}`, `[]`, `{"a":1e400}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p := params{}
		if err := decodeJSONParams([]byte(body), p); err != nil {
			if err.Status != 400 {
				t.Fatalf("a bad JSON body must be a 400, got %d", err.Status)
			}
			return
		}
		for k, v := range p {
			if k == "" && v != "" {
				continue
			}
			if strings.ContainsRune(v, 0) && !strings.ContainsRune(body, 0) && !strings.Contains(body, `\u0000`) {
				t.Fatalf("a NUL appeared from nowhere in %q", v)
			}
		}
	})
}

func FuzzParseBoot(f *testing.F) {
	for _, s := range []string{"order=scsi0;net0", ";ide0", "cdn;ide0", "cdn", "legacy=c,cdn", "order=", ",order=scsi0,,",
		"order=scsi0 ide2\n", "order=a\x00b", "legacy=0,cdn", "order=scsi0,order=net0", "color=red", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		b, err := parseBoot(v, "boot")
		if err != nil {
			return
		}
		for _, dev := range b.order {
			if !validBootDev(dev) {
				t.Fatalf("parseBoot(%q) accepted the boot device %q", v, dev)
			}
		}
		if b.legacy != "" && !bootLegacyRe.MatchString(b.legacy) {
			t.Fatalf("parseBoot(%q) accepted the legacy value %q", v, b.legacy)
		}
		printed := printBootOrder(b.order)
		again, err := parseBoot(printed, "boot")
		if err != nil {
			t.Fatalf("the printed order %q of %q does not parse: %v", printed, v, err)
		}
		if !slices.Equal(again.order, b.order) {
			t.Fatalf("print/parse changed the order of %q: %q then %q", v, b.order, again.order)
		}
	})
}
