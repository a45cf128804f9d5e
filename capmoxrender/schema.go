package capmoxrender

import (
	"fmt"
	"regexp"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	pmv1alpha1 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha1"
	pmv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha2"
)

// The constraints below are the ones the capmox CRD schemas (v0.7.7 and
// v0.9.0) put on the fields pxsubstrate renders, written as code so that the
// render needs no CRD files. The tests prove them against the real schemas.

// tagPattern is the schema pattern of tags and templateSelector.matchTags
// (case-insensitive).
var tagPattern = regexp.MustCompile(`^(?i)[a-z0-9_][a-z0-9_\-\+\.]*$`)

// deviceName is the v1alpha2 pattern of networkDevices[].name.
var deviceName = regexp.MustCompile(`^net[0-9]+$`)

// MinWebhookMTU is the smallest NIC MTU the capmox webhook accepts besides 1
// (inherit the bridge MTU); the CRD alone would allow 576.
const MinWebhookMTU = 1280

func schemaErr(kind, path string, value any, rule string) error {
	return &SchemaError{Kind: kind, Path: path, Value: fmt.Sprintf("%v", value), Rule: rule}
}

// CheckProxmoxClusterV1alpha1 applies the v1alpha1 ProxmoxCluster rules.
func CheckProxmoxClusterV1alpha1(s pmv1alpha1.ProxmoxClusterSpec) error {
	const k = capmox.KindProxmoxCluster
	if len(s.DNSServers) < 1 {
		return schemaErr(k, "spec.dnsServers", "empty", "at least one item")
	}
	if s.IPv4Config == nil {
		return schemaErr(k, "spec.ipv4Config", "absent", "ipv4Config or ipv6Config")
	}
	if len(s.IPv4Config.Addresses) == 0 {
		return schemaErr(k, "spec.ipv4Config.addresses", "empty", "at least one address (IPv4Config addresses must be provided)")
	}
	if s.IPv4Config.Prefix > 128 {
		return schemaErr(k, "spec.ipv4Config.prefix", s.IPv4Config.Prefix, "at most 128")
	}
	return nil
}

// CheckProxmoxClusterV1alpha2 applies the v1alpha2 ProxmoxCluster rules.
func CheckProxmoxClusterV1alpha2(s pmv1alpha2.ProxmoxClusterSpec) error {
	const k = capmox.KindProxmoxCluster
	if len(s.DNSServers) < 1 {
		return schemaErr(k, "spec.dnsServers", "empty", "at least one item")
	}
	if err := checkSet(k, "spec.dnsServers", s.DNSServers); err != nil {
		return err
	}
	if err := checkSet(k, "spec.allowedNodes", s.AllowedNodes); err != nil {
		return err
	}
	c := s.IPv4Config
	switch {
	case c == nil:
		return schemaErr(k, "spec.ipv4Config", "absent", "ipv4Config or ipv6Config")
	case len(c.Addresses) == 0:
		return schemaErr(k, "spec.ipv4Config.addresses", "empty", "at least one address (IPv4Config addresses must be provided)")
	case c.Gateway == "":
		return schemaErr(k, "spec.ipv4Config.gateway", "empty", "a gateway (minLength 1)")
	case c.Prefix < 1 || c.Prefix > 128:
		return schemaErr(k, "spec.ipv4Config.prefix", c.Prefix, "1 to 128")
	}
	return checkSet(k, "spec.ipv4Config.addresses", c.Addresses)
}

func checkSet(kind, path string, items []string) error {
	seen := map[string]bool{}
	for i, s := range items {
		if seen[s] {
			return schemaErr(kind, fmt.Sprintf("%s[%d]", path, i), strconv.Quote(s), "unique items (x-kubernetes-list-type: set)")
		}
		seen[s] = true
	}
	return nil
}

func checkTags(kind, path string, tags []string) error {
	if len(tags) < 1 {
		return schemaErr(kind, path, "empty", "at least one tag")
	}
	for i, t := range tags {
		if !tagPattern.MatchString(t) {
			return schemaErr(kind, fmt.Sprintf("%s[%d]", path, i), strconv.Quote(t), "the pattern "+tagPattern.String())
		}
	}
	return checkSet(kind, path, tags)
}

