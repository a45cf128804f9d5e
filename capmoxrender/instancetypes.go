package capmoxrender

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// InstanceTypesVersion is the kubevirt/common-instancetypes release (Apache
// License 2.0) whose series and sizes InstanceTypes restates.
const InstanceTypesVersion = "v1.7.0"

// InstanceType is one size of a common instance type: its guest vCPUs and
// memory, and the hugepage size the series promises ("" for none).
type InstanceType struct {
	CPU       int
	Memory    string
	Hugepages string
}

// instanceSizes are the sizes of the U and O series (instancetypes/u/1 and
// instancetypes/o/1/sizes.yaml; O has no 2xmedium): the O series is the U series with its
// memory overcommitted by 50% on the KubeVirt host, which Proxmox does
// without being asked (a VM's memory is not reserved up front).
var instanceSizes = map[string]InstanceType{
	"nano": {1, "512Mi", ""}, "micro": {1, "1Gi", ""}, "small": {1, "2Gi", ""},
	"medium": {1, "4Gi", ""}, "2xmedium": {2, "4Gi", ""}, "large": {2, "8Gi", ""},
	"xlarge": {4, "16Gi", ""}, "2xlarge": {8, "32Gi", ""}, "4xlarge": {16, "64Gi", ""},
	"8xlarge": {32, "128Gi", ""},
}

// memorySizes are the M series' sizes (instancetypes/m/1/sizes.yaml); every
// one backs its memory with hugepages, 2Mi or (the 1gi sizes) 1Gi.
var memorySizes = map[string]InstanceType{
	"large": {2, "16Gi", "2Mi"}, "xlarge": {4, "32Gi", "2Mi"}, "2xlarge": {8, "64Gi", "2Mi"},
	"4xlarge": {16, "128Gi", "2Mi"}, "8xlarge": {32, "256Gi", "2Mi"},
	"large1gi": {2, "16Gi", "1Gi"}, "xlarge1gi": {4, "32Gi", "1Gi"}, "2xlarge1gi": {8, "64Gi", "1Gi"},
	"4xlarge1gi": {16, "128Gi", "1Gi"}, "8xlarge1gi": {32, "256Gi", "1Gi"},
}

// unkeptSeries are the series whose promise a capmox clone cannot keep,
// with the reason.
var unkeptSeries = map[string]string{
	"cx1": "the CX series (Compute Exclusive) promises dedicated CPUs, an isolated emulator thread, guest NUMA and hugepages",
	"d1":  "the D series (Dedicated vCPU) promises dedicated CPUs and an isolated emulator thread",
	"n1":  "the N series (Network) promises dedicated CPUs, 1Gi hugepages and DPDK-capable nodes",
	"rt1": "the RT series (Realtime) promises dedicated CPUs, guest NUMA, a realtime vCPU scheduler and 1Gi hugepages",
}

// LookupInstanceType returns the size of a common instance type (u1.xlarge)
// and whether the name is one of InstanceTypesVersion.
func LookupInstanceType(name string) (InstanceType, bool) {
	series, size, ok := strings.Cut(name, ".")
	if !ok {
		return InstanceType{}, false
	}
	switch series {
	case "u1":
		t, ok := instanceSizes[size]
		return t, ok
	case "o1":
		t, ok := instanceSizes[size]
		return t, ok && size != "2xmedium"

	case "m1":
		t, ok := memorySizes[size]
		return t, ok
	}
	return InstanceType{}, false
}

// instanceTypeSize resolves instanceType to the CPU and memory quantities it
// stands for, refusing what a Proxmox VM cannot honour by name and reason.
func instanceTypeSize(name string) (cpu, memory string, err error) {
	series, _, _ := strings.Cut(name, ".")
	if reason, ok := unkeptSeries[series]; ok {
		return "", "", refuse("instanceType", "instanceType %q cannot be kept on Proxmox: %s, and capmox clones a VM with shared vCPUs and ordinary memory; remove instanceType and size the pool with resources.cpu and resources.memory", name, reason)
	}
	t, ok := LookupInstanceType(name)
	if !ok {
		return "", "", refuse("instanceType", "instanceType %q is not a size of the U, O or M series of KubeVirt's common instance types (%s), such as u1.xlarge or o1.large; name one of those, or remove instanceType and size the pool with resources.cpu and resources.memory", name, InstanceTypesVersion)
	}
	if t.Hugepages != "" {
		return "", "", refuse("instanceType", "instanceType %q backs its memory with %s hugepages, which capmox cannot give a clone; to size the pool as %s without hugepages, remove instanceType and write resources.cpu: %d and resources.memory: %s", name, t.Hugepages, name, t.CPU, t.Memory)
	}
	return fmt.Sprint(t.CPU), t.Memory, nil
}

