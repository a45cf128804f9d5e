package capmoxrender_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// machineSpec renders n and returns the machine template's spec.template.spec.
func machineSpec(t *testing.T, n capmoxrender.KubernetesNodes, o capmoxrender.Options) map[string]any {
	t.Helper()
	objs, err := capmoxrender.RenderNodes(context.Background(), n, o)
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := unstructured.NestedMap(objs[0].Object, "spec", "template", "spec")
	return s
}

func clusterWithNodes(ns, name string, nodes ...string) *capmoxrender.Objects {
	l := &capmoxrender.Objects{}
	l.Add(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": capmoxrender.AppsAPIVersion, "kind": "Kubernetes",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"version": "v1.35.2", "proxmox": map[string]any{"allowedNodes": toAny(nodes)}},
	}})
	return l
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestPoolSizingRefusals: each refusal of diskSize, instanceType,
// allowedNodes, vmIDRange and the kubevirt-only fields sits next to an
// admitted control that differs in that one field.
func TestPoolSizingRefusals(t *testing.T) {
	type mut = func(*capmoxrender.KubernetesNodes, *capmoxrender.Options)
	cases := map[string]struct {
		mutate mut
		want   string
	}{
		"DiskAccepted": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.DiskSize, n.Spec.Proxmox.TemplateDiskSize = q("50Gi"), q("20Gi")
		}},
		"DiskEqualTemplateAccepted": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.DiskSize, n.Spec.Proxmox.TemplateDiskSize = q("20Gi"), q("20Gi")
		}},
		"DiskBelowTemplate": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.DiskSize, n.Spec.Proxmox.TemplateDiskSize = q("10Gi"), q("20Gi")
		}, want: "diskSize 10Gi (10 GiB) is smaller than the template's disk, 20Gi (proxmox.templateDiskSize): capmox can only grow a cloned disk, and Proxmox refuses to shrink one; ask for at least 20Gi, or clone a template with a smaller disk"},
		"DiskDecimalBelowTemplate": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.DiskSize, n.Spec.Proxmox.TemplateDiskSize = q("20G"), q("20Gi")
		}, want: "diskSize 20G (19 GiB) is smaller than the template's disk, 20Gi"},
		"DiskBelowSchema": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.DiskSize = q("4Gi") },
			want: "diskSize 4Gi is 4 GiB, below the 5 GiB capmox accepts for disks.bootVolume.sizeGb: ask for at least 5Gi"},
		"DiskZero": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.DiskSize = q("0") },
			want: `diskSize: disk quantity "0" must be above zero`},
		"TemplateDiskBad": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.DiskSize, n.Spec.Proxmox.TemplateDiskSize = q("50Gi"), q("lots")
		}, want: `proxmox.templateDiskSize: cannot parse disk quantity "lots"`},
		"InstanceTypeAccepted": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.InstanceType, n.Spec.Resources = "u1.xlarge", capmoxrender.Resources{}
		}},
		"InstanceTypeO": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.InstanceType, n.Spec.Resources = "o1.medium", capmoxrender.Resources{}
		}},
		"InstanceTypeTooSmall": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.InstanceType, n.Spec.Resources = "o1.nano", capmoxrender.Resources{}
		}, want: `instanceType "o1.nano" (512Mi of memory; resources.memory is not set) gives each worker 512 MiB; a Talos Linux worker needs at least 1024 MiB (1Gi, Talos's system requirements)`},
		"MemoryBelowTalos": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Resources.Memory = q("1000Mi") },
			want: `resources.memory 1000Mi gives each worker 1000 MiB; a Talos Linux worker needs at least 1024 MiB (1Gi, Talos's system requirements) to boot and join: ask for 1Gi or more`},
		"MemoryTalosMinimum": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Resources.Memory = q("1Gi") }},
		"RangeBelowReplicas": {mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			n.Spec.Replicas = replicas(6)
			o.VMIDRanges = map[string]capmoxrender.VMIDRange{"tenant-e2e": {Start: 1000, End: 1004}}
		}, want: `replicas 6: the VM id range 1000-1004 of Proxmox pool "tenant-e2e" holds 5 VM id(s), fewer than the pool's workers, so capmox cannot clone the rest: widen the tenant's vmIDRange, or lower replicas`},
		"RangeBelowMaxReplicas": {mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			n.Spec.MaxReplicas = replicas(20)
			o.VMIDRanges = map[string]capmoxrender.VMIDRange{"tenant-e2e": {Start: 1000, End: 1009}}
		}, want: `maxReplicas 20: the VM id range 1000-1009 of Proxmox pool "tenant-e2e" holds 10 VM id(s)`},
		"RangeFitsReplicas": {mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			n.Spec.Replicas = replicas(5)
			o.VMIDRanges = map[string]capmoxrender.VMIDRange{"tenant-e2e": {Start: 1000, End: 1004}}
		}},
		"InstanceTypeCX": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.InstanceType = "cx1.large" },
			want: `instanceType "cx1.large" cannot be kept on Proxmox: the CX series (Compute Exclusive) promises dedicated CPUs, an isolated emulator thread, guest NUMA and hugepages, and capmox clones a VM with shared vCPUs and ordinary memory; remove instanceType and size the pool with resources.cpu and resources.memory`},
		"InstanceTypeRT": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.InstanceType = "rt1.small" },
			want: `instanceType "rt1.small" cannot be kept on Proxmox: the RT series (Realtime) promises dedicated CPUs`},
		"InstanceTypeN": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.InstanceType = "n1.large" },
			want: `instanceType "n1.large" cannot be kept on Proxmox: the N series (Network)`},
		"InstanceTypeD": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.InstanceType = "d1.large" },
			want: `instanceType "d1.large" cannot be kept on Proxmox: the D series (Dedicated vCPU)`},
		"InstanceTypeM": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.InstanceType = "m1.large" },
			want: `instanceType "m1.large" backs its memory with 2Mi hugepages, which capmox cannot give a clone; to size the pool as m1.large without hugepages, remove instanceType and write resources.cpu: 2 and resources.memory: 16Gi`},
		"InstanceTypeUnknown": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.InstanceType = "u1.huge" },
			want: `instanceType "u1.huge" is not a size of the U, O or M series of KubeVirt's common instance types (v1.7.0), such as u1.xlarge or o1.large`},
		"StorageClass": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.StorageClass = "replicated" },
			want: "storageClass is a kubevirt-only field: a Proxmox worker's system disk is cloned from the template, onto the template's storage for a linked clone; to place it elsewhere use proxmox.storage with proxmox.full: true, and size it with diskSize"},
		"EphemeralStorage": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.EphemeralStorage = q("50Gi") },
			want: "ephemeralStorage has been renamed to diskSize, which sizes the worker's single system disk; write diskSize: 50Gi instead"},
		"NodesAccepted": {mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes = []string{"pve2"}
			o.Clusters = clusterWithNodes(n.Namespace, n.Spec.Cluster, "pve1", "pve2")
		}},
		"NodesAnyAccepted": {mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes = []string{"pve3"}
			o.Clusters = clusterWithNodes(n.Namespace, n.Spec.Cluster)
		}},
		"NodeOutside": {mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes = []string{"pve2", "pve3"}
			o.Clusters = clusterWithNodes(n.Namespace, n.Spec.Cluster, "pve1", "pve2")
		}, want: `proxmox.allowedNodes[1] is "pve3", which is not in the cluster's proxmox.allowedNodes [pve1 pve2]: a pool may only narrow its cluster's nodes; pick from those, or add the node to the cluster first`},
		"NodeTwice": {mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes = []string{"pve1", "pve1"}
		},
			want: `proxmox.allowedNodes[1] is "pve1", which is listed twice: list each node once`},
		"RangeAccepted": {mutate: func(_ *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			o.VMIDRanges = map[string]capmoxrender.VMIDRange{"tenant-e2e": {Start: 1000, End: 1999}}
		}},
		"RangeBackwards": {mutate: func(_ *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			o.VMIDRanges = map[string]capmoxrender.VMIDRange{"tenant-e2e": {Start: 1999, End: 1000}}
		}, want: `the VM id range 1999-1000 of Proxmox pool "tenant-e2e" is not within 100-999999999 with its end at or above its start: fix the tenant's vmIDRange`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n, o := validNodes(), capmoxrender.Options{}
			tc.mutate(&n, &o)
			_, err := capmoxrender.RenderNodes(context.Background(), n, o)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("the control must render, got %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("want the refusal %q, got %v", tc.want, err)
			}
		})
	}
}

