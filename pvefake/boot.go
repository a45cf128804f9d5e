package pvefake

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The boot option, as qemu-server declares and handles it (commit
// e6352be67f70, src/PVE/QemuServer.pm): $boot_fmt registered as the
// property-string format pve-qm-boot, with the deprecated default key
// legacy (pattern [acdn]{1,4}) and order, a list of boot devices checked by
// verify_bootdev; print_bootorder writes "order=<dev>;<dev>...";
// get_default_bootdevices picks the order a new guest gets.

// bootConfig is a parsed boot value.
type bootConfig struct {
	legacy string
	order  []string
	// hasOrder: the order key is set (its list may still be empty).
	hasOrder bool
}

var (
	// propKeyValueRe is parse_property_string's key=value part: Perl's
	// ^([^=]+)=(.+)$, where $ may also stand before a final newline.
	propKeyValueRe = regexp.MustCompile(`^([^=]+)=(.+)\n?$`)
	// perlBlankRe is Perl's /^\s*$/ (with \v, which Perl counts as \s).
	perlBlankRe  = regexp.MustCompile(`^[\t\n\v\f\r ]*$`)
	bootLegacyRe = regexp.MustCompile(`^[acdn]{1,4}\n?$`)
	bootDevRe    = regexp.MustCompile(`^(net([0-9]|[12][0-9]|3[01])|usb([0-9]|1[0-3])|hostpci([0-9]|1[0-5]))$`)
)

// parseBoot is PVE::JSONSchema::parse_property_string of a value in
// pve-qm-boot, validated as check_prop does it for the parameter path
// (errors name "<path>.legacy" and "<path>.order"). The error is the text
// PVE dies with, without its final newlines.
func parseBoot(v, path string) (bootConfig, error) {
	var b bootConfig
	set := map[string]bool{}
	defaultSeen := false
	for _, part := range strings.Split(v, ",") {
		if perlBlankRe.MatchString(part) {
			continue
		}
		if m := propKeyValueRe.FindStringSubmatch(part); m != nil {
			k, val := m[1], m[2]
			if set[k] {
				return b, fmt.Errorf("duplicate key in comma-separated list property: %s", k)
			}
			switch k {
			case "legacy":
				b.legacy = val
			case "order":
				b.order, b.hasOrder = splitList(val), true
			default:
				return b, fmt.Errorf("invalid key in comma-separated list property: %s", k)
			}
			set[k] = true
			continue
		}
		if strings.Contains(part, "=") {
			return b, errors.New("missing key in comma-separated list property")
		}
		// the default key takes the part unless a value Perl holds true
		// (neither "" nor "0") is there already
		if defaultSeen || (set["legacy"] && b.legacy != "" && b.legacy != "0") {
			return b, errors.New("duplicate key in comma-separated list property: legacy")
		}
		defaultSeen, b.legacy = true, part
		set["legacy"] = true
	}
	prefix := ""
	if path != "" {
		prefix = path + "."
	}
	var errs []string
	if set["legacy"] && !bootLegacyRe.MatchString(b.legacy) {
		errs = append(errs, prefix+"legacy: value does not match the regex pattern")
	}
	for _, dev := range b.order {
		if !validBootDev(dev) {
			errs = append(errs, fmt.Sprintf("%sorder: invalid format - invalid boot device '%s'", prefix, dev))
			break
		}
	}
	if len(errs) > 0 {
		return b, errors.New("format error\n" + strings.Join(errs, "\n"))
	}
	return b, nil
}

// validBootDev is verify_bootdev: a drive other than efidisk0 and
// tpmstate0, or a netN, usbN or hostpciN option the configuration knows.
func validBootDev(dev string) bool {
	if isDriveKey(dev) {
		return dev != "efidisk0" && dev != "tpmstate0"
	}
	return bootDevRe.MatchString(dev)
}

// fmtBoot checks a boot parameter.
func fmtBoot(v string) error {
	_, err := parseBoot(v, "boot")
	return err
}

// splitList is PVE::ParseUtils::split_list: NUL-separated when the text
// holds a NUL, else separated by commas, semicolons and whitespace.
func splitList(v string) []string {
	if strings.Contains(v, "\x00") {
		parts := strings.Split(v, "\x00")
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
		return parts
	}
	return strings.FieldsFunc(v, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r'
	})
}

// printBootOrder is print_bootorder: "order=a;b", or "" for no device.
func printBootOrder(devs []string) string {
	if len(devs) == 0 {
		return ""
	}
	return "order=" + strings.Join(devs, ";")
}

// bootDriveOrder is valid_drive_names_for_boot: IDE, SCSI, VirtIO, SATA.
func bootDriveOrder() []string {
	var out []string
	for _, bus := range []struct {
		name string
		n    int
	}{{"ide", 4}, {"scsi", 31}, {"virtio", 16}, {"sata", 6}} {
		for i := range bus.n {
			out = append(out, fmt.Sprintf("%s%d", bus.name, i))
		}
	}
	return out
}

// defaultBootDevices is get_default_bootdevices: the first disk, the first
// CD-ROM (resolve_first_disk counts a cloud-init drive as one) and the
// first network device.
func defaultBootDevices(conf map[string]string) []string {
	var out []string
	for _, cdrom := range []bool{false, true} {
		for _, k := range bootDriveOrder() {
			if conf[k] == "" {
				continue
			}
			if d, err := parseDrive(conf[k]); err == nil && d.cdrom() == cdrom {
				out = append(out, k)
				break
			}
		}
	}
	for i := range 32 {
		if k := fmt.Sprintf("net%d", i); conf[k] != "" {
			out = append(out, k)
			break
		}
	}
	return out
}

// newGuestBoot is the boot value create_vm gives a guest whose request
// names none. With no device it is the empty value, which write_vm_config
// writes as "boot: " and parse_vm_config reads back as one space.
func newGuestBoot(conf map[string]string) string {
	if b := printBootOrder(defaultBootDevices(conf)); b != "" {
		return b
	}
	return " "
}
