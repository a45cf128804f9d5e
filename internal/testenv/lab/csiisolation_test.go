package lab_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// csiIsolation: tenant B's real CSI controller, with B's CSI token,
// is asked to reach tenant A's disks and VM. The lab's tenants share one
// tenant API server, so A's CSI controller is scaled to zero once A's
// volume was attached and detached again, and B's alone serves the API
// server.
//
//   - A PersistentVolume of B whose volumeHandle names A's volume, used by
//     a Pod on B's Node: B's attach fails with PVE's 403 on A's storage
//     (Datastore.Audit or Datastore.AllocateSpace on /storage/<A's
//     storage>, which the CSI client logs as "not authorized to access
//     endpoint").
//   - B's Node claiming A's VM (its CSINode's node ID <node>/<A's VMID>, as
//     the node plugin writes it from an SMBIOS serial i=<vmid>): B's
//     attach of B's own volume fails before any call on A's VM, since the
//     VM list PVE gives B's token does not hold A's VM ("vm not found").
//
// Either way A's VM's configuration and A's volume are unchanged.
func csiIsolation(t *testing.T, l *lab.Lab, a *lab.Applied, aNode string) {
	ctx := context.Background()
	aVMID, aPVE := vmOfNode(t, l, aNode)
	pvc := claim("a-data", "proxmox-disks", "1Gi")
	must(t, l.TenantClient.Create(ctx, pvc))
	aPod := podWith("a-app", pvc.Name, aNode)
	must(t, l.TenantClient.Create(ctx, aPod))
	var aPV corev1.PersistentVolume
	eventually(t, 3*time.Minute, "tenant A's volume is attached to A's VM", func() (bool, string) {
		must(t, l.TenantClient.Get(ctx, client.ObjectKeyFromObject(pvc), pvc))
		if pvc.Spec.VolumeName == "" {
			return false, "unbound"
		}
		must(t, l.TenantClient.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &aPV))
		conf, _, _ := l.PVE.VMConfig(aVMID)
		return strings.Contains(conf["scsi1"], aPV.Name), fmt.Sprint(conf)
	})
	// A's Pod goes and A's volume is detached: on one API server the
	// attach-detach controller would refuse a second attachment of the
	// same volume handle (Multi-Attach) before any CSI controller is asked;
	// two tenants' clusters share no such view.
	must(t, l.TenantClient.Delete(ctx, aPod))
	eventually(t, 3*time.Minute, "tenant A's volume is detached", func() (bool, string) {
		conf, _, _ := l.PVE.VMConfig(aVMID)
		return !strings.Contains(fmt.Sprint(conf), aPV.Name), fmt.Sprint(conf)
	})
	scale(t, l, "tenant-demo", "kubernetes-demo-pcsi-controller", 0)
	eventually(t, time.Minute, "tenant A's CSI controller stops", func() (bool, string) {
		_, ok := podsOf(l, "tenant-demo")["kubernetes-demo-pcsi-controller"]
		return !ok, "still running"
	})
	aConf, _, _ := l.PVE.VMConfig(aVMID)
	aVolid := "tenant-demo-disks:vm-9999-" + aPV.Name
	aVol, ok := volumeOn(l, aPVE, aVolid)
	if !ok {
		t.Fatalf("no volume %s on %s", aVolid, aPVE)
	}

	b := otherTenant(t, "tenant-other", "10.0.100.40-10.0.100.49", "kubernetes-csi.yaml", "nodes.yaml")
	one := int32(1)
	b.Pools[0].Spec.Replicas = &one
	bApplied, err := l.Apply(ctx, b)
	must(t, err)
	eventually(t, 4*time.Minute, "tenant B's worker runs with B's CSI controller", func() (bool, string) {
		running, state := machines(t, l.Client, "tenant-other")
		p, ok := podsOf(l, "tenant-other")["kubernetes-demo-pcsi-controller"]
		return running == 1 && ok && len(p.Pids) == 4, state
	})
	bNode := nodesOfTenant(t, l, "tenant-other")[0]
	bVMID, _ := vmOfNode(t, l, bNode)
	eventually(t, time.Minute, "the CSI driver is on B's Node", func() (bool, string) {
		var cn storagev1.CSINode
		err := l.TenantClient.Get(ctx, client.ObjectKey{Name: bNode}, &cn)
		return err == nil && len(cn.Spec.Drivers) == 1, fmt.Sprint(cn.Spec, err)
	})
	l.PVE.ResetRequests()

	// A PV of B naming A's volume.
	steal := staticPV("b-steal", aPV.Spec.CSI.VolumeHandle, aPV.Spec.CSI.VolumeAttributes)
	must(t, l.TenantClient.Create(ctx, steal))
	stealClaim := claim("b-steal", "", "1Gi")
	stealClaim.Spec.VolumeName = steal.Name
	must(t, l.TenantClient.Create(ctx, stealClaim))
	must(t, l.TenantClient.Create(ctx, podWith("b-steal", stealClaim.Name, bNode)))
	storage := "/api2/json/nodes/" + aPVE + "/storage/tenant-demo-disks/status"
	eventually(t, 3*time.Minute, "B's attach of A's volume is refused with PVE's 403", func() (bool, string) {
		denied := slices.ContainsFunc(l.PVE.Denied(), func(r pvefake.Request) bool { return r.Path == storage && r.Status == 403 })
		log := csiLog(l, "tenant-other")
		return denied && strings.Contains(log, "not authorized to access endpoint") && strings.Contains(log, "ControllerPublishVolume: failed to check volume"),
			fmt.Sprintf("denied %v\n%s\n%s", l.PVE.Denied(), tail(log, 10), volumeState(t, l, "tenant-other"))
	})

	// B's Node claiming A's VM, for a volume of B's own.
	claimVM(t, l, bNode, fmt.Sprintf("%s/%d", bNode, aVMID))
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	must(t, l.TenantClient.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "other-disks"}, Provisioner: lab.CSIDriverName,
		VolumeBindingMode: &mode, Parameters: map[string]string{"storage": "tenant-other-disks"}}))
	own := claim("b-own", "other-disks", "1Gi")
	must(t, l.TenantClient.Create(ctx, own))
	must(t, l.TenantClient.Create(ctx, podWith("b-own", own.Name, bNode)))
	eventually(t, 3*time.Minute, "B's attach to A's VM fails: B's token does not see it", func() (bool, string) {
		log := csiLog(l, "tenant-other")
		return strings.Contains(log, "ControllerPublishVolume: failed to attach volume") &&
			strings.Contains(log, fmt.Sprintf("vmID=%d", aVMID)), tail(log, 10)
	})

	if conf, _, _ := l.PVE.VMConfig(aVMID); fmt.Sprint(conf) != fmt.Sprint(aConf) {
		t.Errorf("tenant A's VM %d changed:\nbefore %v\nafter  %v", aVMID, aConf, conf)
	}
	if v, ok := volumeOn(l, aPVE, aVolid); !ok || v != aVol {
		t.Errorf("tenant A's volume changed: %+v (present %t), was %+v", v, ok, aVol)
	}
	if conf, _, _ := l.PVE.VMConfig(bVMID); strings.Contains(fmt.Sprint(conf), aPV.Name) {
		t.Errorf("tenant B's VM %d got A's disk: %v", bVMID, conf)
	}
	claimVM(t, l, bNode, bNode) // B's Node names itself again, as the node agent registers it
	shareStorage(t, l, a, bApplied, aPV.Name, bVMID)
}

