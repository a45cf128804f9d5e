package capmoxrender

import (
	"fmt"
	"math/big"
)

const gib = 1 << 30

// BootDisk is the device capmox resizes: the virtio-scsi disk a Talos
// template boots from and installs to (/dev/sda).
const BootDisk = "scsi0"

// MinBootVolumeGiB is the smallest disks.bootVolume.sizeGb both capmox
// schemas accept.
const MinBootVolumeGiB = 5

// DiskGiB converts a disk quantity to whole GiB, rounding up (capmox
// writes sizeGb as <n>G, which Proxmox reads as GiB): 50Gi -> 50,
// 50G -> 47, 20Gi+1 -> 21. Zero, negative and out-of-range values are
// errors naming the value.
func DiskGiB(q string) (int32, error) {
	bytes, err := diskBytes(q)
	if err != nil {
		return 0, err
	}
	g := ceilDiv(bytes, big.NewInt(gib))
	if !g.IsInt64() || g.Int64() > maxInt32 {
		return 0, errorf("disk quantity %q is more than %d GiB, the largest sizeGb capmox accepts", q, maxInt32)
	}
	return int32(g.Int64()), nil
}

// diskBytes is the size in bytes, rounded up to a whole byte.
func diskBytes(q string) (*big.Int, error) {
	v, err := parseQuantity("disk", q)
	if err != nil {
		return nil, err
	}
	if v.Sign() <= 0 {
		return nil, errorf("disk quantity %q must be above zero", q)
	}
	return ceilToInt(v.AsDec().UnscaledBig(), int32(v.AsDec().Scale()), 1), nil
}

// planDisk turns diskSize into the boot volume capmox grows the clone to.
// A size below the template's disk (proxmox.templateDiskSize) is refused
// with both sizes, since Proxmox cannot shrink a disk; when the template's
// size is unknown, Options.Warn says so and the pool still renders.
func planDisk(p *nodesPlan, s NodesSpec, o Options) error {
	if s.DiskSize == nil || *s.DiskSize == "" {
		if t := s.Proxmox.TemplateDiskSize; t != nil && *t != "" {
			if _, err := diskBytes(string(*t)); err != nil {
				return refuse("proxmox.templateDiskSize", "proxmox.templateDiskSize: %v", err)
			}
			p.diskCapacity = string(*t)
		}
		return nil
	}
	want := string(*s.DiskSize)
	size, err := DiskGiB(want)
	if err != nil {
		return refuse("diskSize", "diskSize: %v", err)
	}
	if size < MinBootVolumeGiB {
		return refuse("diskSize", "diskSize %s is %d GiB, below the %d GiB capmox accepts for disks.bootVolume.sizeGb: ask for at least %dGi", want, size, MinBootVolumeGiB, MinBootVolumeGiB)
	}
	if err := checkTemplateDisk(s, size, o); err != nil {
		return err
	}
	p.bootGiB = size
	p.diskCapacity = fmt.Sprintf("%dGi", size)
	return nil
}

func checkTemplateDisk(s NodesSpec, size int32, o Options) error {
	t := s.Proxmox.TemplateDiskSize
	want := string(*s.DiskSize)
	if t == nil || *t == "" {
		o.warnf("diskSize %s: the template's disk size is unknown, so a template disk larger than %d GiB fails each clone's resize (Proxmox cannot shrink a disk); read it with `pxsubstrate template select` and write it as proxmox.templateDiskSize", want, size)
		return nil
	}
	tb, err := diskBytes(string(*t))
	if err != nil {
		return refuse("proxmox.templateDiskSize", "proxmox.templateDiskSize: %v", err)
	}
	rendered := new(big.Int).Mul(big.NewInt(int64(size)), big.NewInt(gib))
	if rendered.Cmp(tb) < 0 {
		return refuse("diskSize", "diskSize %s (%d GiB) is smaller than the template's disk, %s (proxmox.templateDiskSize): capmox can only grow a cloned disk, and Proxmox refuses to shrink one; ask for at least %s, or clone a template with a smaller disk", want, size, *t, *t)
	}
	return nil
}
