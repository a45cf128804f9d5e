package pvefake

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

func set(keys ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// The option groups of qemu-server's check_vm_modify_config_perm.
var (
	cpuOptions     = set("cores", "cpu", "runningcpu", "cpulimit", "cpuunits", "numa", "smp", "sockets", "vcpus")
	memoryOptions  = set("memory", "balloon", "shares", "allow-ksm")
	hwtypeOptions  = set("acpi", "hotplug", "kvm", "machine", "runningmachine", "scsihw", "smbios1", "tablet", "vga", "watchdog", "audio0", "rng0")
	generalOptions = set("agent", "autostart", "bios", "description", "keyboard", "localtime", "migrate_downtime", "migrate_speed",
		"name", "onboot", "ostype", "protection", "reboot", "startdate", "startup", "tdf", "template")
	powerOptions     = set("freeze")
	diskOptions      = set("boot", "bootdisk", "vmstatestorage")
	cloudinitOptions = set("cicustom", "cipassword", "citype", "ciuser", "ciupgrade", "nameserver", "searchdomain", "sshkeys")
	// rootOptions exist but only root@pam may set them.
	rootOptions = set("args", "hookscript", "vmgenid", "meta", "lock", "hugepages", "keephugepages", "affinity")
	indexedRe   = regexp.MustCompile(`^(net|ipconfig|numa|serial|usb|hostpci|virtiofs|parallel)\d+$`)
	deviceRe    = regexp.MustCompile(`^(serial|usb|hostpci|virtiofs)\d+$`)
)

// vmConfigPerms are the privileges of which PUT/POST config needs one.
var vmConfigPerms = []string{"VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory",
	"VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"}

// boolOptions and intOptions are sent as JSON numbers by GET config.
var (
	boolOptions = set("template", "autostart", "tablet", "kvm", "protection", "onboot", "acpi", "numa", "ciupgrade",
		"localtime", "reboot", "freeze")
	intOptions = set("sockets", "cores", "cpuunits", "vcpus", "balloon", "shares", "migrate_speed")
)

// isConfigKey reports whether k is a guest configuration option.
func isConfigKey(k string) bool {
	switch {
	case isDriveKey(k), unusedRe.MatchString(k), indexedRe.MatchString(k), k == "cdrom", k == "tags":
		return true
	}
	for _, m := range []map[string]bool{cpuOptions, memoryOptions, hwtypeOptions, generalOptions, powerOptions,
		diskOptions, cloudinitOptions, rootOptions} {
		if m[k] {
			return true
		}
	}
	return false
}

// checkModifyConfigPerm is check_vm_modify_config_perm: the privilege each
// option needs (drives, tags and devices are checked elsewhere).
func (c *call) checkModifyConfigPerm(vmid int, pool string, keys []string) *apiError {
	if c.isRoot() {
		return nil
	}
	for _, k := range keys {
		var privs []string
		anyOf := false
		switch {
		case isDriveKey(k), k == "cdrom", k == "tags", unusedRe.MatchString(k),
			deviceRe.MatchString(k):
			continue
		case cpuOptions[k], strings.HasPrefix(k, "numa"):
			privs = []string{"VM.Config.CPU"}
		case memoryOptions[k]:
			privs = []string{"VM.Config.Memory"}
		case hwtypeOptions[k]:
			privs = []string{"VM.Config.HWType"}
		case generalOptions[k]:
			privs = []string{"VM.Config.Options"}
		case powerOptions[k]:
			privs = []string{"VM.PowerMgmt"}
		case diskOptions[k]:
			privs = []string{"VM.Config.Disk"}
		case strings.HasPrefix(k, "net"):
			privs = []string{"VM.Config.Network"}
		case cloudinitOptions[k], strings.HasPrefix(k, "ipconfig"):
			privs, anyOf = []string{"VM.Config.Cloudinit", "VM.Config.Network"}, true
		default:
			return die("only root can set '%s' config", k)
		}
		if err := c.checkVMPerm(vmid, pool, privs, anyOf); err != nil {
			return err
		}
		if k == "startup" {
			if err := c.require("/", "Sys.Modify"); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkBridgeAccess is check_bridge_access with check_vnet_access: SDN.Use
// on the bridge's VLAN (or on the bridge when untagged) in the zone of the
// SDN VNet of that name, or in the localnetwork zone of plain bridges.
func (c *call) checkBridgeAccess(conf map[string]string) *apiError {
	if c.isRoot() {
		return nil
	}
	for _, k := range sortedKeys(conf) {
		if !strings.HasPrefix(k, "net") || !indexedRe.MatchString(k) {
			continue
		}
		n := parseNet(conf[k])
		bridge, tag := n["bridge"], n["tag"]
		if bridge == "" {
			continue
		}
		zone := "localnetwork"
		if v, ok := c.s.sdn().pending.vnets[bridge]; ok {
			zone = v["zone"]
		}
		path := "/sdn/zones/" + zone + "/" + bridge
		if tag != "" {
			path += "/" + tag
		}
		if err := c.require(path, "SDN.Use"); err != nil {
			return err
		}
	}
	return nil
}

var netModels = set("virtio", "e1000", "e1000e", "rtl8139", "vmxnet3", "i82551", "i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet")

func parseNet(v string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(part, "=")
		if netModels[k] {
			out["model"], out["macaddr"] = k, val
			continue
		}
		out[k] = val
	}
	return out
}

// withMAC gives a network device a MAC address (Proxmox's BC:24:11 prefix)
// unless it has one, printing the model=MAC pair first. The fourth byte is
// random but never 00, which the seeds and tests write (BC:24:11:00:..),
// so a made MAC never equals a seeded one.
func (s *state) withMAC(v string) string {
	n := parseNet(v)
	if n["model"] == "" || n["macaddr"] != "" {
		return v
	}
	s.macSeq++
	mac := fmt.Sprintf("BC:24:11:%02X:%02X:%02X", 1+rand.IntN(255), s.macSeq>>8&0xff, s.macSeq&0xff)
	parts := strings.Split(v, ",")
	parts[0] = n["model"] + "=" + mac
	return strings.Join(parts, ",")
}

// checkTags validates a tag list against pve-tag; the privilege is checked
// by assertTagPermissions when the tags are written.
func checkTags(tags string) *apiError {
	for _, t := range pveacl.SplitList(tags) {
		if !tagRe.MatchString(t) {
			return paramErr("tags", "invalid format - invalid characters in tag")
		}
	}
	return nil
}

var tagRe = regexp.MustCompile(`(?i)^[a-z0-9_][a-z0-9_\-+.]*$`)

// assertTagPermissions is PVE::GuestHelpers::assert_tag_permissions with
// datacenter.cfg's defaults (no registered tags, user-allow free): whenever
// the tags are set or deleted the caller needs VM.Config.Options on
// /vms/<vmid> itself, never through a pool named in the request, so a
// guest's pool counts only once it is a member.
func (c *call) assertTagPermissions(vmid int) *apiError {
	return c.checkVMPerm(vmid, "", []string{"VM.Config.Options"}, false)
}

// normalizeTags is get_unique_tags with datacenter.cfg's default tag-style
// (case-sensitive=0, alphabetical ordering): tags are lower-cased, sorted,
// de-duplicated and joined with ';'.
func normalizeTags(tags string) string {
	list := pveacl.SplitList(strings.ToLower(strings.ReplaceAll(tags, "\x00", ";"))) // a tag never holds NUL
	slices.Sort(list)
	return strings.Join(slices.Compact(list), ";")
}

// configValue renders an option for GET config: numbers for integer and
// boolean options, strings otherwise.
func configValue(k, v string) any {
	if boolOptions[k] || intOptions[k] {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return v
}

func vmPath(vmid int) string { return "/vms/" + strconv.Itoa(vmid) }
