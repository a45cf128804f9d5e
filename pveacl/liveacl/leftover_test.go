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
// (623456), next to a worker's disk; beta's holds its cluster's (734567)
// and one of a driver before v0.20 (vm-9999-pvc-*, which names no
// cluster: it is the tenant's while a cluster of the tenant's namespace
// exists).
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
		// a CSI driver before v0.20 owns every volume by 9999
		{Storage: "beta-disks", Content: "images", Name: "vm-9999-pvc-2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e", Format: "raw", Size: 1 << 30},
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
		// beta's cluster gone: its volume by controllerVmID, and the one
		// of a driver before v0.20, which names no cluster but sits on
		// the storage of a tenant with no cluster left
		"BetaDeleted": {clusters: []audit.Cluster{live[0], {Name: "tenant-alpha/kubernetes-old", ControllerVMID: 623456}},
			want: []string{"beta-disks:vm-734567-pvc-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "beta-disks:vm-9999-pvc-2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"}},
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
					tenant, _, _ := strings.Cut(volid, "-")
					if f.Tenant != tenant || f.Severity != audit.SeverityWarning || !strings.Contains(f.Remedy, "pvesm free "+volid) {
						t.Errorf("finding %+v: want %s's warning with the pvesm free command", f, tenant)
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
