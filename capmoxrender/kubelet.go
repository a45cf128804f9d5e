package capmoxrender

import (
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Kubelet is KubernetesNodes.spec.kubelet: the reservations of each
// worker's kubelet, as the kubernetes-nodes chart takes them. Every field
// is optional; an empty one takes the chart's default.
type Kubelet struct {
	// SystemReservedMemory and KubeReservedMemory are held back for the
	// host and for the kubelet and container runtime (default: 5% of the
	// worker's memory, at least 256Mi and at most 1Gi, each).
	SystemReservedMemory *Quantity `json:"systemReservedMemory,omitempty"`
	KubeReservedMemory   *Quantity `json:"kubeReservedMemory,omitempty"`
	// SystemReservedCPU and KubeReservedCPU likewise (default: 5% of the
	// worker's CPU, at least 50m and at most 500m, each).
	SystemReservedCPU *Quantity `json:"systemReservedCpu,omitempty"`
	KubeReservedCPU   *Quantity `json:"kubeReservedCpu,omitempty"`
	// EvictionHardMemory and EvictionSoftMemory are the kubelet's memory
	// eviction thresholds, a percentage of the worker's memory or a memory
	// quantity, both of one kind, hard below soft (default 7% and 10%).
	EvictionHardMemory *Quantity `json:"evictionHardMemory,omitempty"`
	EvictionSoftMemory *Quantity `json:"evictionSoftMemory,omitempty"`
}

// Defaults of the kubelet's eviction thresholds, as the chart's.
const (
	DefaultEvictionHardMemory = "7%"
	DefaultEvictionSoftMemory = "10%"
)

// Capacity annotations the Cluster Autoscaler's clusterapi provider reads
// from a MachineDeployment to build a node of a group with no Machine yet
// (scale from zero), since capmox's ProxmoxMachineTemplate carries no
// status.capacity.
const (
	CapacityCPU           = "capacity.cluster-autoscaler.kubernetes.io/cpu"
	CapacityMemory        = "capacity.cluster-autoscaler.kubernetes.io/memory"
	CapacityEphemeralDisk = "capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk"
	CapacityLabels        = "capacity.cluster-autoscaler.kubernetes.io/labels"
)

// kubeletPlan is what the kubelet reserves on each worker, as the strings
// its configuration takes, and what is left for Pods.
type kubeletPlan struct {
	systemMemory, kubeMemory, systemCPU, kubeCPU string
	evictionHard, evictionSoft                   string
	allocatableMiB, allocatableMilli             int64
}

// planKubelet works out the reservations of a worker of p's size (its VM's
// cores and memory) the way the kubernetes-nodes chart does, refuses what
// the chart refuses, and keeps what is allocatable for the autoscaler.
func planKubelet(p *nodesPlan, s NodesSpec, _ Options) error {
	k := s.Kubelet
	memBytes := int64(p.memoryMiB) * mib
	cpuMilli := int64(p.cores) * 1000
	autoMiB := min(max(int64(p.memoryMiB)*5/100, 256), 1024)
	autoMilli := min(max(cpuMilli*5/100, 50), 500)
	var err error
	kp := kubeletPlan{}
	var sysMem, kubeMem, sysCPU, kubeCPU int64
	if kp.systemMemory, sysMem, err = reservation("kubelet.systemReservedMemory", k.SystemReservedMemory, fmt.Sprintf("%dMi", autoMiB), false); err != nil {
		return err
	}
	if kp.kubeMemory, kubeMem, err = reservation("kubelet.kubeReservedMemory", k.KubeReservedMemory, fmt.Sprintf("%dMi", autoMiB), false); err != nil {
		return err
	}
	if kp.systemCPU, sysCPU, err = reservation("kubelet.systemReservedCpu", k.SystemReservedCPU, fmt.Sprintf("%dm", autoMilli), true); err != nil {
		return err
	}
	if kp.kubeCPU, kubeCPU, err = reservation("kubelet.kubeReservedCpu", k.KubeReservedCPU, fmt.Sprintf("%dm", autoMilli), true); err != nil {
		return err
	}
	hardBytes, err := evictionThresholds(&kp, k, memBytes)
	if err != nil {
		return err
	}
	if reserved := sysMem + kubeMem + hardBytes; reserved >= memBytes {
		return refuse("kubelet", "kubelet: the reserved memory (systemReservedMemory %s + kubeReservedMemory %s + evictionHardMemory %s) must be less than the worker's %dMi: lower a reservation or give the workers more memory",
			kp.systemMemory, kp.kubeMemory, kp.evictionHard, p.memoryMiB)
	}
	if sysCPU+kubeCPU >= cpuMilli {
		return refuse("kubelet", "kubelet: the reserved CPU (systemReservedCpu %s + kubeReservedCpu %s) must be less than the worker's %d cores: lower a reservation or give the workers more CPU",
			kp.systemCPU, kp.kubeCPU, p.cores)
	}
	kp.allocatableMiB = (memBytes - sysMem - kubeMem - hardBytes) / mib
	kp.allocatableMilli = cpuMilli - sysCPU - kubeCPU
	p.kubelet = kp
	return nil
}

// reservation reads one reservation (its default when unset) and returns
// it as written with its value in bytes (memory) or millicores (CPU).
func reservation(field string, q *Quantity, def string, cpu bool) (string, int64, error) {
	v := def
	if q != nil && *q != "" {
		v = string(*q)
	}
	parsed, err := resource.ParseQuantity(v)
	if err != nil || strings.ContainsAny(v, " \t") {
		kind := "memory quantity such as 512Mi or 1Gi"
		if cpu {
			kind = "CPU quantity such as 100m or 0.5"
		}
		return "", 0, refuse(field, "%s %q is not a %s", field, v, kind)
	}
	n := parsed.Value()
	if cpu {
		n = parsed.MilliValue()
	}
	if parsed.Sign() <= 0 || n <= 0 {
		return "", 0, refuse(field, "%s %q must be above zero: leave it out for the default", field, v)
	}
	return v, n, nil
}

// evictionThresholds reads the memory eviction thresholds into kp and
// returns the hard one in bytes of a worker of memBytes.
func evictionThresholds(kp *kubeletPlan, k Kubelet, memBytes int64) (int64, error) {
	kp.evictionHard, kp.evictionSoft = or(quantityOf(k.EvictionHardMemory), DefaultEvictionHardMemory), or(quantityOf(k.EvictionSoftMemory), DefaultEvictionSoftMemory)
	hard, hardPct, err := threshold("kubelet.evictionHardMemory", kp.evictionHard, memBytes)
	if err != nil {
		return 0, err
	}
	soft, softPct, err := threshold("kubelet.evictionSoftMemory", kp.evictionSoft, memBytes)
	if err != nil {
		return 0, err
	}
	switch {
	case hardPct != softPct:
		return 0, refuse("kubelet.evictionHardMemory", "kubelet.evictionHardMemory %s and kubelet.evictionSoftMemory %s must be of one kind, both percentages or both memory quantities", kp.evictionHard, kp.evictionSoft)
	case hard >= soft:
		return 0, refuse("kubelet.evictionHardMemory", "kubelet.evictionHardMemory %s must be below kubelet.evictionSoftMemory %s: the kubelet evicts softly first, then hard", kp.evictionHard, kp.evictionSoft)
	}
	return hard, nil
}

// threshold reads an eviction threshold, "N%" (0 < N <= 100) of memBytes
// or a memory quantity, as bytes.
func threshold(field, v string, memBytes int64) (int64, bool, error) {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		r, okr := new(big.Rat).SetString(pct)
		if !okr || strings.ContainsAny(pct, "eE/ ") || r.Sign() <= 0 || r.Cmp(big.NewRat(100, 1)) > 0 {
			return 0, true, refuse(field, "%s %q is not a percentage above 0 and at most 100", field, v)
		}
		b := new(big.Rat).Mul(r, big.NewRat(memBytes, 100))
		return new(big.Int).Quo(b.Num(), b.Denom()).Int64(), true, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 || strings.ContainsAny(v, " \t") {
		return 0, false, refuse(field, "%s %q is neither a percentage such as 7%% nor a memory quantity above zero such as 500Mi", field, v)
	}
	return q.Value(), false, nil
}

// extraConfig is the kubelet configuration the Talos machine config gives
// each worker (machine.kubelet.extraConfig): the reservations and the
// eviction thresholds, with the chart's fixed disk thresholds beside them.
func (k kubeletPlan) extraConfig() map[string]any {
	return map[string]any{
		"systemReserved": map[string]string{"cpu": k.systemCPU, "memory": k.systemMemory},
		"kubeReserved":   map[string]string{"cpu": k.kubeCPU, "memory": k.kubeMemory},
		"evictionHard": map[string]string{"memory.available": k.evictionHard, "nodefs.available": "10%",
			"imagefs.available": "15%", "nodefs.inodesFree": "5%"},
		"evictionSoft": map[string]string{"memory.available": k.evictionSoft, "nodefs.available": "15%",
			"imagefs.available": "20%"},
		"evictionSoftGracePeriod": map[string]string{"memory.available": "1m30s", "nodefs.available": "1m30s",
			"imagefs.available": "1m30s"},
		"evictionMinimumReclaim": map[string]string{"memory.available": "256Mi"},
	}
}

// capacityAnnotations are the autoscaler's view of one worker of the
// pool: what is allocatable after the kubelet's reservations, the system
// disk when its size is known, and the role labels the Node gets.
func capacityAnnotations(p nodesPlan) map[string]string {
	out := map[string]string{
		CapacityCPU:    strconv.FormatInt(p.kubelet.allocatableMilli, 10) + "m",
		CapacityMemory: strconv.FormatInt(p.kubelet.allocatableMiB, 10) + "Mi",
	}
	if p.diskCapacity != "" {
		out[CapacityEphemeralDisk] = p.diskCapacity
	}
	if len(p.roles) > 0 {
		labels := make([]string, 0, len(p.roles))
		for _, r := range p.roles {
			labels = append(labels, "node-role.kubernetes.io/"+r+"=")
		}
		sort.Strings(labels)
		out[CapacityLabels] = strings.Join(labels, ",")
	}
	gpuCapacity(p, out)
	return out
}

// planImages takes the pool's own kubectl image (images.kubectl), held to
// the rules of --image kubectl: an image reference, pinned by digest when
// digests are required.
func planImages(p *nodesPlan, s NodesSpec, o Options) error {
	v := s.Images.Kubectl
	if v == "" {
		return nil
	}
	ref, err := ParseImage(v)
	if err != nil {
		return refuse("images.kubectl", "images.kubectl: %v", err)
	}
	if o.RequireDigests && !ref.Pinned() {
		return refuse("images.kubectl", "images.kubectl is not pinned by digest, and digests are required: resolve its tag (crane digest IMAGE:TAG) and write IMAGE:TAG@sha256:<digest>")
	}
	p.kubectlImage = v
	return nil
}
