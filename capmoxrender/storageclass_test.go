package capmoxrender_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// TestStorageClassNames: a StorageClass name that is not a DNS-1123
// subdomain is refused saying that rule, and a repeated name is refused
// naming the class that has it first; the control, two distinct valid
// names, renders.
func TestStorageClassNames(t *testing.T) {
	const rule = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
	cases := map[string]struct {
		names []string
		field string
		want  string
	}{
		"Control": {names: []string{"proxmox", "proxmox-fast"}},
		"Invalid": {names: []string{"proxmox", "Bad_Name!"}, field: "proxmox.csi.storageClasses[1].name",
			want: `proxmox.csi.storageClasses[1].name "Bad_Name!" is not a StorageClass name: it must be a DNS-1123 subdomain, ` + rule},
		"Repeated": {names: []string{"proxmox", "fast", "proxmox"}, field: "proxmox.csi.storageClasses[2].name",
			want: `proxmox.csi.storageClasses[2].name "proxmox" is also the name of proxmox.csi.storageClasses[0]: each StorageClass needs a name of its own`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			k := validCluster()
			k.Spec.Proxmox.CSI.StorageClasses = nil
			for _, n := range tc.names {
				k.Spec.Proxmox.CSI.StorageClasses = append(k.Spec.Proxmox.CSI.StorageClasses, capmoxrender.StorageClass{Name: n, Storage: "vm-disks1"})
			}
			_, err := capmoxrender.RenderCluster(context.Background(), k, capmoxrender.Options{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("the control: %v", err)
				}
				return
			}
			var r *capmoxrender.RefusalError
			if !errors.As(err, &r) || r.Field != tc.field || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
				t.Errorf("got %v (field %q), want a refusal of %s beginning %q", err, fieldOf(r), tc.field, tc.want)
			}
		})
	}
}

func fieldOf(r *capmoxrender.RefusalError) string {
	if r == nil {
		return ""
	}
	return r.Field
}
