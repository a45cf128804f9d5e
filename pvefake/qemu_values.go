package pvefake

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The value schemas of the guest options a create or config update sends
// most, as qemu-server's $confdesc declares them (src/PVE/QemuServer.pm),
// so a bad value answers PVE's 400 instead of being stored.
var (
	minCores    = 1
	minMemory   = 16
	maxCPUUnits = 262144
	minCPUUnits = 1
)

// configValueParams are optional parameters of create and config updates.
var configValueParams = append([]param{
	{name: "name", optional: true, format: fmtDNSName},
	{name: "memory", optional: true, format: fmtMemory},
	{name: "cores", typ: tInt, optional: true, min: &minCores},
	{name: "sockets", typ: tInt, optional: true, min: &minCores},
	{name: "vcpus", typ: tInt, optional: true, min: &minCores},
	{name: "balloon", typ: tInt, optional: true, min: &zero},
	{name: "cpuunits", typ: tInt, optional: true, min: &minCPUUnits, max: &maxCPUUnits},
	opt("numa", tBool), opt("onboot", tBool), opt("protection", tBool), opt("template", tBool), opt("acpi", tBool),
	{name: "scsihw", optional: true, enum: []string{"lsi", "lsi53c810", "virtio-scsi-pci", "virtio-scsi-single", "megasas", "pvscsi"}},
	{name: "ostype", optional: true, enum: []string{"other", "wxp", "w2k", "w2k3", "w2k8", "wvista", "win7", "win8", "win10", "win11", "l24", "l26", "solaris"}},
	{name: "bios", optional: true, enum: []string{"seabios", "ovmf"}},
	{name: "description", optional: true, maxLen: 8192},
	{name: "boot", optional: true, format: fmtBoot},
}, hostPCIParams()...)

// dnsName is pve-common's pve_verify_dns_name.
var dnsName = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)

func fmtDNSName(v string) error {
	if !dnsName.MatchString(v) {
		return errors.New("value does not look like a valid DNS name")
	}
	return nil
}

// fmtMemory parses qemu-server's memory_fmt property string: current (the
// default key), an integer of at least 16 MiB. Its errors read as
// parse_property_string's "format error" with the key's message, the key
// under the parameter's path, as check_prop passes it on.
func fmtMemory(v string) error {
	fail := func(key, msg string) error { return fmt.Errorf("format error\nmemory.%s: %s", key, msg) }
	for _, part := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			k, val = "current", part
		}
		if k != "current" {
			return fail(k, "property is not defined in schema and the schema does not allow additional properties")
		}
		if !integerRe.MatchString(val) {
			return fail(k, fmt.Sprintf("type check ('integer') failed - got '%s'", val))
		}
		if n, _ := strconv.Atoi(strings.TrimSpace(val)); n < minMemory {
			return fail(k, fmt.Sprintf("value must have a minimum value of %d", minMemory))
		}
	}
	return nil
}

// withConfigValues adds the option value schemas to a method's own.
func withConfigValues(schema []param) []param {
	return append(append([]param(nil), schema...), configValueParams...)
}
