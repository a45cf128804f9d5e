package capmoxrender_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// TestReadObjectsEveryDocument: every document of a lookup stream is read,
// empty ones passed over; an object after a document end marker, a syntax
// error or a key given twice in a later document is refused, naming the
// document and its line in the file.
func TestReadObjectsEveryDocument(t *testing.T) {
	cluster := func(name string) string {
		return "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: " + name + ", namespace: n}\n"
	}
	o, err := capmoxrender.ReadObjectsBytes([]byte("---\n---\n" + cluster("a") + "---\n# none\n---\n" + cluster("b")))
	if err != nil || len(o.Items()) != 2 || o.Items()[1].GetName() != "b" {
		t.Fatalf("two Clusters among empty documents: %v, %v", o, err)
	}
	cases := map[string]struct{ in, want string }{
		"AfterEnd":       {cluster("a") + "...\n" + cluster("b"), "document 2: yaml: line 4: did not find expected <document start>"},
		"SyntaxInSecond": {cluster("a") + "---\n" + cluster("b") + "  spec: [\n", "document 2: yaml: line 7: did not find expected key"},
		"DuplicateKey": {cluster("a") + "---\n" + cluster("b") + "kind: Other\n", `document 2: yaml: unmarshal errors:
  line 8: key "kind" already set in map`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := capmoxrender.ReadObjectsBytes([]byte(tc.in))
			if !errors.Is(err, capmoxrender.ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadObjectsBytes = %v, %v; want an invalid-input error containing %q", o, err, tc.want)
			}
		})
	}
}

// TestReadObjectsDuplicate: the same object (group, kind, namespace and
// name) given twice, in two documents or in a List and a document, is
// refused naming both places, rather than the last silently winning; the
// control, the same name in another namespace or of another kind, is two
// objects.
func TestReadObjectsDuplicate(t *testing.T) {
	network := func(ns, name, vlan string) string {
		return "apiVersion: proxmox.cozystack.io/v1alpha1\nkind: ProxmoxNetwork\nmetadata: {name: " + name + ", namespace: " + ns + "}\nstatus: {vlan: " + vlan + "}\n"
	}
	ok := network("tenant-a", "net", "100") + "---\n" + network("tenant-b", "net", "101") + "---\n" +
		"apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: net, namespace: tenant-a}\n"
	if o, err := capmoxrender.ReadObjectsBytes([]byte(ok)); err != nil || len(o.Items()) != 3 {
		t.Fatalf("three distinct objects: %v, %v", o, err)
	}
	cases := map[string]struct{ in, want string }{
		"Documents": {network("tenant-a", "net", "100") + "---\n" + network("tenant-b", "x", "1") + "---\n" + network("tenant-a", "net", "200"),
			`ProxmoxNetwork "tenant-a/net" is in document 1 (line 1) and again in document 3 (line 10): an object may be given once; remove one of the two`},
		"ListAndDocument": {"apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(network("tenant-a", "net", "100"), "\n"), "\n", "\n  ") + "\n---\n" + network("tenant-a", "net", "200"),
			`ProxmoxNetwork "tenant-a/net" is in item 1 of the List in document 1 (line 1) and again in document 2 (line 8)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := capmoxrender.ReadObjectsBytes([]byte(tc.in))
			if !errors.Is(err, capmoxrender.ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadObjectsBytes = %v, %v; want an invalid-input error containing %q", o, err, tc.want)
			}
		})
	}
}

// TestReadObjectsScalesLinearly: reading four times as many objects takes
// about four times as long, not sixteen: each object is indexed, not
// compared with every object read before it (the store before the index
// took 1.9 s for 4,000 Deployments and 10.3 s for 8,000; see
// BenchmarkLintImagesRead). The fastest of three runs of each size is
// compared, and the bound (10x for 4x the objects) leaves room for a
// loaded machine.
func TestReadObjectsScalesLinearly(t *testing.T) {
	if testing.Short() {
		t.Skip("times reads of thousands of objects")
	}
	fastest := func(data []byte) time.Duration {
		best := time.Duration(1<<63 - 1)
		for range 3 {
			start := time.Now()
			if _, err := capmoxrender.ReadObjectsBytes(data); err != nil {
				t.Fatal(err)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	small, large := fastest(deployments(1500)), fastest(deployments(6000))
	if ratio := float64(large) / float64(small); ratio > 10 {
		t.Errorf("1,500 objects took %s, 6,000 took %s: %.1fx for 4x the objects", small, large, ratio)
	}
}
