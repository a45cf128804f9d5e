package lab_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// csiTenant is testdata's tenant with the CSI driver on
// (kubernetes-csi.yaml) and one worker.
func csiTenant(t *testing.T) lab.Tenant {
	t.Helper()
	tn, err := lab.ReadTenant(filepath.Join("testdata", "kubernetes-csi.yaml"), filepath.Join("testdata", "nodes.yaml"))
	must(t, err)
	one := int32(1)
	tn.Pools[0].Spec.Replicas = &one
	return tn
}

// startCSITenant starts a lab, applies the CSI tenant and waits for its
// worker, initialised by the CCM, with the CSI driver registered on its
// Node, and for the CSI controller and its sidecars to run.
func startCSITenant(t *testing.T) (*lab.Lab, *lab.Applied, string) {
	t.Helper()
	ctx := context.Background()
	// A lab of its own: the CSI driver, its StorageClasses and the
	// attach-detach controller are the tenant API server's, which a
	// lab's tenants share (csiIsolation works around that).
	l := startLab(t, "")
	a, err := l.Apply(ctx, csiTenant(t))
	must(t, err)
	eventually(t, 4*time.Minute, "the worker runs", func() (bool, string) {
		running, state := machines(t, l.Client, "tenant-demo")
		return running == 1, state + "\n" + ccmTail(l, "tenant-demo")
	})
	node := nodesOfTenant(t, l, "tenant-demo")[0]
	eventually(t, 2*time.Minute, "the CSI controller runs and the driver is on the Node", func() (bool, string) {
		var cn storagev1.CSINode
		err := l.TenantClient.Get(ctx, client.ObjectKey{Name: node}, &cn)
		p, ok := podsOf(l, "tenant-demo")["kubernetes-demo-pcsi-controller"]
		return err == nil && len(cn.Spec.Drivers) == 1 && ok && len(p.Pids) == 4, fmt.Sprintf("CSINode %v (%v), pod %+v", cn.Spec, err, p)
	})
	return l, a, node
}

// TestCSI runs the real Proxmox CSI controller v0.18.1 with its
// sidecars in one lab: a volume's whole life for the tenant
// (VolumeLife), then that tenant's disks and VM out of another tenant's
// reach (Isolation), which starts from the first tenant's running worker.
// The two share the lab's tenant API server, whose CSI driver, storage
// classes and attach-detach controller every tenant of the lab would
// meet, so they run one after the other.
func TestCSI(t *testing.T) {
	t.Parallel()
	l, a, node := startCSITenant(t)
	t.Run("VolumeLife", func(t *testing.T) { csiVolumeLife(t, l, a, node) })
	t.Run("Isolation", func(t *testing.T) { csiIsolation(t, l, a, node) })
}