// InstanceTypeNames lists every size LookupInstanceType knows, sorted.
func InstanceTypeNames() []string {
	var out []string
	for s := range instanceSizes {
		out = append(out, "u1."+s)
		if s != "2xmedium" {
			out = append(out, "o1."+s)
		}
	}
	for s := range memorySizes {
		out = append(out, "m1."+s)
	}
	slices.Sort(out)
	return out
}

// planSizing sizes each worker from resources, falling back per field to
// instanceType, as the managed-Kubernetes page says (resources wins). An
// instanceType is judged even when resources gives both fields, so that a
// promise it makes is never dropped without a word.
func planSizing(p *nodesPlan, s NodesSpec, o Options) error {
	r := s.Resources
	cpu, memory := quantityOf(r.CPU), quantityOf(r.Memory)
	// Each size is named in messages by the field it came from.
	cpuField, memoryField := "resources.cpu "+termsafe.Cut(cpu), "resources.memory "+termsafe.Cut(memory)
	memoryFromType := false
	if s.InstanceType != "" {
		c, m, err := instanceTypeSize(s.InstanceType)
		if err != nil {
			return err
		}
		from := fmt.Sprintf("instanceType %s", termsafe.Quote(s.InstanceType))
		if cpu == "" {
			cpu, cpuField = c, fmt.Sprintf("%s (%s vCPUs; resources.cpu is not set)", from, c)
		}
		if memory == "" {
			memory, memoryField, memoryFromType = m, fmt.Sprintf("%s (%s of memory; resources.memory is not set)", from, m), true
		}
	}
	if cpu == "" || memory == "" {
		return refuse("resources", "substrate proxmox requires resources.cpu and resources.memory: there is no instanceType to size the pool from")
	}
	var err error
	if p.cores, err = Cores(cpu); err != nil {
		return refuse("resources.cpu", "resources.cpu: %v", err)
	}
	if p.memoryMiB, err = MemoryMiB(memory); err != nil {
		return refuse("resources.memory", "resources.memory: %v", err)
	}
	if p.memoryMiB < MinWorkerMemoryMiB {
		if memoryFromType {
			return refuse("instanceType", "%s gives each worker %d MiB; a Talos Linux worker needs at least %d MiB (1Gi, Talos's system requirements) to boot and join: name an instanceType with 1Gi or more, or set resources.memory: 1Gi or more (2Gi is Talos's recommendation)",
				memoryField, p.memoryMiB, MinWorkerMemoryMiB)
		}
		return refuse("resources.memory", "%s gives each worker %d MiB; a Talos Linux worker needs at least %d MiB (1Gi, Talos's system requirements) to boot and join: ask for 1Gi or more (2Gi is Talos's recommendation)",
			memoryField, p.memoryMiB, MinWorkerMemoryMiB)
	}
	if p.cores > ManyCores {
		o.warnf("%s gives each worker %d vCPUs: Proxmox VE starts a VM only on a node with at least as many logical CPUs (qemu-server refuses with \"MAX n vcpus allowed per VM on this node\"), and capmox may place a worker on any node the pool allows: check that each of them has %d logical CPUs", cpuField, p.cores, p.cores)
	}
	return nil
}

// MinWorkerMemoryMiB is the least memory a worker gets: Talos Linux's
// system requirements give a worker at least 1 GiB.
const MinWorkerMemoryMiB = 1024

// ManyCores is the vCPU count above which the render warns that a node
// may not have as many logical CPUs as a worker asks for.
const ManyCores = 128

func quantityOf(q *Quantity) string {
	if q == nil {
		return ""
	}
	return string(*q)
}
