package verify

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// tenantOf is a fake tenant cluster holding objs.
func tenantOf(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	return management(t, nil, objs...)
}

func tenantNode(name, pid string, labels map[string]string, taint bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: pid}}
	if taint {
		n.Spec.Taints = []corev1.Taint{{Key: TaintUninitialized, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	return n
}

// capiMachine is a Machine of tenant-a/<cluster> in gvk's version, paired
// with nodeRef, whose ProxmoxMachine is <name>-pm.
func capiMachine(gvk schema.GroupVersionKind, name, cluster, pid, nodeRef string) *unstructured.Unstructured {
	u := object(gvk, name, map[string]any{
		"spec": map[string]any{"clusterName": cluster, "providerID": pid, "infrastructureRef": map[string]any{"name": name + "-pm"}},
	})
	u.SetLabels(map[string]string{capmox.LabelClusterName: cluster})
	if nodeRef != "" {
		_ = unstructured.SetNestedField(u.Object, nodeRef, "status", "nodeRef", "name")
	}
	return u
}

// TestGatherPairsNodesWithMachines gathers a cluster read with
// --capi-version v1beta1 and capmox v0.7's ProxmoxMachines, and judges its
// rows: another cluster's Machine of the namespace makes none, and the VM
// column and the asked disk come from the ProxmoxMachine.
func TestGatherPairsNodesWithMachines(t *testing.T) {
	w1 := tenantNode("w1", uuidA, topo, false)
	w1.Status.Capacity = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("18Gi")}
	tenant := tenantOf(t, w1, tenantNode("w2", "", nil, true))
	pm := object(pmV1alpha1GVK, "m1-pm", map[string]any{
		"spec": map[string]any{"virtualMachineID": int64(119), "providerID": uuidA,
			"disks": map[string]any{"bootVolume": map[string]any{"disk": "scsi0", "sizeGb": int64(50)}}},
		"status": map[string]any{"proxmoxNode": "pve1", "ready": true},
	})
	mgmt := management(t, []schema.GroupVersionKind{machineV1beta1GVK, pmV1alpha1GVK}, pm,
		capiMachine(machineV1beta1GVK, "m1", "kubernetes-prod", uuidA, "w1"),
		capiMachine(machineV1beta1GVK, "m2", "kubernetes-prod", uuidB, "w2"),
		capiMachine(machineV1beta1GVK, "other", "kubernetes-dev", "proxmox://ffffffff-ffff-4fff-8fff-ffffffffffff", ""))
	s := gather(t, mgmt, tenant, Target{Namespace: "tenant-a", Cluster: "kubernetes-prod", CAPIVersion: "v1beta1"})
	rows := Judge(s).Rows
	want := []string{
		"w1/m1:its filesystem holds 18.0 GiB, but the pool asked for a 50 GiB system disk (disks.bootVolume)",
		"w2/m2:no providerID|no topology.kubernetes.io/region label|no topology.kubernetes.io/zone label|still tainted node.cloudprovider.kubernetes.io/uninitialized",
	}
	if diff := cmp.Diff(want, summarize(rows)); diff != "" {
		t.Errorf("rows of the kubernetes-prod cluster only (-want +got):\n%s", diff)
	}
	if rows[0].VM != "119@pve1" || rows[1].VM != "" {
		t.Errorf("the VM column comes from the ProxmoxMachine: got %q and %q", rows[0].VM, rows[1].VM)
	}
}

// TestGatherReadsOnce: Gather lists the namespace's Machines and
// ProxmoxMachines once each, whatever the checks make of them, and reads
// no ProxmoxMachine by name.
func TestGatherReadsOnce(t *testing.T) {
	var objs []client.Object
	for _, w := range [][]client.Object{haWorker("ha-1", "md-ha", "pve1", true), haWorker("ha-2", "md-ha", "pve1", true)} {
		objs = append(objs, w...)
	}
	reads := map[string]int{}
	mgmt := counting(management(t, []schema.GroupVersionKind{machineGVK, pmGVK, poolGVK, talosConfigGVK, networkGVK}, objs...), reads)
	s := gather(t, mgmt, tenantOf(t), Target{Namespace: "tenant-a", Cluster: "kubernetes-a", CAPIVersion: "v1beta2"})
	if got := codesOf(t, Judge(s).Findings); !cmp.Equal(got, []string{CodeHAWorkersShareNode}) {
		t.Errorf("findings %v, want the HA pool's workers sharing pve1", got)
	}
	for _, read := range []string{"list Machine", "list ProxmoxMachine"} {
		if reads[read] != 1 {
			t.Errorf("%s: %d times, want once (reads: %v)", read, reads[read], reads)
		}
	}
	if reads["get ProxmoxMachine"] != 0 {
		t.Errorf("a ProxmoxMachine was read by name %d times (reads: %v)", reads["get ProxmoxMachine"], reads)
	}
}

// TestGatherManagement reads every part of a management cluster into the
// snapshot; a cluster that serves none of the optional kinds gives their
// absence, and no error.
func TestGatherManagement(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "kubernetes-a"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: "lb"}, {IP: "192.0.2.10"}}}}}
	ccm := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "kubernetes-a-pccm"}, Status: appsv1.DeploymentStatus{AvailableReplicas: 1}}
	ccm.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: capmox.CredentialsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "ccm"}}}}
	csi := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "kubernetes-a-pcsi-controller"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "ccm"}, Data: map[string][]byte{"region": []byte(" pve-eu1\n"), "token_secret": []byte("never-kept")}}
	pc := object(pcGVK, "kubernetes-a", nil)
	pc.SetAnnotations(map[string]string{capmox.AnnotationManagedBy: ""})
	m := capiMachine(machineGVK, "m1", "kubernetes-a", "", "")
	_ = unstructured.SetNestedMap(m.Object, map[string]any{"kind": "TalosConfig", "name": "tc1"}, "spec", "bootstrap", "configRef")
	tc := object(talosConfigGVK, "tc1", map[string]any{"spec": map[string]any{"configPatches": []any{
		map[string]any{"op": "add", "path": "/machine/network/nameservers", "value": []any{"1.1.1.1"}},
		map[string]any{"op": "add", "path": capmox.HostEntriesPath, "value": []any{map[string]any{"ip": "192.0.2.10", "aliases": []any{"kubernetes-a.tenant-a.svc"}}}},
	}}})
	pool := object(poolGVK, "kubernetes-a-v4-icip", map[string]any{"status": map[string]any{"ipAddresses": map[string]any{"free": int64(0)}}})
	pm := object(pmGVK, "pm-m1", map[string]any{
		"spec":   map[string]any{"virtualMachineID": int64(101), "pool": "tenant-a", "disks": map[string]any{"bootVolume": map[string]any{"disk": "scsi0", "sizeGb": int64(20)}}},
		"status": map[string]any{"proxmoxNode": "pve2", "initialization": map[string]any{"provisioned": true}},
	})
	pm.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: machineGVK.GroupVersion().String(), Kind: "Machine", Name: "m1", UID: "u-m1"}})
	all := []schema.GroupVersionKind{machineGVK, pmGVK, pcGVK, poolGVK, talosConfigGVK, networkGVK}
	s := gather(t, management(t, all, svc, ccm, csi, secret, pc, m, tc, pool, pm, network("tenant-a", "net1", "False", "NoFailover")), nil,
		Target{Namespace: "tenant-a", Cluster: "kubernetes-a", CAPIVersion: "v1beta2"})
	got := s.Management
	got.Machines = nil
	want := Management{IPAMServed: true, ProxmoxCluster: &ProxmoxCluster{Annotations: map[string]string{capmox.AnnotationManagedBy: ""}},
		Service:         &Service{Type: "LoadBalancer", LoadBalancerIP: "192.0.2.10"},
		ProxmoxMachines: []ProxmoxMachine{{Name: "pm-m1", VMID: 101, ProxmoxNode: "pve2", Pool: "tenant-a", BootVolumeGiB: 20, Provisioned: true, Machine: "m1"}},
		TalosConfigs:    map[string][]HostEntry{"tc1": {{IP: "192.0.2.10", Aliases: []string{"kubernetes-a.tenant-a.svc"}}}},
		CCM:             &Deployment{Replicas: 1, Available: 1}, CSIController: &Deployment{Replicas: 2},
		Region: "pve-eu1", RegionSource: "Secret tenant-a/ccm",
		IPPool: &IPPool{Name: "kubernetes-a-v4-icip", FreeKnown: true},
	}
	opts := cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Networks" }, cmp.Ignore())
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("the management cluster's snapshot (-want +got):\n%s", diff)
	}
	if len(got.Networks) != 1 || got.Networks[0].Failover == nil || got.Networks[0].Failover.Reason != "NoFailover" {
		t.Errorf("networks %+v", got.Networks)
	}

	bare := gather(t, management(t, []schema.GroupVersionKind{machineGVK}), nil, Target{Namespace: "tenant-a", Cluster: "kubernetes-a", CAPIVersion: "v1beta2"})
	if diff := cmp.Diff(Management{Machines: []Machine{}}, bare.Management); diff != "" {
		t.Errorf("a management cluster without capmox, IPAM, Talos or the controller (-want +got):\n%s", diff)
	}
}

