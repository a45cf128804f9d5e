package liveacl_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestLeftoverCSIVolumes: alpha's storage holds the CSI volumes of a
// cluster that exists (controllerVmID 512345) and of one that was deleted
// (623456), next to a worker's disk; beta's holds its cluster's (734567).
// Read from the fake's storage contents, the audit names only the deleted
// cluster's volume (LeftoverVolume) when told which clusters exist; told
// that the deleted one still exists (the control), it names none. The CSI
// volumes are no guest's, so apply does not refuse them as foreign.
func TestLeftoverCSIVolumes(t *testing.T) {
	srv := cluster(t)
	must(t, srv.AddPool("alpha", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Pool: "alpha", Disks: map[string]string{"scsi0": "alpha-disks:2"}}))
	for _, v := range []pvefake.VolumeSpec{
		{Storage: "alpha-disks", Content: "images", Name: "vm-512345-pvc-0b7e6a52-3f1d-4c6e-9d8a-1e2f3a4b5c6d", Format: "raw", Size: 1 << 30},
		{Storage: "alpha-disks", Content: "images", Name: "vm-623456-pvc-7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f", Format: "raw", Size: 5 << 30},
		{Storage: "beta-disks", Content: "images", Name: "vm-734567-pvc-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", Format: "raw", Size: 1 << 30},
	} {
		_, err := srv.AddVolume(v)
		must(t, err)
	}
	spec := mustTenants(t, twoTenants)
	_, err := liveacl.Apply(ctx, srv.Client(), spec, liveacl.WithSecretSink(memSink{}))
	must(t, err)
	cfg, err := liveacl.Read(ctx, srv.Client())
	must(t, err)

	live := []audit.Cluster{{Name: "tenant-alpha/kubernetes-a", ControllerVMID: 512345}, {Name: "tenant-beta/kubernetes-b", ControllerVMID: 734567}}
	cases := map[string]struct {
		clusters []audit.Cluster
		want     []string
	}{
		"Deleted":  {clusters: live, want: []string{"alpha-disks:vm-623456-pvc-7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"}},
		"AllLive":  {clusters: append(live, audit.Cluster{Name: "tenant-alpha/kubernetes-old", ControllerVMID: 623456})},
		"NotAsked": {clusters: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rep, err := audit.RunWith(cfg, spec, audit.Options{Clusters: tc.clusters})
			must(t, err)
			var got []string
			for _, f := range rep.Findings {
				switch f.Code {
				case audit.CodeLeftoverVolume:
					volid := strings.Fields(f.Message)[0]
					got = append(got, volid)
					if f.Tenant != "alpha" || f.Severity != audit.SeverityWarning || !strings.Contains(f.Remedy, "pvesm free "+volid) {
						t.Errorf("finding %+v: want alpha's warning with the pvesm free command", f)
					}
				case audit.CodeForeignVolume:
					t.Errorf("a CSI volume is no guest's volume: %s", f.Message)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("leftover volumes (-want +got):\n%s", diff)
			}
		})
	}
}
