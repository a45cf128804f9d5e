package talostemplate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func goodInputs() Inputs {
	return Inputs{VMID: "9000", Storage: "local-lvm", TalosVersion: "v1.13.6", SchematicID: idGuestAgent}
}

func TestNewSpec(t *testing.T) {
	cases := map[string]struct {
		reason string
		edit   func(*Inputs)
		want   Spec
	}{
		"Defaults": {
			reason: "factory, disk size, CPU and tags take the reference defaults",
			edit:   func(*Inputs) {},
			want: Spec{VMID: 9000, Storage: "local-lvm", TalosVersion: "v1.13.6", SchematicID: idGuestAgent,
				FactoryURL: DefaultFactoryURL, DiskSize: "20G", CPU: "x86-64-v2-AES",
				Tags: []string{"cozystack", "schematic-ce4c9805", "talos", "talos-v1.13.6"}},
		},
		"Overrides": {
			reason: "explicit inputs win; one trailing slash is dropped from the factory URL",
			edit: func(in *Inputs) {
				in.VMID, in.FactoryURL, in.DiskSize, in.CPU, in.Tags, in.DisableAgent = "999999999", "http://mirror.lan:8080/factory/", "64G", "host", "Pool-A,talos", true
			},
			want: Spec{VMID: 999999999, Storage: "local-lvm", TalosVersion: "v1.13.6", SchematicID: idGuestAgent,
				FactoryURL: "http://mirror.lan:8080/factory", DiskSize: "64G", CPU: "host", Tags: []string{"pool-a", "talos"}, DisableAgent: true},
		},
		"PreRelease": {
			reason: "a pre-release suffix is accepted",
			edit:   func(in *Inputs) { in.TalosVersion = "v1.14.0-alpha.2" },
			want: Spec{VMID: 9000, Storage: "local-lvm", TalosVersion: "v1.14.0-alpha.2", SchematicID: idGuestAgent,
				FactoryURL: DefaultFactoryURL, DiskSize: "20G", CPU: "x86-64-v2-AES",
				Tags: []string{"cozystack", "schematic-ce4c9805", "talos", "talos-v1.14.0-alpha.2"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := goodInputs()
			tc.edit(&in)
			got, err := NewSpec(in)
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("%s: a Spec from NewSpec must validate: %v", tc.reason, err)
			}
		})
	}
}

