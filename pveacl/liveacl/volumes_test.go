package liveacl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestDedicatedStorageIsChecked: alpha is given local-lvm, where the
// template's base disk (VM 9000) and beta's VM disk (200) live. The audit
// reports both volumes from the storage's contents (local-lvm is not
// declared shared) and apply refuses before any change. The control gives
// alpha a storage holding only its own VM's disk.
func TestDedicatedStorageIsChecked(t *testing.T) {
	srv := cluster(t)
	must(t, srv.AddPool("beta", "", nil, nil))
	must(t, srv.AddPool("alpha", "", nil, nil))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 9000, Template: true, Disks: map[string]string{"scsi0": "local-lvm:2"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 200, Pool: "beta", Disks: map[string]string{"scsi0": "local-lvm:2"}}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Pool: "alpha", Disks: map[string]string{"scsi0": "alpha-disks:2"}}))
	for name, tc := range map[string]struct {
		storage string
		want    []string
	}{
		"Foreign": {storage: "local-lvm", want: []string{"local-lvm:base-9000-disk-0 on storage local-lvm of tenant alpha belongs to VM 9000 (no pool)",
			"local-lvm:vm-200-disk-0 on storage local-lvm of tenant alpha belongs to VM 200 (tenant beta)"}},
		"Own": {storage: "alpha-disks"},
	} {
		t.Run(name, func(t *testing.T) {
			spec := mustTenants(t, "tenants:\n- {name: alpha, storage: "+tc.storage+"}\n- {name: beta, storage: beta-disks}\n")
			srv.ResetRequests()
			_, err := liveacl.Apply(ctx, srv.Client(), spec, liveacl.WithSecretSink(memSink{}))
			cfg, rerr := liveacl.Read(ctx, srv.Client())
			must(t, rerr)
			rep, aerr := audit.Run(cfg, spec)
			must(t, aerr)
			var found []string
			for _, f := range rep.Findings {
				if f.Code == audit.CodeForeignVolume {
					found = append(found, f.Message)
				}
			}
			if len(tc.want) == 0 {
				must(t, err)
				if len(found) != 0 {
					t.Errorf("alpha's own storage has no foreign volume: %v", found)
				}
				return
			}
			if !errors.Is(err, liveacl.ErrForeignVolumes) || len(srv.MutatingRequests()) != 0 {
				t.Errorf("apply refuses before any change: %v %v", err, srv.MutatingRequests())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) || !strings.Contains(strings.Join(found, "\n"), w) {
					t.Errorf("apply error and audit name %q:\n%v\n%v", w, err, found)
				}
			}
		})
	}
}
