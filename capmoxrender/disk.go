package capmoxrender

import (
	"context"
	"fmt"
	"math/big"
	"regexp"
	"slices"
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
		return 0, fmt.Errorf("disk quantity %q is more than %d GiB, the largest sizeGb capmox accepts", q, maxInt32)
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
		return nil, fmt.Errorf("disk quantity %q must be above zero", q)
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
	return nil
}

func checkTemplateDisk(s NodesSpec, size int32, o Options) error {
	t := s.Proxmox.TemplateDiskSize
	want := string(*s.DiskSize)
	if t == nil || *t == "" {
		o.warn(fmt.Sprintf("diskSize %s: the template's disk size is unknown, so a template disk larger than %d GiB fails each clone's resize (Proxmox cannot shrink a disk); read it with `pxsubstrate template select` and write it as proxmox.templateDiskSize", want, size))
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

// planVMIDRange writes the tenant's VM id range (Options.VMIDRanges, by
// proxmox.pool) so capmox clones the pool's VMs inside it; with ranges
// given but none for the pool, Options.Warn says so.
func planVMIDRange(p *nodesPlan, _ NodesSpec, o Options) error {
	r, ok := o.VMIDRanges[p.pool]
	if !ok {
		if o.VMIDRanges != nil {
			o.warn(fmt.Sprintf("proxmox.pool %q is no tenant's pool with a vmIDRange, so capmox picks this pool's VM ids anywhere: give the tenant whose pool it is a vmIDRange, or correct proxmox.pool", p.pool))
		}
		return nil
	}
	if r.Start < MinVMID || r.End > MaxVMID || r.End < r.Start {
		return refuse("vmIDRange", "the VM id range %d-%d of Proxmox pool %q is not within %d-%d with its end at or above its start: fix the tenant's vmIDRange", r.Start, r.End, p.pool, MinVMID, MaxVMID)
	}
	p.vmIDRange = &r
	return nil
}

// planAllowedNodes checks that proxmox.allowedNodes narrows the cluster's
// list (capmox takes a machine's list instead of the cluster's, so a node
// outside it would escape the cluster's placement). Without the cluster's
// object the list is rendered and Options.Warn says it was not checked.
func planAllowedNodes(ctx context.Context, o Options, p nodesPlan, nodes []string) ([]string, error) {
	if len(nodes) == 0 {
		return nil, nil
	}
	seen := map[string]bool{}
	for i, n := range nodes {
		f := fmt.Sprintf("proxmox.allowedNodes[%d]", i)
		if !nodeName.MatchString(n) {
			return nil, refuse(f, "%s is %q, which is not a Proxmox node name (letters, digits and hyphens)", f, n)
		}
		if seen[n] {
			return nil, refuse(f, "%s is %q, which is listed twice: list each node once", f, n)
		}
		seen[n] = true
	}
	if o.Clusters == nil {
		o.warn(fmt.Sprintf("proxmox.allowedNodes %v: the cluster's allowedNodes are unknown (pass the Kubernetes object %s/%s with --lookup), so the pool's nodes were not checked against them", nodes, p.ns, p.cluster))
		return slices.Clone(nodes), nil
	}
	cluster, found, err := o.Clusters.AllowedNodes(ctx, p.ns, p.cluster)
	if err != nil {
		return nil, fmt.Errorf("cannot look up Kubernetes %s/%s: %w: %w", p.ns, p.cluster, ErrLookup, err)
	}
	if !found {
		o.warn(fmt.Sprintf("proxmox.allowedNodes %v: the lookup holds no Kubernetes %s/%s, so the pool's nodes were not checked against the cluster's allowedNodes", nodes, p.ns, p.cluster))
	}
	for i, n := range nodes {
		if len(cluster) > 0 && !slices.Contains(cluster, n) {
			return nil, refuse(fmt.Sprintf("proxmox.allowedNodes[%d]", i), "proxmox.allowedNodes[%d] is %q, which is not in the cluster's proxmox.allowedNodes %v: a pool may only narrow its cluster's nodes; pick from those, or add the node to the cluster first", i, n, cluster)
		}
	}
	return slices.Clone(nodes), nil
}

// nodeName is a Proxmox node name (pve-node: a DNS label).
var nodeName = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)