// TestGatherTenantExpectations gathers a management cluster running the
// CCM (its credentials Secret naming region pve-eu1) and the CSI
// controller, and a tenant whose CSI node plugin is ready on w1 only.
func TestGatherTenantExpectations(t *testing.T) {
	node := func(name, pid, region string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelRegion: region, LabelZone: "pve1"}}, Spec: corev1.NodeSpec{ProviderID: pid}}
	}
	sel := map[string]string{"app.kubernetes.io/name": "proxmox-csi-plugin", "app.kubernetes.io/component": "node"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "proxmox-csi-proxmox-csi-plugin-node", Namespace: "kube-system", Labels: map[string]string{LabelCSIName: CSIPluginName}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}}}
	pod := func(name, node string, ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: sel}, Spec: corev1.PodSpec{NodeName: node}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		} else {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "node", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
		}
		return p
	}
	stray := pod("other-app", "w2", true)
	stray.Labels = map[string]string{"app": "other"}
	tenant := tenantOf(t, node("w1", uuidA, "pve-eu1"), node("w2", uuidB, "pve-old"), ds,
		pod("csi-node-1", "w1", true), pod("csi-node-2", "w2", false), stray)

	deploy := func(name, secret string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant-a"}}
		d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "proxmox-credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}}
		return d
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ccm-creds", Namespace: "tenant-a"},
		Data: map[string][]byte{"region": []byte("pve-eu1\n"), "token_secret": []byte("never-shown")}}
	machines := []client.Object{capiMachine(machineV1beta1GVK, "m1", "kubernetes-prod", uuidA, "w1"), capiMachine(machineV1beta1GVK, "m2", "kubernetes-prod", uuidB, "w2")}
	target := Target{Namespace: "tenant-a", Cluster: "kubernetes-prod", CAPIVersion: "v1beta1", TenantKubeconfig: "tenant.kubeconfig"}
	kinds := []schema.GroupVersionKind{machineV1beta1GVK}

	t.Run("ControllersRunning", func(t *testing.T) {
		mgmt := management(t, kinds, append(machines, secret,
			deploy("kubernetes-prod-pccm", "ccm-creds"), deploy("kubernetes-prod-pcsi-controller", "csi-creds"))...)
		rows := Judge(gather(t, mgmt, tenant, target)).Rows
		want := []string{"w1:", "w2:" + CodeRegionMismatch + "|" + CodeCSINodeNotReady}
		if diff := cmp.Diff(want, codes(rows)); diff != "" {
			t.Fatalf("w2 has the old region and a crash-looping CSI node Pod (-want +got):\n%s", diff)
		}
		all := strings.Join(append(rows[1].Problems, rows[1].Fixes...), "\n")
		for _, s := range []string{"CrashLoopBackOff", "kubectl --kubeconfig tenant.kubeconfig -n kube-system logs csi-node-2 --all-containers", "Secret tenant-a/ccm-creds", "kubectl -n tenant-a delete machine m2"} {
			if !strings.Contains(all, s) {
				t.Errorf("w2's problems and fixes lack %q:\n%s", s, all)
			}
		}
		if strings.Contains(all, "never-shown") {
			t.Error("a credential value reached a message")
		}
	})
	t.Run("NoControllers", func(t *testing.T) {
		rows := Judge(gather(t, management(t, kinds, machines...), tenant, target)).Rows
		if diff := cmp.Diff([]string{"w1:", "w2:"}, codes(rows)); diff != "" {
			t.Errorf("without the CCM and CSI Deployments neither region nor CSI Pods are judged (-want +got):\n%s", diff)
		}
	})
}