// shareStorage shows what a storage two tenants share does: B's CSI token
// granted CozyCSIStorage on A's storage by hand (acl plan refuses a
// storage listed for two tenants, so only a hand-made ACL or a shared
// Ceph pool's does this). With Datastore.Allocate there, PVE's volume
// access check lets the token use any volume of the storage, whichever VM
// owns it: B's pending attach of A's volume now succeeds, and A's disk is
// on B's VM. Nothing but the ACL scopes a volume; acl audit names the
// grant CrossTenantReach.
func shareStorage(t *testing.T, l *lab.Lab, a, b *lab.Applied, aVolume string, bVMID int) {
	t.Helper()
	ctx := context.Background()
	// A token with privilege separation holds what both it and its user
	// hold: the grant is made to both, as acl plan makes its own.
	user, _, _ := strings.Cut(b.CSITokenID, "!")
	must(t, l.PVE.Client().Put(ctx, "/access/acl", map[string]any{"path": "/storage/tenant-demo-disks", "roles": "CozyCSIStorage",
		"users": user, "tokens": b.CSITokenID, "propagate": 0}, nil))
	// The attacher backs off a failing attachment for minutes; a new
	// VolumeAttachment, which the attach-detach controller makes at once,
	// is tried at once.
	var vas storagev1.VolumeAttachmentList
	must(t, l.TenantClient.List(ctx, &vas))
	for _, va := range vas.Items {
		if pv := va.Spec.Source.PersistentVolumeName; pv != nil && *pv == "b-steal" {
			must(t, l.TenantClient.Delete(ctx, &va))
		}
	}
	eventually(t, 5*time.Minute, "on a storage both tenants reach, B's attach of A's volume succeeds", func() (bool, string) {
		conf, _, _ := l.PVE.VMConfig(bVMID)
		return strings.Contains(fmt.Sprint(conf), aVolume), fmt.Sprintf("B's VM %v\n%s", conf, volumeState(t, l, "tenant-other"))
	})
	cfg, err := liveacl.Read(ctx, l.PVE.Client())
	must(t, err)
	// The lab's tenants share its one VLAN, which a specification of both
	// refuses; the audit here is about storage.
	others := slices.Clone(b.Spec.Tenants)
	for i := range others {
		others[i].Networks = nil
	}
	spec := *a.Spec
	spec.Tenants = append(slices.Clone(a.Spec.Tenants), others...)
	rep, err := audit.RunWith(cfg, &spec, audit.Options{})
	must(t, err)
	found := slices.ContainsFunc(rep.Findings, func(f audit.Finding) bool {
		return f.Code == audit.CodeCrossTenantReach && f.Path == "/storage/tenant-demo-disks" && (f.Subject == b.CSITokenID || strings.Contains(f.Message, b.CSITokenID))
	})
	if !found {
		t.Errorf("acl audit must name B's CSI token's reach into A's storage as CrossTenantReach: %+v", rep.Findings)
	}
	t.Logf("a storage both tenants reach: A's volume %s attached to B's VM %d; acl audit: CrossTenantReach on /storage/tenant-demo-disks", aVolume, bVMID)
}