// csiVolumeLife takes a volume through its whole life with the real
// Proxmox CSI controller v0.18.1 and the CSI provisioner, attacher and
// resizer, run from the rendered <cluster>-pcsi-controller Deployment
// with the tenant's own CSI token, and the tenant control plane's
// kube-scheduler and kube-controller-manager (volume binder,
// attach-detach): a claim of the rendered StorageClass and a Pod that
// uses it → the volume vm-9999-<pv name> created on the tenant's storage
// on the Proxmox node of the Pod's VM (the driver's name; v0.18.1 owns
// every volume by VMID 9999) → attached to that VM (its configuration
// gains the disk as scsi1) → the claim expanded online (the disk grows
// to the new size; the file system's growth is the node plugin's) → the
// Pod deleted (the disk detached, not left as an unused disk) → the claim
// deleted (the volume freed). A claim of the Retain class keeps its volume
// on Proxmox once deleted. The fake answered every call (none denied, none
// unserved), and no log holds a token secret.
func csiVolumeLife(t *testing.T, l *lab.Lab, a *lab.Applied, node string) {
	ctx := context.Background()
	vmid, vmNode := vmOfNode(t, l, node)
	retained := ""
	for _, class := range []string{"proxmox-disks", "proxmox-disks-retain"} {
		name := "data" + strings.TrimPrefix(class, "proxmox-disks")
		pvc := claim(name, class, "1Gi")
		must(t, l.TenantClient.Create(ctx, pvc))
		pod := podWith(name, pvc.Name, node)
		must(t, l.TenantClient.Create(ctx, pod))

		var pv corev1.PersistentVolume
		eventually(t, 3*time.Minute, class+": the claim is bound to a volume the CSI controller created", func() (bool, string) {
			must(t, l.TenantClient.Get(ctx, client.ObjectKeyFromObject(pvc), pvc))
			if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
				return false, fmt.Sprintf("claim %s %s\n%s", pvc.Status.Phase, pvc.Annotations, csiTail(l, "csi-provisioner"))
			}
			must(t, l.TenantClient.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv))
			return true, ""
		})
		volid := "tenant-demo-disks:vm-9999-" + pv.Name
		wantHandle := fmt.Sprintf("%s/%s/%s", lab.Region, vmNode, volid[:strings.IndexByte(volid, ':')]) + "/vm-9999-" + pv.Name
		if pv.Spec.CSI == nil || pv.Spec.CSI.VolumeHandle != wantHandle {
			t.Errorf("%s: the volume handle is %v, want %s", class, pv.Spec.CSI, wantHandle)
		}
		vol, ok := volumeOn(l, vmNode, volid)
		if !ok || vol.Owner != 9999 || vol.Size != 1<<30 {
			t.Fatalf("%s: volume %s on %s: %+v (found %t), want 1 GiB owned by 9999", class, volid, vmNode, vol, ok)
		}
		t.Logf("%s: claim %s bound to %s, volume %s (%d bytes) on %s", class, pvc.Name, pv.Name, volid, vol.Size, vmNode)

		eventually(t, 3*time.Minute, class+": the volume is attached to the Pod's VM and the Pod runs", func() (bool, string) {
			conf, _, _ := l.PVE.VMConfig(vmid)
			must(t, l.TenantClient.Get(ctx, client.ObjectKeyFromObject(pod), pod))
			return strings.HasPrefix(conf["scsi1"], volid+",") && pod.Status.Phase == corev1.PodRunning,
				fmt.Sprintf("scsi1 %q, Pod %s\n%s", conf["scsi1"], pod.Status.Phase, csiTail(l, "csi-attacher"))
		})

		conf, _, _ := l.PVE.VMConfig(vmid)
		t.Logf("%s: attached to VM %d as scsi1 %s; Pod %s runs", class, vmid, conf["scsi1"], pod.Name)
		must(t, l.TenantClient.Get(ctx, client.ObjectKeyFromObject(pvc), pvc))
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		must(t, l.TenantClient.Update(ctx, pvc))
		eventually(t, 3*time.Minute, class+": the claim is expanded online and the disk grows", func() (bool, string) {
			conf, _, _ := l.PVE.VMConfig(vmid)
			vol, _ := volumeOn(l, vmNode, volid)
			must(t, l.TenantClient.Get(ctx, client.ObjectKey{Name: pv.Name}, &pv))
			capacity := pv.Spec.Capacity[corev1.ResourceStorage]
			return strings.Contains(conf["scsi1"], "size=2G") && vol.Size == 2<<30 && capacity.Cmp(resource.MustParse("2Gi")) == 0,
				fmt.Sprintf("scsi1 %q, volume %+v, PV capacity %s\n%s", conf["scsi1"], vol, capacity.String(), csiTail(l, "csi-resizer"))
		})

		must(t, l.TenantClient.Delete(ctx, pod))
		eventually(t, 3*time.Minute, class+": the Pod goes and the disk is detached", func() (bool, string) {
			conf, _, _ := l.PVE.VMConfig(vmid)
			err := l.TenantClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)
			return apierrors.IsNotFound(err) && !strings.Contains(fmt.Sprint(conf), "vm-9999-"+pv.Name),
				fmt.Sprintf("Pod %v, VM %d %v\n%s", err, vmid, conf, csiTail(l, "csi-attacher"))
		})

		must(t, l.TenantClient.Delete(ctx, pvc))
		retain := class == "proxmox-disks-retain"
		if retain {
			retained = volid
		}
		eventually(t, 3*time.Minute, class+": the claim goes, and the volume with it unless retained", func() (bool, string) {
			_, ok := volumeOn(l, vmNode, volid)
			err := l.TenantClient.Get(ctx, client.ObjectKey{Name: pv.Name}, &pv)
			if retain {
				return ok && err == nil && pv.Status.Phase == corev1.VolumeReleased, fmt.Sprintf("volume kept %t, PV %s %v", ok, pv.Status.Phase, err)
			}
			return !ok && apierrors.IsNotFound(err), fmt.Sprintf("volume left %t, PV %v\n%s", ok, err, csiTail(l, "csi-provisioner"))
		})
	}
	if d, u := l.PVE.Denied(), l.PVE.Unserved(); len(d)+len(u) > 0 {
		t.Errorf("denied %v, unserved %v", d, u)
	}
	checkNoSecretLogged(t, l, a)
	checkLeftovers(t, l, a, retained)
}

