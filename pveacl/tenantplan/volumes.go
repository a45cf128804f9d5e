package tenantplan

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// ForeignVolume is a volume on a tenant's dedicated storage that belongs to
// a guest outside the tenant: another tenant's VM, or one in no tenant pool
// (a template's base disk, a platform guest). The tenant's CSI token holds
// Datastore.Allocate there, so it could delete or read the volume.
type ForeignVolume struct {
	Tenant  string `json:"tenant"`
	Storage string `json:"storage"`
	VolID   string `json:"volid"`
	VMID    int    `json:"vmid"`
	// Owner says whose the guest is ("tenant beta", "pool legacy", "no pool").
	Owner string `json:"owner"`
}

func (f ForeignVolume) String() string {
	return fmt.Sprintf("%s on storage %s of tenant %s belongs to VM %d (%s)", f.VolID, f.Storage, f.Tenant, f.VMID, f.Owner)
}

// csiVolume matches the volume ids of the Proxmox CSI driver:
// vm-<controllerVmID>-pvc-<uuid>, after the storage and any directory; a
// VMID has at most nine digits, as in PVE.
var csiVolume = regexp.MustCompile(`^[^:]+:(?:[^/]*/)*vm-([1-9][0-9]{0,8})-pvc-[0-9a-fA-F-]+(?:\.[a-z0-9]+)?$`)

// CSIVolumeVMID returns the controllerVmID in the id of a volume the
// Proxmox CSI driver made (PVE reports it as the volume's vmid), false
// for any other volume.
func CSIVolumeVMID(volid string) (int, bool) {
	m := csiVolume.FindStringSubmatch(volid)
	if m == nil {
		return 0, false
	}
	id, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, false
	}
	return id, true
}

// csiOfNoGuest reports whether v is a CSI driver's volume whose
// controllerVmID is no guest's.
func csiOfNoGuest(v pveacl.Volume, observed *pveacl.Config) bool {
	id, csi := CSIVolumeVMID(v.VolID)
	return csi && !slices.Contains(observed.Resources.VMs, id)
}

// ForeignVolumes checks storage ownership against the cluster's contents
// (observed.Resources.Volumes): every volume owned by a guest on a tenant's
// storage must belong to a guest of that tenant, one its specification
// lists or one in its pool (or a pool nested in it). A volume of the CSI
// driver (vm-<controllerVmID>-pvc-<uuid>) whose id is no guest's is the
// tenant's own: its CSI token made it there.
func ForeignVolumes(desired *Tenants, observed *pveacl.Config) []ForeignVolume {
	spec := desired.Defaulted()
	owner := map[int]string{}
	for name, p := range observed.Pools {
		for _, vm := range p.VMs {
			owner[vm] = "pool " + name
		}
	}
	tenantOfVM := map[int]string{}
	for _, t := range spec.Tenants {
		for _, vm := range t.VMs {
			tenantOfVM[vm] = t.Name
		}
		for name, p := range observed.Pools {
			if name == t.Pool || strings.HasPrefix(name, t.Pool+"/") {
				for _, vm := range p.VMs {
					tenantOfVM[vm] = t.Name
				}
			}
		}
	}
	var out []ForeignVolume
	for _, t := range spec.Tenants {
		for _, v := range observed.Resources.Volumes {
			if v.VMID == 0 || csiOfNoGuest(v, observed) || !slices.Contains(t.AllStorages(), v.Storage) || tenantOfVM[v.VMID] == t.Name {
				continue
			}
			who := "no pool"
			if o, ok := tenantOfVM[v.VMID]; ok {
				who = "tenant " + o
			} else if o, ok := owner[v.VMID]; ok {
				who = o
			}
			out = append(out, ForeignVolume{Tenant: t.Name, Storage: v.Storage, VolID: v.VolID, VMID: v.VMID, Owner: who})
		}
	}
	return out
}