// claimVM rewrites the driver's entry in the Node's CSINode to the node
// ID claimed, as a tenant's administrator may: an entry is immutable, so
// it is removed and added again (the node agent adds its own back when it
// finds none; this loop wins).
func claimVM(t *testing.T, l *lab.Lab, node, claimed string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var cn storagev1.CSINode
		must(t, l.TenantClient.Get(ctx, client.ObjectKey{Name: node}, &cn))
		switch {
		case len(cn.Spec.Drivers) == 1 && cn.Spec.Drivers[0].NodeID == claimed:
			return
		case len(cn.Spec.Drivers) == 1:
			d := cn.Spec.Drivers[0]
			cn.Spec.Drivers = nil
			if l.TenantClient.Update(ctx, &cn) == nil {
				d.NodeID = claimed
				cn.Spec.Drivers = []storagev1.CSINodeDriver{d}
				_ = l.TenantClient.Update(ctx, &cn)
			}
		}
	}
	t.Fatalf("CSINode %s does not take the node ID %s", node, claimed)
}

// staticPV is a PersistentVolume of the Proxmox CSI driver for a volume
// handle, as an administrator writes one by hand.
func staticPV(name, handle string, attrs map[string]string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: name},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: lab.CSIDriverName,
			VolumeHandle: handle, FSType: "ext4", VolumeAttributes: attrs}}}}
}

func csiLog(l *lab.Lab, ns string) string {
	return readFile(l.LogFile(ns, "kubernetes-demo-pcsi-controller", lab.CSIControllerContainer))
}

// volumeState sums up the tenant API server's claims, volumes, attachments
// and the attacher's log for a failure.
func volumeState(t *testing.T, l *lab.Lab, ns string) string {
	t.Helper()
	ctx := context.Background()
	var out []string
	var pvcs corev1.PersistentVolumeClaimList
	must(t, l.TenantClient.List(ctx, &pvcs))
	for _, c := range pvcs.Items {
		out = append(out, fmt.Sprintf("PVC %s: %s %s", c.Name, c.Status.Phase, c.Spec.VolumeName))
	}
	var pods corev1.PodList
	must(t, l.TenantClient.List(ctx, &pods))
	for _, p := range pods.Items {
		out = append(out, fmt.Sprintf("Pod %s: %s on %s %v", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.Conditions))
	}
	var vas storagev1.VolumeAttachmentList
	must(t, l.TenantClient.List(ctx, &vas))
	for _, va := range vas.Items {
		out = append(out, fmt.Sprintf("VolumeAttachment %s: %s on %s attached %t %v", va.Name, *va.Spec.Source.PersistentVolumeName, va.Spec.NodeName, va.Status.Attached, va.Status.AttachError))
	}
	out = append(out, "attacher:\n"+tail(readFile(l.LogFile(ns, "kubernetes-demo-pcsi-controller", "csi-attacher")), 8))
	return strings.Join(out, "\n")
}