func checkSizing(kind string, sockets, cores, memory int32) error {
	switch {
	case sockets < 1:
		return schemaErr(kind, "spec.template.spec.numSockets", sockets, "at least 1")
	case cores < 1:
		return schemaErr(kind, "spec.template.spec.numCores", cores, "at least 1")
	case memory < 0 || memory%8 != 0:
		return schemaErr(kind, "spec.template.spec.memoryMiB", memory, "a non-negative multiple of 8")
	}
	return nil
}

func checkNIC(kind, path, bridge string, mtu, vlan *int) error {
	if bridge == "" {
		return schemaErr(kind, path+".bridge", "empty", "a bridge name (minLength 1)")
	}
	if mtu != nil && *mtu != 1 && (*mtu < MinWebhookMTU || *mtu > 65520) {
		return schemaErr(kind, path+".mtu", *mtu, fmt.Sprintf("1 or %d to 65520 (the CRD allows 576, the capmox webhook %d)", MinWebhookMTU, MinWebhookMTU))
	}
	if vlan != nil && (*vlan < 1 || *vlan > 4094) {
		return schemaErr(kind, path+".vlan", *vlan, "1 to 4094")
	}
	return nil
}

func checkPoolRef(kind, path string, r *corev1.TypedLocalObjectReference) error {
	if r == nil {
		return nil
	}
	if r.APIGroup == nil || *r.APIGroup != capmox.IPAMGroup {
		return schemaErr(kind, path+".apiGroup", r.APIGroup, "apiGroup "+capmox.IPAMGroup)
	}
	if r.Kind != capmox.KindInClusterIPPool && r.Kind != "GlobalInClusterIPPool" {
		return schemaErr(kind, path+".kind", r.Kind, "InClusterIPPool or GlobalInClusterIPPool")
	}
	if r.Name == "" {
		return schemaErr(kind, path+".name", "empty", "a pool name")
	}
	return nil
}

func intp[T ~int32 | ~uint16](p *T) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}

// CheckMachineSpecV1alpha1 applies the v1alpha1 ProxmoxMachineTemplate rules.
func CheckMachineSpecV1alpha1(s pmv1alpha1.ProxmoxMachineSpec) error {
	const k = capmox.KindProxmoxMachineTemplate
	if s.TemplateSelector == nil {
		return schemaErr(k, "spec.template.spec.templateSelector", "absent", "a template selector (sourceNode and templateID are not rendered)")
	}
	if err := checkTags(k, "spec.template.spec.templateSelector.matchTags", s.TemplateSelector.MatchTags); err != nil {
		return err
	}
	if s.Storage != "" && (s.Full == nil || !*s.Full) {
		return schemaErr(k, "spec.template.spec.storage", strconv.Quote(s.Storage), "full=true (Must set full=true when specifying storage)")
	}
	if err := checkSizing(k, s.NumSockets, s.NumCores, s.MemoryMiB); err != nil {
		return err
	}
	var boot *pmv1alpha1.DiskSize
	if s.Disks != nil {
		boot = s.Disks.BootVolume
	}
	if err := checkPlacement(k, boot, s.VMIDRange); err != nil {
		return err
	}
	if s.Network == nil || s.Network.Default == nil {
		return nil
	}
	d := s.Network.Default
	if err := checkNIC(k, "spec.template.spec.network.default", d.Bridge, intp(d.MTU), intp(d.VLAN)); err != nil {
		return err
	}
	if err := checkPoolRef(k, "spec.template.spec.network.default.ipv4PoolRef", d.IPv4PoolRef); err != nil {
		return err
	}
	names := map[string]bool{}
	for i, a := range s.Network.AdditionalDevices {
		p := fmt.Sprintf("spec.template.spec.network.additionalDevices[%d]", i)
		switch {
		case a.Name == "" || a.Name == "net0" || names[a.Name]:
			return schemaErr(k, p+".name", strconv.Quote(a.Name), "a unique name other than net0")
		case a.IPv4PoolRef == nil:
			return schemaErr(k, p+".ipv4PoolRef", "absent", "at least one pool reference, either ipv4PoolRef or ipv6PoolRef")
		}
		names[a.Name] = true
		if err := checkNIC(k, p, a.Bridge, intp(a.MTU), intp(a.VLAN)); err != nil {
			return err
		}
		if err := checkPoolRef(k, p+".ipv4PoolRef", a.IPv4PoolRef); err != nil {
			return err
		}
	}
	return nil
}

