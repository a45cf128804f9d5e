package admission

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/samber/lo"
)

func TestParseNetworks(t *testing.T) {
	cases := map[string]struct {
		reason  string
		in      string
		want    NetworkSelection
		err     error
		foreign bool
	}{
		"Empty": {reason: "an empty value selects nothing", in: ""},
		"Comma": {
			reason: "unqualified, qualified and with an interface",
			in:     "a, tenant-b/b@net2 ,c@eth1",
			want: NetworkSelection{Form: FormComma, Entries: []NetworkRef{
				{Name: "a"}, {Namespace: "tenant-b", Name: "b", Interface: "net2"}, {Name: "c", Interface: "eth1"},
			}},
			foreign: true,
		},
		"CommaOwn": {
			reason: "qualified with the own namespace",
			in:     "tenant-a/a",
			want:   NetworkSelection{Form: FormComma, Entries: []NetworkRef{{Namespace: "tenant-a", Name: "a"}}},
		},
		"JSON": {
			reason:  "every namespace key, at any depth, any case",
			in:      `[{"name":"a","namespace":"tenant-a"},{"name":"b","NAMESPACE" : "tenant-b"}]`,
			want:    NetworkSelection{Form: FormJSON, Namespaces: []string{"tenant-a", "tenant-b"}},
			foreign: true,
		},
		"JSONWithoutNamespace": {
			reason: "a JSON entry without a namespace is the object's own",
			in:     `[{"name":"a"}]`,
			want:   NetworkSelection{Form: FormJSON},
		},
		"Backslash": {reason: "escapes could hide the key", in: `[{"n\u0061mespace":"x"}]`, err: ErrBackslash},
		"SpacedSlash": {
			reason: "spaces around the slash are not guessed at",
			in:     "tenant-a / a",
			err:    &EntryError{Index: 0, Entry: "tenant-a / a"},
		},
		"UpperCase": {reason: "names are DNS labels", in: "A", err: &EntryError{Index: 0, Entry: "A"}},
		"Dots":      {reason: "no dots in the label grammar", in: "a.b", err: &EntryError{Index: 0, Entry: "a.b"}},
		"EmptyItem": {reason: "an empty entry", in: "a,,b", err: &EntryError{Index: 1, Entry: ""}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseNetworks(tc.in)
			if diff := cmp.Diff(tc.err, err, cmpErr); diff != "" {
				t.Fatalf("%s: error (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
			if f := foreignNetworks(tc.in, "tenant-a"); f != (tc.foreign || tc.err != nil) {
				t.Errorf("%s: foreign = %v", tc.reason, f)
			}
		})
	}
}

// cmpErr compares errors by message and, for sentinels, identity.
var cmpErr = cmp.Comparer(func(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error() || errors.Is(a, b)
})

func TestParseDefaultNetwork(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   NetworkRef
		err    bool
	}{
		"Qualified":     {reason: "<namespace>/<name>", in: "tenant-a/net", want: NetworkRef{Namespace: "tenant-a", Name: "net"}},
		"Interface":     {reason: "with an interface", in: " tenant-a/net@eth0\n", want: NetworkRef{Namespace: "tenant-a", Name: "net", Interface: "eth0"}},
		"Unqualified":   {reason: "Multus and Kube-OVN disagree about it", in: "net", err: true},
		"JSON":          {reason: "JSON is not one qualified name", in: `{"name":"net","namespace":"tenant-a"}`, err: true},
		"TwoNamespaces": {reason: "one slash only", in: "a/b/c", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseDefaultNetwork(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("%s: error %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	if _, err := ParseDefaultNetwork("net"); !errors.Is(err, ErrNotQualified) {
		t.Errorf("an unqualified name is ErrNotQualified, got %v", err)
	}
}

func TestTriples(t *testing.T) {
	ts, err := ParseTriples("vmbr70/101/subnet-a,vmbr70/7/subnet-b,pxa0101/subnet-a")
	if err != nil {
		t.Fatal(err)
	}
	want := []Triple{{Bridge: "vmbr70", VLAN: 101, Pool: "subnet-a"}, {Bridge: "vmbr70", VLAN: 7, Pool: "subnet-b"}, {VNet: "pxa0101", Pool: "subnet-a"}}
	if diff := cmp.Diff(want, ts); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := FormatTriples(append(ts, ts[0])); got != "pxa0101/subnet-a,vmbr70/101/subnet-a,vmbr70/7/subnet-b" {
		t.Errorf("FormatTriples = %q: sorted as strings, duplicates dropped", got)
	}
	refused := map[string]string{
		"vmbr70/0/p":    `entry 0 "vmbr70/0/p": VLAN "0" is not a VLAN ID (1-4094)`,
		"vmbr70/4095/p": `entry 0 "vmbr70/4095/p": VLAN "4095" is not a VLAN ID (1-4094)`,
		"vmbr70/07/p":   `entry 0 "vmbr70/07/p": VLAN "07" is not a VLAN ID (1-4094)`,
		"vmbr70/x/p":    `entry 0 "vmbr70/x/p": VLAN "x" is not a VLAN ID (1-4094)`,
		"/1/p":          `entry 0 "/1/p" is not <bridge>/<vlan>/<pool> or <vnet>/<pool>`,
		"a/b/c/d":       `entry 0 "a/b/c/d" is not <bridge>/<vlan>/<pool> or <vnet>/<pool>`,
		"pxa0101/":      `entry 0 "pxa0101/" is not <bridge>/<vlan>/<pool> or <vnet>/<pool>`,
		"vmbr70/1": `entry 0 "vmbr70/1" is ambiguous: read as <vnet>/<pool> its pool "1" is a number, read as <bridge>/<vlan> it lacks its pool; ` +
			`write <bridge>/<vlan>/<pool>, or <vnet>/<pool> with the pool's name`,
		"vmbr70/1/p,pxa0101/+7": `entry 1 "pxa0101/+7" is ambiguous: read as <vnet>/<pool> its pool "+7" is a number, read as <bridge>/<vlan> it lacks its pool; write <bridge>/<vlan>/<pool>, or <vnet>/<pool> with the pool's name`,
		"vmbr_70/subnet-a":      `entry 0 "vmbr_70/subnet-a": VNet "vmbr_70" is not a Proxmox SDN VNet ID (2-8 letters and digits, starting with a letter)`,
		"pxa012345/subnet":      `entry 0 "pxa012345/subnet": VNet "pxa012345" is not a Proxmox SDN VNet ID (2-8 letters and digits, starting with a letter)`,
		"0pxa/subnet-a":         `entry 0 "0pxa/subnet-a": VNet "0pxa" is not a Proxmox SDN VNet ID (2-8 letters and digits, starting with a letter)`,
		"vmbr70/1/p,,x/1/p":     `entry 1 "" is not <bridge>/<vlan>/<pool> or <vnet>/<pool>`,
	}
	for in, msg := range refused {
		if _, err := ParseTriples(in); err == nil || err.Error() != msg {
			t.Errorf("ParseTriples(%q) = %v, want %s", in, err, msg)
		}
	}
}

// multusElement is what Multus decodes each JSON entry into: Go's decoder
// matches the key "namespace" without regard to case.
type multusElement struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// FuzzParseNetworks checks the parser against the readers it guards: when
// it finds nothing foreign, neither Go's JSON decoder (as Multus uses it)
// nor a plain comma split sees another namespace; and the comma form
// round-trips through NetworkRef.String.
func FuzzParseNetworks(f *testing.F) {
	for _, s := range []string{"", "a", "a,tenant-b/b@c", `[{"name":"a","namespace":"tenant-b"}]`, `{"name":"a","Namespace":"x"}`,
		`[{"name":"a","nameſpace":"tenant-b"}]`, " a , b ", "a/b/c", `[{"namespace":"tenant-a","namespace":"x"}]`, "\ta\n"} {
		f.Add(s)
	}
	const own = "tenant-a"
	f.Fuzz(func(t *testing.T, v string) {
		sel, err := ParseNetworks(v)
		foreign := foreignNetworks(v, own)
		if err != nil {
			if !foreign {
				t.Fatalf("unreadable value %q was not refused", v)
			}
			return
		}
		if sel.Form == FormComma {
			var parts []string
			for _, e := range sel.Entries {
				parts = append(parts, e.String())
			}
			again, err := ParseNetworks(strings.Join(parts, ","))
			if err != nil || !cmp.Equal(again.Entries, sel.Entries) {
				t.Fatalf("round trip of %q: %v %v", v, again, err)
			}
		}
		if foreign {
			return
		}
		var list []multusElement
		if json.Unmarshal([]byte(v), &list) == nil {
			for _, e := range list {
				if e.Namespace != "" && e.Namespace != own {
					t.Fatalf("admitted %q, but Multus reads namespace %q", v, e.Namespace)
				}
			}
		}
		var one multusElement
		if json.Unmarshal([]byte(v), &one) == nil && one.Namespace != "" && one.Namespace != own {
			t.Fatalf("admitted %q, but a decoder reads namespace %q", v, one.Namespace)
		}
		if sel.Form == FormComma {
			for _, item := range strings.Split(v, ",") {
				if ns, _, ok := strings.Cut(strings.TrimSpace(item), "/"); ok && strings.TrimSpace(ns) != own {
					t.Fatalf("admitted %q, but a comma split reads namespace %q", v, ns)
				}
			}
		}
	})
}

// FuzzParseDefaultNetwork: an accepted value is qualified and round-trips.
func FuzzParseDefaultNetwork(f *testing.F) {
	for _, s := range []string{"tenant-a/net", "net", " a/b@c ", "a/b/c", "{}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ref, err := ParseDefaultNetwork(v)
		if err != nil {
			if !foreignDefaultNetwork(v, "tenant-a") {
				t.Fatalf("unreadable %q not refused", v)
			}
			return
		}
		if ref.Namespace == "" {
			t.Fatalf("accepted unqualified %q", v)
		}
		again, err := ParseDefaultNetwork(ref.String())
		if err != nil || again != ref {
			t.Fatalf("round trip of %q: %+v %v", v, again, err)
		}
		if foreignDefaultNetwork(v, ref.Namespace) {
			t.Fatalf("%q is refused in its own namespace %s", v, ref.Namespace)
		}
	})
}

// FuzzParseTriples: whatever parses formats back to something that parses
// to the same set.
func FuzzParseTriples(f *testing.F) {
	for _, s := range []string{"", "vmbr70/101/subnet-a", "a/1/b,c/4094/d", "a/0/b", "a//b",
		"pxa0101/subnet-a", "vmbr70/101/subnet-a,pxa0101/subnet-a", "pxa0101/101", "pxa0101/", "0pxa/subnet-a", "pxa0101/subnet-a/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ts, err := ParseTriples(v)
		if err != nil {
			return
		}
		for _, tr := range ts {
			// An entry is one kind or the other, never both: a VNet entry
			// carries no bridge and no VLAN, a triple no VNet.
			if (tr.VNet != "") == (tr.Bridge != "" || tr.VLAN != 0) {
				t.Fatalf("ParseTriples(%q) gave %+v, which is neither a triple nor a VNet entry", v, tr)
			}
			if strings.Count(tr.String(), "/") != 1+lo.Ternary(tr.VNet == "", 1, 0) {
				t.Fatalf("ParseTriples(%q) gave %+v, whose entry %q has the slashes of the other kind", v, tr, tr.String())
			}
		}
		text := FormatTriples(ts)
		again, err := ParseTriples(text)
		if err != nil {
			t.Fatalf("FormatTriples(%q) = %q does not parse: %v", v, text, err)
		}
		if FormatTriples(again) != text {
			t.Fatalf("formatting is not idempotent: %q then %q", text, FormatTriples(again))
		}
	})
}
