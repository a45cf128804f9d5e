package tenantplan_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

func TestCSIVolumeVMID(t *testing.T) {
	cases := map[string]int{
		"alpha-disks:vm-512345-pvc-0b7e6a52-3f1d-4c6e-9d8a-1e2f3a4b5c6d":    512345,
		"nfs:512345/vm-512345-pvc-0b7e6a52-3f1d-4c6e-9d8a-1e2f3a4b5c6d.raw": 512345,
		"alpha-disks:vm-100-disk-0":                                         0,
		"alpha-disks:base-9000-disk-0/vm-100-disk-0":                        0,
		"alpha-disks:vm-0-pvc-0b7e6a52":                                     0,
		"vm-512345-pvc-0b7e6a52":                                            0,
		"iso:iso/vm-1-pvc-a.iso.txt":                                        0,
	}
	for volid, want := range cases {
		got, ok := tenantplan.CSIVolumeVMID(volid)
		if got != want || ok != (want != 0) {
			t.Errorf("CSIVolumeVMID(%q) = %d, %t; want %d", volid, got, ok, want)
		}
	}
}

// FuzzCSIVolumeVMID: a volume id is the CSI driver's exactly when it
// names vm-<id>-pvc- with the id returned, after a storage prefix.
func FuzzCSIVolumeVMID(f *testing.F) {
	for _, s := range []string{"alpha-disks:vm-512345-pvc-0b7e6a52-3f1d-4c6e-9d8a-1e2f3a4b5c6d", "nfs:1/vm-1-pvc-a.raw", "local:vm-1-disk-0", ":vm-1-pvc-", "x:vm-99999999999999999999-pvc-a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, volid string) {
		id, ok := tenantplan.CSIVolumeVMID(volid)
		if !ok {
			if id != 0 {
				t.Fatalf("CSIVolumeVMID(%q) = %d without a match", volid, id)
			}
			return
		}
		if id <= 0 || !strings.Contains(volid, fmt.Sprintf("vm-%d-pvc-", id)) || !strings.Contains(volid, ":") {
			t.Fatalf("CSIVolumeVMID(%q) = %d", volid, id)
		}
	})
}