// TestPoolSizingRendered checks what each field writes, in both generations.
func TestPoolSizingRendered(t *testing.T) {
	for _, gen := range generations {
		n := validNodes()
		n.Spec.DiskSize, n.Spec.Proxmox.TemplateDiskSize = q("50G"), q("20Gi")
		n.Spec.InstanceType, n.Spec.Resources = "u1.xlarge", capmoxrender.Resources{Memory: q("20Gi")}
		n.Spec.Proxmox.AllowedNodes = []string{"pve2"}
		o := capmoxrender.Options{Capmox: gen, VMIDRanges: map[string]capmoxrender.VMIDRange{"tenant-e2e": {Start: 1000, End: 1999}},
			Clusters: clusterWithNodes("tenant-e2e", "k8s-e2e", "pve1", "pve2")}
		s := machineSpec(t, n, o)
		checks := map[string][2]any{
			"sizeGb":       {nested(s, "disks", "bootVolume", "sizeGb"), int64(47)},
			"disk":         {nested(s, "disks", "bootVolume", "disk"), "scsi0"},
			"numCores":     {nested(s, "numCores"), int64(4)},
			"memoryMiB":    {nested(s, "memoryMiB"), int64(20480)},
			"vmIDRange":    {nested(s, "vmIDRange", "start"), int64(1000)},
			"allowedNodes": {nested(s, "allowedNodes"), []any{"pve2"}},
		}
		for k, c := range checks {
			if !equalJSON(c[0], c[1]) {
				t.Errorf("%s: %s is %#v, want %#v", gen, k, c[0], c[1])
			}
		}
	}
}

