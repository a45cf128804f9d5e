package pvefake

import (
	"fmt"
	"regexp"
	"strconv"
)

// maxHostPCI is qemu-server's $MAX_HOSTPCI_DEVICES: hostpci0 to hostpci15.
const maxHostPCI = 16

var (
	hostPCIKeyRe = regexp.MustCompile(`^hostpci\d+$`)
	// hostPCIHostRe is $hostpci_fmt's host: $PCIRE, the domain optional,
	// lower-case hex, several separated by ';'.
	hostPCIHostRe = regexp.MustCompile(`^(?:[a-f0-9]{4,}:)?[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?(;(?:[a-f0-9]{4,}:)?[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?)*$`)
	hexIDRe       = regexp.MustCompile(`^0x[0-9a-fA-F]{4}$`)
)

func boolCheck(v string) string {
	if v != "1" && v != "0" {
		return fmt.Sprintf("type check ('boolean') failed - got '%s'", v)
	}
	return ""
}

// hostPCIFormat is qemu-server's $hostpci_fmt (pve-qm-hostpci,
// src/PVE/QemuServer/PCI.pm); host is its default key.
var hostPCIFormat = map[string]propSchema{
	"host": {check: patternCheck(hostPCIHostRe)},
	"mapping": {check: func(v string) string {
		if err := fmtConfigID(v); err != nil {
			return "invalid format - " + err.Error()
		}
		return ""
	}},
	"rombar":        {check: boolCheck},
	"romfile":       {check: patternCheck(regexp.MustCompile(`^[^,;]+$`))},
	"pcie":          {check: boolCheck},
	"x-vga":         {check: boolCheck},
	"legacy-igd":    {check: boolCheck},
	"mdev":          {check: patternCheck(regexp.MustCompile(`^[^/.:]+$`))},
	"vendor-id":     {check: patternCheck(hexIDRe)},
	"device-id":     {check: patternCheck(hexIDRe)},
	"sub-vendor-id": {check: patternCheck(hexIDRe)},
	"sub-device-id": {check: patternCheck(hexIDRe)},
	"driver": {check: func(v string) string {
		if v != "vfio" && v != "keep" {
			return fmt.Sprintf("value '%s' does not have a value in the enumeration 'vfio, keep'", v)
		}
		return ""
	}},
}

var hostPCIBooleans = set("rombar", "pcie", "x-vga", "legacy-igd")

// parseHostPCI parses a hostpciN value; key names it in the errors.
func parseHostPCI(v, key string) (map[string]string, error) {
	return parsePropertyString(hostPCIFormat, "host", v, key, hostPCIBooleans)
}

// hostPCIParams are the hostpciN parameters of create and config updates,
// each checked against pve-qm-hostpci.
func hostPCIParams() []param {
	out := make([]param, 0, maxHostPCI)
	for i := range maxHostPCI {
		key := "hostpci" + strconv.Itoa(i)
		out = append(out, param{name: key, optional: true, format: func(v string) error {
			_, err := parseHostPCI(v, key)
			return err
		}})
	}
	return out
}

// checkHostPCIPerm is check_hostpci_perm (src/PVE/API2/Qemu.pm): root@pam
// may set anything; everyone else only a mapped device, with Mapping.Use on
// /mapping/pci/<mapping> and VM.Config.HWType on the guest, and no romfile.
func (c *call) checkHostPCIPerm(vmid int, pool, key, value string) *apiError {
	if c.isRoot() {
		return nil
	}
	d, err := parseHostPCI(value, key)
	if err != nil {
		return die("%v", err)
	}
	switch {
	case d["host"] != "":
		return die("only root can set '%s' config for non-mapped devices", key)
	case d["mapping"] != "":
		if err := c.require("/mapping/pci/"+d["mapping"], "Mapping.Use"); err != nil {
			return err
		}
		if err := c.checkVMPerm(vmid, pool, []string{"VM.Config.HWType"}, false); err != nil {
			return err
		}
	default:
		return die("either 'host' or 'mapping' must be set.")
	}
	if _, ok := d["romfile"]; ok {
		return paramErr(key, "only root@pam can set 'romfile' option")
	}
	return nil
}

// checkCreateHostPCIPerm is check_vm_create_hostpci_perm: every hostpciN of
// a create, in key order (PVE walks them in hash order).
func (c *call) checkCreateHostPCIPerm(vmid int, pool string, conf map[string]string) *apiError {
	for _, k := range sortedKeys(conf) {
		if hostPCIKeyRe.MatchString(k) {
			if err := c.checkHostPCIPerm(vmid, pool, k, conf[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkMappingAccess is the hostpci part of check_mapping_access
// (src/PVE/QemuServer.pm), which a clone runs on the source's
// configuration: a mapped device needs Mapping.Use, a host device root@pam.
func (c *call) checkMappingAccess(conf map[string]string) *apiError {
	if c.isRoot() {
		return nil
	}
	for _, k := range sortedKeys(conf) {
		if !hostPCIKeyRe.MatchString(k) {
			continue
		}
		d, err := parseHostPCI(conf[k], k)
		if err != nil {
			return die("%v", err)
		}
		switch {
		case d["host"] != "":
			return die("only root can set '%s' config for non-mapped devices", k)
		case d["mapping"] != "":
			if err := c.require("/mapping/pci/"+d["mapping"], "Mapping.Use"); err != nil {
				return err
			}
		default:
			return die("either 'host' or 'mapping' must be set.")
		}
	}
	return nil
}