// CheckMachineSpecV1alpha2 applies the v1alpha2 ProxmoxMachineTemplate rules.
func CheckMachineSpecV1alpha2(s pmv1alpha2.ProxmoxMachineSpec) error {
	const k = capmox.KindProxmoxMachineTemplate
	if s.TemplateSelector == nil {
		return schemaErr(k, "spec.template.spec.templateSelector", "absent", "templateID or templateSelector")
	}
	if err := checkTags(k, "spec.template.spec.templateSelector.matchTags", s.TemplateSelector.MatchTags); err != nil {
		return err
	}
	if s.Storage != nil && (s.Full == nil || !*s.Full) {
		return schemaErr(k, "spec.template.spec.storage", strconv.Quote(*s.Storage), "full=true (Must set full=true when specifying storage)")
	}
	if s.NumSockets == nil || s.NumCores == nil || s.MemoryMiB == nil {
		return schemaErr(k, "spec.template.spec", "unsized", "numSockets, numCores and memoryMiB")
	}
	if err := checkSizing(k, *s.NumSockets, *s.NumCores, *s.MemoryMiB); err != nil {
		return err
	}
	var boot *pmv1alpha1.DiskSize
	if s.Disks != nil {
		boot = (*pmv1alpha1.DiskSize)(s.Disks.BootVolume)
	}
	if err := checkPlacement(k, boot, (*pmv1alpha1.VMIDRange)(s.VMIDRange)); err != nil {
		return err
	}
	if err := checkSet(k, "spec.template.spec.allowedNodes", s.AllowedNodes); err != nil {
		return err
	}
	if s.Network == nil || len(s.Network.NetworkDevices) == 0 {
		return schemaErr(k, "spec.template.spec.network.networkDevices", "absent", "network.networkDevices")
	}
	names := map[string]bool{}
	for i, d := range s.Network.NetworkDevices {
		p := fmt.Sprintf("spec.template.spec.network.networkDevices[%d]", i)
		if d.Name == nil || !deviceName.MatchString(*d.Name) || names[*d.Name] {
			return schemaErr(k, p+".name", d.Name, "a unique name matching ^net[0-9]+$")
		}
		names[*d.Name] = true
		if d.Bridge == nil {
			return schemaErr(k, p+".bridge", "absent", "a bridge name")
		}
		if err := checkNIC(k, p, *d.Bridge, intp(d.MTU), intp(d.VLAN)); err != nil {
			return err
		}
		for j := range d.IPPoolRef {
			if err := checkPoolRef(k, fmt.Sprintf("%s.ipPoolRef[%d]", p, j), &d.IPPoolRef[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPlacement applies the rules both generations put on
// disks.bootVolume and vmIDRange.
func checkPlacement(kind string, b *pmv1alpha1.DiskSize, r *pmv1alpha1.VMIDRange) error {
	if b != nil {
		if b.Disk == "" {
			return schemaErr(kind, "spec.template.spec.disks.bootVolume.disk", "empty", "a disk name (minLength 1)")
		}
		if b.SizeGB < MinBootVolumeGiB {
			return schemaErr(kind, "spec.template.spec.disks.bootVolume.sizeGb", b.SizeGB, fmt.Sprintf("at least %d", MinBootVolumeGiB))
		}
	}
	if r != nil {
		switch {
		case r.Start < MinVMID || r.Start > MaxVMID:
			return schemaErr(kind, "spec.template.spec.vmIDRange.start", r.Start, fmt.Sprintf("%d to %d", MinVMID, MaxVMID))
		case r.End < MinVMID || r.End > MaxVMID:
			return schemaErr(kind, "spec.template.spec.vmIDRange.end", r.End, fmt.Sprintf("%d to %d", MinVMID, MaxVMID))
		case r.End < r.Start:
			return schemaErr(kind, "spec.template.spec.vmIDRange", fmt.Sprintf("%d-%d", r.Start, r.End), "end should be greater than or equal to start")
		}
	}
	return nil
}