func nested(m map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	return v
}

func equalJSON(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestDiskSizeWarnsWithoutTemplateSize: with no template size the pool
// renders, and the warning names what to do.
func TestDiskSizeWarnsWithoutTemplateSize(t *testing.T) {
	var warned []string
	n := validNodes()
	n.Spec.DiskSize = q("50Gi")
	s := machineSpec(t, n, capmoxrender.Options{Warn: func(m string) { warned = append(warned, m) }})
	if nested(s, "disks", "bootVolume", "sizeGb") == nil {
		t.Fatal("the boot volume must still render")
	}
	want := "diskSize 50Gi: the template's disk size is unknown, so a template disk larger than 50 GiB fails each clone's resize (Proxmox cannot shrink a disk); read it with `pxsubstrate template select` and write it as proxmox.templateDiskSize"
	if len(warned) != 1 || warned[0] != want {
		t.Fatalf("want the one warning %q, got %q", want, warned)
	}
	warned = nil
	n.Spec.Proxmox.TemplateDiskSize = q("20Gi")
	machineSpec(t, n, capmoxrender.Options{Warn: func(m string) { warned = append(warned, m) }})
	if len(warned) != 0 {
		t.Fatalf("a known template size warns nothing, got %q", warned)
	}
}

// TestDiskSizeRollsPool: a changed diskSize names a new machine template.
func TestDiskSizeRollsPool(t *testing.T) {
	name := func(size string) string {
		n := validNodes()
		n.Spec.DiskSize = q(size)
		objs, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return objs[0].GetName()
	}
	if a, b := name("50Gi"), name("60Gi"); a == b {
		t.Fatalf("diskSize 50Gi and 60Gi both name %s", a)
	}
	if a, b := name("50Gi"), name("50Gi"); a != b {
		t.Fatalf("the same diskSize names %s and %s", a, b)
	}
}

// TestInstanceTypeTable: the table restates common-instancetypes v1.7.0.
func TestInstanceTypeTable(t *testing.T) {
	want := map[string]capmoxrender.InstanceType{
		"u1.nano": {CPU: 1, Memory: "512Mi"}, "u1.2xmedium": {CPU: 2, Memory: "4Gi"}, "u1.xlarge": {CPU: 4, Memory: "16Gi"},
		"u1.8xlarge": {CPU: 32, Memory: "128Gi"}, "o1.medium": {CPU: 1, Memory: "4Gi"},
		"m1.large": {CPU: 2, Memory: "16Gi", Hugepages: "2Mi"}, "m1.8xlarge1gi": {CPU: 32, Memory: "256Gi", Hugepages: "1Gi"},
	}
	for name, w := range want {
		got, ok := capmoxrender.LookupInstanceType(name)
		if !ok || got != w {
			t.Errorf("%s: got %+v (%v), want %+v", name, got, ok, w)
		}
	}
	if n := len(capmoxrender.InstanceTypeNames()); n != 29 {
		t.Errorf("U, O and M of v1.7.0 have 10+9+10 sizes, got %d", n)
	}
	if _, ok := capmoxrender.LookupInstanceType("o1.2xmedium"); ok {
		t.Error("o1 has no 2xmedium in v1.7.0")
	}
}

// TestVMIDRangeWarnsForAnotherPool: ranges given, none for the pool's
// Proxmox pool: the pool renders without vmIDRange and the warning says why.
// TestSizingWarnings: a range that holds the pool but not its rolling
// update, and a vCPU count few nodes have, are rendered with a warning
// naming the field; the control, a range twice the pool's size and 8
// vCPUs, warns nothing.
func TestSizingWarnings(t *testing.T) {
	cases := map[string]struct {
		mutate func(*capmoxrender.KubernetesNodes)
		rng    capmoxrender.VMIDRange
		want   string
	}{
		"Surge": {mutate: func(n *capmoxrender.KubernetesNodes) { n.Spec.Replicas = replicas(5) }, rng: capmoxrender.VMIDRange{Start: 1000, End: 1007},
			want: `replicas 5: the VM id range 1000-1007 of Proxmox pool "tenant-e2e" holds 8 VM id(s), fewer than the 10 a rolling update needs`},
		"ManyCores": {mutate: func(n *capmoxrender.KubernetesNodes) { n.Spec.Resources.CPU = q("512") }, rng: capmoxrender.VMIDRange{Start: 1000, End: 1999},
			want: `resources.cpu 512 gives each worker 512 vCPUs: Proxmox VE starts a VM only on a node with at least as many logical CPUs (qemu-server refuses with "MAX n vcpus allowed per VM on this node")`},
		"Control": {mutate: func(n *capmoxrender.KubernetesNodes) { n.Spec.Replicas, n.Spec.Resources.CPU = replicas(5), q("8") },
			rng: capmoxrender.VMIDRange{Start: 1000, End: 1009}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var warned []string
			n := validNodes()
			tc.mutate(&n)
			o := capmoxrender.Options{VMIDRanges: map[string]capmoxrender.VMIDRange{"tenant-e2e": tc.rng}, Warn: func(m string) { warned = append(warned, m) }}
			if _, err := capmoxrender.RenderNodes(context.Background(), n, o); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && len(warned) > 0:
				t.Errorf("the control warned %q", warned)
			case tc.want != "" && (len(warned) != 1 || !strings.HasPrefix(warned[0], tc.want)):
				t.Errorf("want the warning %q, got %q", tc.want, warned)
			}
		})
	}
}

func TestVMIDRangeWarnsForAnotherPool(t *testing.T) {
	var warned []string
	o := capmoxrender.Options{VMIDRanges: map[string]capmoxrender.VMIDRange{"other": {Start: 1000, End: 1999}},
		Warn: func(m string) { warned = append(warned, m) }}
	s := machineSpec(t, validNodes(), o)
	if nested(s, "vmIDRange") != nil {
		t.Errorf("another pool's range is not this pool's: %v", nested(s, "vmIDRange"))
	}
	want := `proxmox.pool "tenant-e2e" is no tenant's pool with a vmIDRange, so capmox picks this pool's VM ids anywhere, and may clone at the id a ProxmoxMachine being deleted still records, whose delete then destroys the new VM (capmox issue 856): give the tenant whose pool it is a vmIDRange, or correct proxmox.pool`
	if len(warned) != 1 || warned[0] != want {
		t.Errorf("want the warning %q, got %q", want, warned)
	}
}

func replicas(n int32) *int32 { return &n }
