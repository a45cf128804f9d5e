package talostemplate

import (
	"context"
	"regexp"
	"strings"
)

// BootDisk is the disk capmox's disks.bootVolume grows and the template
// boots from: virtio-scsi scsi0.
const BootDisk = "scsi0"

// pveSize is the size= of a PVE drive: a number and an optional binary
// unit (K, M, G, T are KiB, MiB, GiB, TiB).
var pveSize = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?)([KMGT])?$`)

// BootDiskSize reads the size of a guest's boot disk (scsi0) from its
// configuration and writes it as a Kubernetes quantity (20G -> 20Gi), the
// form a pool's proxmox.templateDiskSize takes; ok is false without scsi0
// or a readable size.
func BootDiskSize(conf map[string]string) (size string, ok bool) {
	for _, opt := range strings.Split(conf[BootDisk], ",") {
		v, found := strings.CutPrefix(opt, "size=")
		if !found {
			continue
		}
		m := pveSize.FindStringSubmatch(v)
		if m == nil {
			return "", false
		}
		if m[3] == "" {
			return m[1], true
		}
		return m[1] + m[3] + "i", true
	}
	return "", false
}

// BootDiskSize reads the size of a template's boot disk from its
// configuration (GET /nodes/{node}/qemu/{vmid}/config, VM.Audit on it):
// the size a pool's diskSize may not go below. ok is false when the
// configuration has no scsi0 with a size.
func (l LiveResources) BootDiskSize(ctx context.Context, node string, vmid int) (size string, ok bool, err error) {
	conf, err := readConfig(ctx, l.Client, node, vmid)
	if err != nil {
		return "", false, err
	}
	size, ok = BootDiskSize(conf)
	return size, ok, nil
}
