package pvefake

import (
	"bytes"
	"maps"
	"mime/multipart"
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
		if err := decodeJSONParams([]byte(body), p, lists{}); err != nil {
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

// uploadBody builds a go-proxmox-style upload with a fixed boundary.
func uploadBody(t *testing.T, content string, data []byte) []byte {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.SetBoundary(fuzzBoundary); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteField("content", content); err != nil {
		t.Fatal(err)
	}
	fw, err := w.CreateFormFile("filename", "user-data-101.iso")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(data)
	_ = w.Close()
	return b.Bytes()
}

const fuzzBoundary = "2f1e0d9c8b7a"

func FuzzParseMultipartUpload(f *testing.F) {
	f.Add(uploadBody(&testing.T{}, "iso", []byte("cidata")))
	f.Add(uploadBody(&testing.T{}, "", nil))
	f.Add([]byte("--" + fuzzBoundary + "\r\nContent-Disposition: form-data; name=\"filename\"; filename=\"a.iso\"\r\n\r\nx\r\n--" + fuzzBoundary + "--\r\n"))
	f.Add([]byte("preamble\n--" + fuzzBoundary + "\nContent-Disposition: form-data; name=\"checksum\"\n\n00\n--" + fuzzBoundary + "\nContent-Disposition: form-data; name=\"content\"\n\niso\n--" + fuzzBoundary + "--"))
	f.Fuzz(func(t *testing.T, body []byte) {
		up, err := parseMultipartUpload(body, fuzzBoundary)
		if err != nil {
			return
		}
		if !bytes.Contains(body, up.data) {
			t.Fatalf("the file's data %q is not in the body", up.data)
		}
		if up.fields["filename"] == "" && !strings.Contains(string(body), `filename="`) {
			t.Fatalf("a file part was found without a filename attribute: %q", body)
		}
	})
}

func FuzzUploadRoundTrip(f *testing.F) {
	f.Add("iso", []byte("cidata"))
	f.Add(" vztmpl ", []byte{})
	f.Add("iso", []byte("\r\n--"+fuzzBoundary+"x"))
	f.Fuzz(func(t *testing.T, content string, data []byte) {
		if strings.ContainsAny(content, "\r\n") || strings.Contains(content, fuzzBoundary) || bytes.Contains(data, []byte(fuzzBoundary)) {
			return // a value across lines or holding the delimiter is cut there, by PVE as here
		}
		up, err := parseMultipartUpload(uploadBody(t, content, data), fuzzBoundary)
		if err != nil {
			t.Fatalf("a well-formed upload fails: %v", err)
		}
		if !bytes.Equal(up.data, data) || up.fields["content"] != perlTrim(content) || up.fields["filename"] != "user-data-101.iso" {
			t.Fatalf("round trip: data %q content %q filename %q; sent %q %q", up.data, up.fields["content"], up.fields["filename"], data, content)
		}
	})
}

func FuzzCanonPath(f *testing.F) {
	for _, s := range []string{"/srv/isos", "//srv/./isos/", "/../srv", "/..", "/", "/a/../b", "/a/.b/./", "./x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c := canonPath(p)
		if again := canonPath(c); again != c {
			t.Fatalf("canonPath is not idempotent: %q -> %q -> %q", p, c, again)
		}
		if !strings.HasPrefix(p, "/") {
			return
		}
		if !strings.HasPrefix(c, "/") || strings.Contains(c, "//") || strings.Contains(c+"/", "/./") ||
			(c != "/" && strings.HasSuffix(c, "/")) {
			t.Fatalf("canonPath(%q) = %q is not canonical", p, c)
		}
	})
}

func FuzzDecodeContent(f *testing.F) {
	for _, s := range []string{"iso,vztmpl", "none", "none,iso", "", "images;rootdir iso", "iso,iso,backup", "\x00iso"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for typ, pl := range storagePlugins {
			got, err := pl.decodeContent(v)
			if err != nil {
				continue
			}
			if len(got) == 0 || (slices.Contains(got, "none") && len(got) > 1) || !slices.IsSorted(got) {
				t.Fatalf("%s: decodeContent(%q) = %q", typ, v, got)
			}
			for _, ct := range got {
				if !slices.Contains(pl.content, ct) && ct != "none" {
					t.Fatalf("%s: decodeContent(%q) kept %q, which the type does not take", typ, v, ct)
				}
			}
			again, err := pl.decodeContent(strings.Join(got, ","))
			if err != nil || !slices.Equal(again, got) {
				t.Fatalf("%s: %q reads back as %q (%v)", typ, got, again, err)
			}
		}
	})
}

// FuzzParseHAResourceList: a parsed resource list is sorted, without
// duplicates, each item a valid HA resource ID, and parsing its printed
// form gives it back.
func FuzzParseHAResourceList(f *testing.F) {
	for _, s := range []string{"vm:100,vm:101", "vm:101;vm:100 vm:100", "ct:200", "vm100", "VM:1", "", ",,", "vm:\x00ct:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		list, err := ParseHAResourceList(v)
		if err != nil {
			return
		}
		if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
			t.Fatalf("%q parsed to %q: not a sorted set", v, list)
		}
		for _, sid := range list {
			if !haResourceIDRe.MatchString(sid) {
				t.Fatalf("%q parsed to the invalid ID %q", v, sid)
			}
		}
		again, err := ParseHAResourceList(strings.Join(list, ","))
		if err != nil || !slices.Equal(again, list) {
			t.Fatalf("%q: printed %q parses to %q, %v", v, list, again, err)
		}
	})
}

// FuzzParseHANodeList: a parsed node list prints as the rules plugin's
// encode_value does and parses back to the same priorities.
func FuzzParseHANodeList(f *testing.F) {
	for _, s := range []string{"pve1:2,pve2", "pve1:0", "a-b:10;c", "pve1:x", "-a", "", "pve1:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		nodes, err := ParseHANodeList(v)
		if err != nil {
			return
		}
		for n := range nodes {
			if err := fmtNode(n); err != nil {
				t.Fatalf("%q parsed to the invalid node %q", v, n)
			}
		}
		again, err := ParseHANodeList(encodeNodes(nodes))
		if err != nil || !maps.Equal(again, nodes) {
			t.Fatalf("%q: printed %q parses to %v, %v; want %v", v, encodeNodes(nodes), again, err, nodes)
		}
	})
}