// checkLeftovers holds acl audit's LeftoverVolume to the volumes the real
// driver left: with the cluster alive, none (the retained volume is its
// cluster's); once the cluster is gone, the retained volume alone, the
// volume of the Delete class being freed already.
func checkLeftovers(t *testing.T, l *lab.Lab, a *lab.Applied, retained string) {
	t.Helper()
	cfg, err := liveacl.Read(context.Background(), l.PVE.Client())
	must(t, err)
	alive := []audit.Cluster{{Name: "tenant-demo/" + a.ClusterName, ControllerVMID: capmoxrender.ControllerVMID("tenant-demo", a.ClusterName)}}
	for _, tc := range []struct {
		name     string
		clusters []audit.Cluster
		want     int
	}{{"the cluster alive", alive, 0}, {"the cluster gone", []audit.Cluster{}, 1}} {
		rep, err := audit.RunWith(cfg, a.Spec, audit.Options{Clusters: tc.clusters})
		must(t, err)
		var got []string
		for _, f := range rep.Findings {
			if f.Code == audit.CodeLeftoverVolume {
				got = append(got, f.Message)
			}
		}
		if len(got) != tc.want || tc.want == 1 && !strings.HasPrefix(got[0], retained+" ") {
			t.Errorf("%s: LeftoverVolume findings %q, want %d (the retained volume)", tc.name, got, tc.want)
		}
	}
}

// vmOfNode is the VMID and Proxmox node of a tenant Node's VM.
func vmOfNode(t *testing.T, l *lab.Lab, node string) (int, string) {
	t.Helper()
	var n corev1.Node
	must(t, l.TenantClient.Get(context.Background(), client.ObjectKey{Name: node}, &n))
	for _, vm := range labVMs(l) {
		if vm.uuid == n.Status.NodeInfo.SystemUUID {
			return vm.vmid, vm.node
		}
	}
	t.Fatalf("no VM has the SMBIOS UUID of Node %s", node)
	return 0, ""
}

// volumeOn finds a volume on a Proxmox node of the fake.
func volumeOn(l *lab.Lab, node, volid string) (pvefake.VolumeInfo, bool) {
	for _, v := range l.PVE.Volumes() {
		if v.VolID == volid && v.Node == node {
			return v, true
		}
	}
	return pvefake.VolumeInfo{}, false
}

func claim(name, class, size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
}

// podWith is a Pod on node that mounts the claim.
func podWith(name, claimName, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: node},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}}}}
}

func csiTail(l *lab.Lab, container string) string {
	return container + ":\n" + tail(readFile(l.LogFile("tenant-demo", "kubernetes-demo-pcsi-controller", container)), 12) +
		"\n" + lab.CSIControllerContainer + ":\n" + tail(readFile(l.LogFile("tenant-demo", "kubernetes-demo-pcsi-controller", lab.CSIControllerContainer)), 12)
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}