// TestGatherProxmox reads the HA resources the controller made and the
// guests a token sees; a token that may not read the HA resources is
// noted, not an error.
func TestGatherProxmox(t *testing.T) {
	mgmt := management(t, []schema.GroupVersionKind{machineGVK})
	for name, tc := range map[string]struct {
		api  fakePVE
		want Proxmox
	}{
		"Readable": {api: fakePVE{ha: `[{"sid":"vm:101","comment":"pxsubstrate machine tenant-a/m1"},{"sid":"vm:102","comment":"by hand"}]`,
			vms: `[{"id":"qemu/101","type":"qemu","vmid":101,"name":"m1","node":"pve1","pool":"tenant-a","status":"running"},{"id":"qemu/9000","type":"qemu","vmid":9000,"name":"talos","node":"pve1","template":1}]`},
			want: Proxmox{TokenID: "capmox@pve!tk", HAResources: []HAResource{{SID: "vm:101", Machine: "tenant-a/m1"}},
				VMs: []PoolVM{{VMID: 101, Name: "m1", Node: "pve1", Pool: "tenant-a", Status: "running"}, {VMID: 9000, Name: "talos", Node: "pve1", Template: true}}}},
		"HAHidden": {api: fakePVE{vms: `[]`}, want: Proxmox{TokenID: "capmox@pve!tk", HAHidden: true}},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Gather(context.Background(), Sources{Management: mgmt, Mapper: mgmt.RESTMapper(), Proxmox: tc.api, ProxmoxTokenID: "capmox@pve!tk"},
				Target{Namespace: "tenant-a", Cluster: "kubernetes-a", CAPIVersion: "v1beta2"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tc.want, s.Proxmox); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}
