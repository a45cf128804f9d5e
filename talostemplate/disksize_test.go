package talostemplate

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestBootDiskSize(t *testing.T) {
	for drive, want := range map[string]string{
		"local-lvm:base-9000-disk-1,cache=none,discard=on,size=20G,ssd=1": "20Gi",
		"tank:vm-1-disk-0,size=528K":                                      "528Ki", "x,size=1.5T": "1.5Ti", "x,size=4096": "4096", "x,size=20g": "", "x,ssd=1": "",
	} {
		got, ok := BootDiskSize(map[string]string{BootDisk: drive})
		if got != want || ok != (want != "") {
			t.Errorf("BootDiskSize(%q) = %q, %v; want %q", drive, got, ok, want)
		}
	}
}

// FuzzBootDiskSize: a size BootDiskSize reads is a Kubernetes quantity of
// exactly the bytes PVE's binary units say.
func FuzzBootDiskSize(f *testing.F) {
	for _, s := range []string{"local-lvm:vm-1-disk-0,size=20G", "x,size=1.5T,ssd=1", "x,size=4096", "x,size=", "x,size=1e3G", "size=20G"} {
		f.Add(s)
	}
	units := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
	f.Fuzz(func(t *testing.T, drive string) {
		size, ok := BootDiskSize(map[string]string{BootDisk: drive})
		if !ok {
			return
		}
		q, err := resource.ParseQuantity(size)
		if err != nil {
			t.Fatalf("BootDiskSize(%q) = %q, not a quantity: %v", drive, size, err)
		}
		var pve string
		for _, o := range strings.Split(drive, ",") {
			if v, found := strings.CutPrefix(o, "size="); found {
				pve = v
				break
			}
		}
		unit := strings.TrimLeft(pve, "0123456789.")
		n, err := strconv.ParseFloat(strings.TrimSuffix(pve, unit), 64)
		if err != nil || units[unit] == 0 {
			t.Fatalf("BootDiskSize(%q) accepted size=%q", drive, pve)
		}
		if want := n * units[unit]; math.Abs(q.AsApproximateFloat64()-want) > want*1e-9 {
			t.Fatalf("BootDiskSize(%q) = %s (%g bytes), PVE's %s is %g bytes", drive, size, q.AsApproximateFloat64(), pve, want)
		}
	})
}
