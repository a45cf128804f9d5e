package pvefake

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var (
	driveKeyRe = regexp.MustCompile(`^(ide[0-3]|sata[0-5]|scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|efidisk0|tpmstate0)$`)
	unusedRe   = regexp.MustCompile(`^unused\d+$`)
	// newDiskRe is NEW_DISK_RE: [STORAGE:]SIZE_IN_GiB.
	newDiskRe = regexp.MustCompile(`^(([^/:\s]+):)?(\d+(\.\d+)?)$`)
	sizeRe    = regexp.MustCompile(`^(\+)?(\d+(\.\d+)?)([KMGT])?$`)
)

func isDriveKey(k string) bool { return driveKeyRe.MatchString(k) }

// drive is a disk option value: the volume and its options.
type drive struct {
	file string
	opts map[string]string
}

func parseDrive(v string) (drive, error) {
	d := drive{opts: map[string]string{}}
	for i, part := range strings.Split(v, ",") {
		k, val, hasEq := strings.Cut(part, "=")
		switch {
		case i == 0 && !hasEq:
			d.file = part
		case hasEq && k == "file":
			d.file = val
		case hasEq && k != "":
			d.opts[k] = val
		default:
			return drive{}, fmt.Errorf("unable to parse drive options '%s'", v)
		}
	}
	if d.file == "" || strings.ContainsAny(d.file, "=,") {
		return drive{}, fmt.Errorf("unable to parse drive options '%s': missing volume", v)
	}
	return d, nil
}

// String prints the drive as PVE does: the volume, then the options sorted.
func (d drive) String() string {
	keys := make([]string, 0, len(d.opts))
	for k := range d.opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{d.file}
	for _, k := range keys {
		parts = append(parts, k+"="+d.opts[k])
	}
	return strings.Join(parts, ",")
}

func (d drive) cdrom() bool { return d.opts["media"] == "cdrom" }

// cloudinit reports whether the drive is a cloud-init disk.
func (d drive) cloudinit() bool {
	return strings.HasSuffix(d.file, ":cloudinit") || strings.Contains(d.file, "-cloudinit")
}

// formatSize prints a byte count the way PVE writes size= (largest exact unit).
func formatSize(b uint64) string {
	switch {
	case b != 0 && b%(1<<40) == 0:
		return strconv.FormatUint(b>>40, 10) + "T"
	case b != 0 && b%(1<<30) == 0:
		return strconv.FormatUint(b>>30, 10) + "G"
	case b != 0 && b%(1<<20) == 0:
		return strconv.FormatUint(b>>20, 10) + "M"
	case b != 0 && b%(1<<10) == 0:
		return strconv.FormatUint(b>>10, 10) + "K"
	}
	return strconv.FormatUint(b, 10)
}

// parseSize reads a size with an optional K/M/G/T unit (default bytes) and
// reports whether it is relative (+N).
func parseSize(s string) (uint64, bool, error) {
	m := sizeRe.FindStringSubmatch(s)
	if m == nil {
		return 0, false, fmt.Errorf("value does not look like a valid disk size: %s", s)
	}
	f, _ := strconv.ParseFloat(m[2], 64)
	mult := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m[4]]
	return uint64(math.Floor(f * mult)), m[1] == "+", nil
}

// volumeName returns the name of disk n of a guest on a storage: block
// storages name it vm-<id>-disk-<n>, file storages <id>/vm-<id>-disk-<n>.<fmt>.
func volumeName(st *storage, prefix string, vmid, n int, format string) string {
	if st.fileBased() {
		return fmt.Sprintf("%d/%s-%d-disk-%d.%s", vmid, prefix, vmid, n, format)
	}
	return fmt.Sprintf("%s-%d-disk-%d", prefix, vmid, n)
}

func defaultFormat(st *storage) string {
	if st.fileBased() {
		return "qcow2"
	}
	return "raw"
}

// Sizes of the disks whose size the request does not choose: the OVMF vars
// files qemu-server copies into an efidisk0 (OVMF_VARS_4M*.fd for
// efitype=4m, OVMF_VARS.fd for the default 2m) and its fixed TPM state size.
const (
	ovmfVars4M   = 540672 // 528K
	ovmfVars2M   = 131072 // 128K
	tpmStateSize = 4 << 20
)

// fixedDiskSize returns the size qemu-server gives a new efidisk0 or
// tpmstate0 whatever SIZE the request names (x86_64 guests).
func fixedDiskSize(key string, opts map[string]string) (uint64, bool) {
	switch key {
	case "efidisk0":
		if opts["efitype"] == "4m" {
			return ovmfVars4M, true
		}
		return ovmfVars2M, true
	case "tpmstate0":
		return tpmStateSize, true
	}
	return 0, false
}

// allocated is the size a storage gives a volume of size bytes: LVM rounds
// up to its 4 MiB extents, ZFS zvols (the plugin) and RBD images to 1 MiB;
// files keep the size.
func (s *storage) allocated(size uint64) uint64 {
	unit := uint64(1)
	switch s.typ {
	case "lvm", "lvmthin":
		unit = 4 << 20
	case "zfspool", "rbd":
		unit = 1 << 20
	}
	return (size + unit - 1) / unit * unit
}

// allocDisk creates an image volume for a guest on a storage node and
// returns its volid.
func (s *state) allocDisk(node string, st *storage, vmid int, size uint64, format string) string {
	if format == "" || !st.fileBased() {
		format = defaultFormat(st)
	}
	for n := 0; ; n++ {
		volid := st.id + ":" + volumeName(st, "vm", vmid, n, format)
		if _, taken := s.volume(node, volid); !taken && !s.volNameUsed(st, vmid, n) {
			s.putVolume(node, &volume{volid: volid, storage: st.id, vtype: "images", format: format, owner: vmid,
				size: size, ctime: s.now().Unix()})
			return volid
		}
	}
}

// volNameUsed reports whether disk n of vmid exists on the storage under
// any prefix (vm- or base-), as the plugins' find_free_diskname does.
func (s *state) volNameUsed(st *storage, vmid, n int) bool {
	want := fmt.Sprintf("-%d-disk-%d", vmid, n)
	for k, v := range s.volumes {
		if v.storage == st.id && strings.Contains(k.volid, want) {
			return true
		}
	}
	return false
}

// splitBase splits an image name into the base volume a linked clone
// stands on and its own part: "base-9000-disk-0/vm-101-disk-0" on ZFS or
// RBD, "9000/base-9000-disk-0.qcow2/101/vm-101-disk-0.qcow2" on a file
// storage. LVM-thin names carry no base (the thin snapshot keeps it).
func splitBase(st *storage, name string) (base, own string) {
	parts := strings.Split(name, "/")
	switch {
	case st.fileBased() && len(parts) == 4:
		return parts[0] + "/" + parts[1], parts[2] + "/" + parts[3]
	case !st.fileBased() && len(parts) == 2:
		return parts[0], parts[1]
	}
	return "", name
}

// ownFile is the file name of an image's own part.
func ownFile(own string) string { return own[strings.LastIndexByte(own, '/')+1:] }

// parseVolid splits "storage:name".
func parseVolid(volid string) (string, string, bool) {
	sid, name, ok := strings.Cut(volid, ":")
	return sid, name, ok && sid != "" && name != ""
}