func TestNewSpecRefuses(t *testing.T) {
	cases := map[string]struct {
		reason string
		edit   func(*Inputs)
		field  string
		msg    string
	}{
		"VMIDTooSmall":    {reason: "ids below 100 are reserved", edit: func(in *Inputs) { in.VMID = "99" }, field: "vmid", msg: "vmid 99 is not a Proxmox VM id (100-999999999)"},
		"VMIDTooLarge":    {reason: "ten digits", edit: func(in *Inputs) { in.VMID = "1000000000" }, field: "vmid", msg: "vmid 1000000000 is not a Proxmox VM id (100-999999999)"},
		"VMIDLeadingZero": {reason: "not a canonical number", edit: func(in *Inputs) { in.VMID = "0100" }, field: "vmid", msg: "vmid 0100 is not a Proxmox VM id"},
		"VMIDNewline":     {reason: "a second line would be a second command", edit: func(in *Inputs) { in.VMID = "100\nreboot" }, field: "vmid", msg: `vmid "100\nreboot" is not a Proxmox VM id`},
		"Storage":         {reason: "storage ids start with a letter", edit: func(in *Inputs) { in.Storage = "1st" }, field: "storage", msg: "storage 1st is not a Proxmox storage id"},
		"StorageQuote":    {reason: "no shell characters", edit: func(in *Inputs) { in.Storage = "a'b" }, field: "storage", msg: "storage a'b is not a Proxmox storage id"},
		"VersionNoV":      {reason: "the v is part of the version", edit: func(in *Inputs) { in.TalosVersion = "1.13.6" }, field: "version", msg: "Talos version '1.13.6' is not vMAJOR.MINOR.PATCH with an optional pre-release suffix"},
		"VersionMinor":    {reason: "a minor alone is not a release", edit: func(in *Inputs) { in.TalosVersion = "v1.13" }, field: "version", msg: "Talos version 'v1.13' is not vMAJOR.MINOR.PATCH"},
		"VersionUpperPre": {reason: "pre-release suffixes are lower-case", edit: func(in *Inputs) { in.TalosVersion = "v1.14.0-Beta" }, field: "version", msg: "Talos version 'v1.14.0-Beta' is not"},
		"SchematicUpper":  {reason: "IDs are lower-case hex", edit: func(in *Inputs) { in.SchematicID = strings.ToUpper(idGuestAgent) }, field: "schematic", msg: "schematic '" + strings.ToUpper(idGuestAgent) + "' is not an Image Factory schematic id"},
		"SchematicShort":  {reason: "IDs are 64 characters", edit: func(in *Inputs) { in.SchematicID = "ce4c9805" }, field: "schematic", msg: "schematic 'ce4c9805' is not an Image Factory schematic id"},
		"FactoryQuery":    {reason: "no query strings", edit: func(in *Inputs) { in.FactoryURL = "https://f.example/?x=1" }, field: "factoryURL", msg: "factory URL 'https://f.example/?x=1' is not a plain http(s) URL"},
		"FactoryUser":     {reason: "no credentials in the URL", edit: func(in *Inputs) { in.FactoryURL = "https://u:p@f.example" }, field: "factoryURL", msg: "factory URL 'https://u:p@f.example' is not a plain http(s) URL"},
		"FactoryScheme":   {reason: "http or https only", edit: func(in *Inputs) { in.FactoryURL = "ftp://f.example" }, field: "factoryURL", msg: "factory URL 'ftp://f.example' is not a plain http(s) URL"},
		"DiskUnit":        {reason: "whole gibibytes only", edit: func(in *Inputs) { in.DiskSize = "20Mi" }, field: "diskSize", msg: "disk size 20Mi is not a whole number of gibibytes such as 20Gi (PVE writes it 20G)"},
		"DiskDecimal":     {reason: "a decimal unit is not PVE's", edit: func(in *Inputs) { in.DiskSize = "20GB" }, field: "diskSize", msg: "disk size 20GB is not a whole number of gibibytes"},
		"DiskZero":        {reason: "no zero disk", edit: func(in *Inputs) { in.DiskSize = "0G" }, field: "diskSize", msg: "disk size 0G is not a whole number of gibibytes such as 20Gi (PVE writes it 20G)"},
		"CPU":             {reason: "CPU models have no spaces", edit: func(in *Inputs) { in.CPU = "kvm64 -x" }, field: "cpu", msg: `cpu type "kvm64 -x" is not a Proxmox CPU model name`},
		"Tags":            {reason: "tags follow ParseTags", edit: func(in *Inputs) { in.Tags = "a b" }, field: "tags", msg: `not a valid Proxmox tag: "a b"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := goodInputs()
			tc.edit(&in)
			_, err := NewSpec(in)
			var ie *InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("%s: got %v, want an *InvalidError", tc.reason, err)
			}
			if ie.Field != tc.field || !strings.HasPrefix(ie.Error(), tc.msg) {
				t.Errorf("%s: got field %s message %q, want field %s message starting %q", tc.reason, ie.Field, ie.Error(), tc.field, tc.msg)
			}
		})
	}
}

func TestNewSpecReportsEveryProblem(t *testing.T) {
	_, err := NewSpec(Inputs{VMID: "1", Storage: "", TalosVersion: "latest", SchematicID: "x", DiskSize: "1T"})
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ie *InvalidError
		if errors.As(e, &ie) {
			fields = append(fields, ie.Field)
		}
	}
	want := []string{"vmid", "storage", "version", "schematic", "diskSize"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("every bad input is reported once, and no tag error derives from a bad version: -want +got:\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	good, err := NewSpec(goodInputs())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		edit   func(*Spec)
		msg    string
	}{
		"VMIDRange":     {reason: "a hand-built Spec is range-checked", edit: func(s *Spec) { s.VMID = 42 }, msg: "vmid 42 is not a Proxmox VM id"},
		"TrailingSlash": {reason: "NewSpec strips it, a hand-built Spec must not carry it", edit: func(s *Spec) { s.FactoryURL += "/" }, msg: "is not a plain http(s) URL (drop the trailing /)"},
		"UnsortedTags":  {reason: "tags must already be the normalised set", edit: func(s *Spec) { s.Tags = []string{"talos", "cozystack"} }, msg: "template tags are not normalised"},
		"UpperTags":     {reason: "upper case is not normalised", edit: func(s *Spec) { s.Tags = []string{"Talos"} }, msg: "template tags are not normalised"},
		"NoTags":        {reason: "a template needs a tag", edit: func(s *Spec) { s.Tags = nil }, msg: "the template needs at least one tag"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := good
			s.Tags = append([]string(nil), good.Tags...)
			tc.edit(&s)
			err := s.Validate()
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s: got %v, want %q", tc.reason, err, tc.msg)
			}
		})
	}
}

func TestNameAndImageURL(t *testing.T) {
	s, err := NewSpec(goodInputs())
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "talos-v1.13.6-ce4c9805" {
		t.Errorf("Name() = %q", s.Name())
	}
	want := "https://factory.talos.dev/image/" + idGuestAgent + "/v1.13.6/nocloud-amd64.raw.xz"
	if s.ImageURL() != want {
		t.Errorf("ImageURL() = %q, want %q", s.ImageURL(), want)
	}
}

// FuzzNewSpec: any input either fails with *InvalidErrors only, or gives a
// Spec that validates and whose every value is free of shell metacharacters.
func FuzzNewSpec(f *testing.F) {
	f.Add("9000", "local-lvm", "v1.13.6", idGuestAgent, "", "", "", "")
	f.Add("100", "a", "v0.0.0-a.b", idEmpty, "http://h:1/p/", "1G", "+", "x,Y,,z")
	f.Add("9000\n", "s;rm", "v1.2.3\n", idEmpty, "https://h/$(x)", "20G\n", "a b", "a\nb")
	f.Fuzz(func(t *testing.T, vmid, storage, version, schematic, factory, disk, cpu, tags string) {
		s, err := NewSpec(Inputs{VMID: vmid, Storage: storage, TalosVersion: version, SchematicID: schematic,
			FactoryURL: factory, DiskSize: disk, CPU: cpu, Tags: tags})
		if err != nil {
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var ie *InvalidError
				if !errors.As(e, &ie) {
					t.Fatalf("not an *InvalidError: %v", e)
				}
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("NewSpec accepted what Validate refuses: %v", err)
		}
		for _, v := range append([]string{s.Storage, s.TalosVersion, s.SchematicID, s.FactoryURL, s.DiskSize, s.CPU}, s.Tags...) {
			if strings.ContainsAny(v, "'\"`$\\;&|<>(){}* \t\n\r") {
				t.Fatalf("value %q would need more than single quotes", v)
			}
		}
		if _, err := Program(s); err != nil {
			t.Fatalf("a valid Spec must render: %v", err)
		}
	})
}

// TestDiskSizeQuantity: Kubernetes quantities of whole GiB or TiB are
// written as PVE's sizes, whose G is a gibibyte; PVE's own form stays.
func TestDiskSizeQuantity(t *testing.T) {
	for in, want := range map[string]string{"20Gi": "20G", "1Ti": "1024G", "32G": "32G", "": DefaultDiskSize} {
		i := goodInputs()
		i.DiskSize = in
		s, err := NewSpec(i)
		if err != nil || s.DiskSize != want {
			t.Errorf("disk size %q: %q, %v; want %q", in, s.DiskSize, err, want)
		}
	}
}
