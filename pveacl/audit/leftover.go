package audit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// Cluster is a tenant cluster that exists, by the CSI controllerVmID its
// driver names volumes after (vm-<controllerVmID>-pvc-<uuid>).
type Cluster struct {
	// Name names the cluster in messages (<namespace>/<name>).
	Name           string `json:"name"`
	ControllerVMID int    `json:"controllerVmID"`
}

// Options are the audit's optional inputs.
type Options struct {
	// Clusters are the tenant clusters that exist. Given (even empty),
	// the volumes of the Proxmox CSI driver on the tenants' storages are
	// judged by their controllerVmID: a cluster's own are fine, any other
	// is a LeftoverVolume. Nil skips that check.
	Clusters []Cluster
}

// RunWith is Run with the optional inputs.
func RunWith(cfg *pveacl.Config, spec *tenantplan.Tenants, o Options) (Report, error) {
	if spec == nil {
		return Report{}, fmt.Errorf("cannot audit: %w: no tenant specification", tenantplan.ErrInvalidSpec)
	}
	t := spec.Defaulted()
	t.Platform.PVEVersion = cfg.Version
	if err := t.Validate(); err != nil {
		return Report{}, fmt.Errorf("cannot audit: %w", err)
	}
	a := newAuditor(cfg, t)
	a.clusters = o.Clusters
	return a.run(), nil
}

// leftoverVolumes names the CSI volumes on each tenant's storages whose
// controllerVmID belongs to no existing cluster.
func (a *auditor) leftoverVolumes() {
	if a.clusters == nil {
		return
	}
	live := map[int]bool{}
	for _, c := range a.clusters {
		live[c.ControllerVMID] = true
	}
	for _, tn := range a.tenants {
		for _, v := range a.cfg.Resources.Volumes {
			id, csi := tenantplan.CSIVolumeVMID(v.VolID)
			if !csi || !slices.Contains(tn.AllStorages(), v.Storage) {
				continue
			}
			if id == LegacyCSIVMID {
				a.legacyLeftover(tn.Name, v)
				continue
			}
			if live[id] {
				continue
			}
			a.add(Finding{Severity: SeverityWarning, Code: CodeLeftoverVolume, Tenant: tn.Name, Path: pveacl.StoragePath(v.Storage),
				Message: fmt.Sprintf("%s on storage %s of tenant %s was made by the CSI driver of a cluster with controllerVmID %d, and none of the %d existing clusters has that id: its cluster was deleted and the disk left behind",
					v.VolID, v.Storage, tn.Name, id, len(a.clusters)),
				Remedy: fmt.Sprintf("keep it if its data is wanted (a cluster recreated under the same namespace and name adopts it); else pvesm free %s", v.VolID)})
		}
	}
}

// LegacyCSIVMID is the VMID the Proxmox CSI driver before v0.20 (without
// features.controllerVmID) owns every volume by: vm-9999-pvc-<uuid>.
const LegacyCSIVMID = 9999

// legacyLeftover judges a volume of a CSI driver before v0.20, whose name
// carries no cluster: it is a LeftoverVolume when no existing cluster is
// in the tenant's namespace (the tenant's name, or tenant-<name> as
// Cozystack names it).
func (a *auditor) legacyLeftover(tenant string, v pveacl.Volume) {
	for _, c := range a.clusters {
		ns, _, _ := strings.Cut(c.Name, "/")
		if ns == tenant || ns == "tenant-"+tenant {
			return
		}
	}
	a.add(Finding{Severity: SeverityWarning, Code: CodeLeftoverVolume, Tenant: tenant, Path: pveacl.StoragePath(v.Storage),
		Message: fmt.Sprintf("%s on storage %s of tenant %s was made by a CSI driver before v0.20 (every volume owned by VMID %d), and none of the %d existing clusters is in the tenant's namespace: its cluster was deleted and the disk left behind",
			v.VolID, v.Storage, tenant, LegacyCSIVMID, len(a.clusters)),
		Remedy: fmt.Sprintf("keep it if its data is wanted; else pvesm free %s", v.VolID)})
}
