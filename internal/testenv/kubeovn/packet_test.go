//go:build linux

package kubeovn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/kubeovn"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/ovnlab"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
	"github.com/pxsubstrate/pxsubstrate/testproc"
	"github.com/pxsubstrate/pxsubstrate/vpcrender"
)

// packetSpec is a tenant VPC with a Proxmox-backed subnet and a private
// overlay subnet of workloads that admits the Proxmox subnet.
const packetSpec = `
namespace: tenant-test
name: net
subnets:
  - name: private
    cidr: 10.208.64.0/24
    proxmox: {}
  - name: apps
    cidr: 172.16.0.0/24
    allowSubnets: [10.208.64.0/24]
zones:
  - name: default
    providerNetwork: pxtenant
`

const (
	// packetVID is the Vlan the test gives the Proxmox-backed subnet.
	packetVID = 100
	// vmAddr is the VM's address on the Proxmox subnet, in its VM range.
	vmAddr = "10.208.64.100/24"
	// workloadNode runs the workload; it has no trunk.
	workloadNode = "node-3"
	// outageDeadline bounds the wait for the probes to come back.
	outageDeadline = 45 * time.Second
	// stableFor is how long a probe must succeed without a failure before
	// an outage counts as over.
	stableFor = 3 * time.Second
	// nadCRDs is Multus' NetworkAttachmentDefinition CRD, which vpcrender's
	// tests install.
	nadCRDs = "../../../vpcrender/testdata/crds"
	// attachmentsAnnotation is Multus' annotation of a pod's extra networks.
	attachmentsAnnotation = "k8s.v1.cni.cncf.io/networks"
	// vendorKey and vendorKubeOVN tag the rows Kube-OVN's ovs package
	// writes (external_ids vendor=kube-ovn, util.CniTypeName).
	vendorKey, vendorKubeOVN = "vendor", "kube-ovn"
)

// TestKubeOVNPacketThroughItsTopology sends packets through the logical
// topology kube-ovn-controller v1.14.10 builds: its router, switches, router
// port, localnet port and a workload's port, made from what vpcrender
// renders, in databases created from Kube-OVN's own schemas, translated by
// Debian's ovn-northd 23.03 and bound by ovnlab's ovn-controller chassis,
// which are the cluster's nodes (system-id and hostname the node's name).
// The only row of the topology the test writes is ours: the
// HA_Chassis_Group ovngateway puts on Kube-OVN's router port. A VM on the
// subnet's VLAN pings the router and the workload, and reaches both again
// after the active chassis crashes, comes back, and leaves.
func TestKubeOVNPacketThroughItsTopology(t *testing.T) {
	if err := ovnlab.Check(); err != nil {
		t.Fatal(err)
	}
	cfg, c := testenv.StartAPIServer(t, testenv.APIServerOptions{Scheme: scheme(), CRDPaths: []string{filepath.FromSlash(nadCRDs)}})
	k := kubeovn.StartT(t, cfg, kubeovn.Options{Webhook: true})
	// The chassis come before the Nodes: kube-ovn-controller's node
	// handler (Controller.UpdateChassisTag in pkg/controller/node.go) wants
	// the node's Chassis registered, and its gcChassis deletes every Chassis
	// whose hostname is not a Node's.
	lab := ovnlab.New(t, ovnlab.Options{
		Chassis: []ovnlab.ChassisSpec{
			{Name: "node-1", Trunk: true}, {Name: "node-2", Trunk: true}, {Name: workloadNode},
		},
		ProviderNetwork: providerNetwork,
		NB:              k.NB.Unix, SB: k.SB.Unix,
	})
	checkVersions(t, k)
	ctx := context.Background()
	cl := &cluster{t: t, k: k, c: c, cfg: cfg, ctx: ctx, nb: ovngatewaytest.Connect(t, k.NB.Unix)}
	cl.create(&kubeovnv1.ProviderNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: providerNetwork},
		Spec:       kubeovnv1.ProviderNetworkSpec{DefaultInterface: "eth1"},
	})
	var own []kubeovn.Node
	for _, ch := range lab.Chassis {
		n := kubeovn.Node{Name: ch.Name, IP: ch.EncapIP, Chassis: ch.Name, OwnChassis: true}
		if ch.Trunk {
			n.ProviderNetworks = []string{providerNetwork}
		}
		own = append(own, n)
	}
	cl.addNodesAndDial(own)

	subnet, apps := cl.applyWithAttachments(packetSpec, packetVID)
	cl.checkKubeOVNMade(subnet)
	cl.waitSwitch(apps.Name)
	cl.assign(subnet)
	gwy := cl.gateway(subnet)
	if len(gwy.Members) != 2 {
		t.Fatalf("the group of %s has %d members, want the two trunk nodes: %+v", gwy.RouterPort, len(gwy.Members), gwy.Members)
	}
	active, standby := lab.Chassis[chassisIndex(t, lab, gwy.Members[0].Chassis)], lab.Chassis[chassisIndex(t, lab, gwy.Members[1].Chassis)]
	t.Logf("%s: active chassis %s, standby %s", gwy.RouterPort, active.Name, standby.Name)

	// The workload: a pod attached to the overlay subnet as Cozystack
	// attaches one (Multus' annotation naming the subnet's attachment),
	// scheduled on the node without a trunk. kube-ovn-controller
	// allocates its address and creates its port; the lab plugs a namespace
	// into that port on the node's chassis, as kube-ovn-cni would.
	wl := cl.addWorkload(apps, "web", workloadNode)
	pod := lab.PlugPort(ovnlab.Plug{Name: "web", Port: wl.port, Chassis: lab.Chassis[chassisIndex(t, lab, workloadNode)],
		MAC: wl.mac, Addr: wl.addr, Gateway: wl.gateway, MTU: 1400})

	vm := lab.AddVM(ovnlab.VM{Name: "vm1", VLAN: packetVID, Addr: netip.MustParsePrefix(vmAddr), Gateway: netip.MustParseAddr(subnet.Spec.Gateway)})
	lab.SyncHV()
	cr := "cr-" + gwy.RouterPort
	lab.WaitBinding(cr, active.Name, 20*time.Second)

	cl.checkRowsMadeByKubeOVN(subnet, apps, wl.port, gwy)
	cl.checkPrivateACLs(apps, subnet.Spec.CIDRBlock)

	router := netip.MustParseAddr(subnet.Spec.Gateway)
	waitPing(t, vm, router, "the router's address on the VLAN (the subnet's gateway)")
	waitPing(t, vm, pod.Addr.Addr(), "the workload on the VPC's overlay subnet")
	waitPing(t, pod, vm.Addr.Addr(), "the VM, from the workload")
	checkQuietLogs(t, lab)

	// The active chassis crashes: ovn-controller and ovs-vswitchd are
	// killed, the standby's BFD session to it times out, the standby
	// claims the router port.
	f := failover{t: t, lab: lab, vm: vm, port: cr, dsts: []netip.Addr{router, pod.Addr.Addr()}}
	if r := f.measure("the active chassis "+active.Name+" crashes", standby, active.Crash); r[0].Failed == 0 || r[1].Failed == 0 {
		t.Errorf("a crashed active chassis must interrupt the probes until the standby takes over: %+v", r)
	}
	// It comes back: its higher priority takes the port back.
	f.measure(active.Name+" starts again", active, func() {
		if err := active.Start(); err != nil {
			t.Fatal(err)
		}
	})
	// It leaves for good: its ovn-controller exits and removes its Chassis.
	f.measure("the active chassis "+active.Name+" leaves (ovn-controller exits)", standby, func() {
		if err := active.ExitController(); err != nil {
			t.Fatal(err)
		}
	})
	if n := vm.Neighbor(router); !strings.Contains(n, "lladdr "+routerMAC(t, cl, gwy.RouterPort)) {
		t.Errorf("the VM's neighbour entry for its router after the failovers: %q, want the router port's MAC", n)
	}
}

// failover measures, from a VM, the outage of its probes to dsts while a
// router port moves between chassis.
type failover struct {
	t    *testing.T
	lab  *ovnlab.Lab
	vm   *ovnlab.Host
	port string
	dsts []netip.Addr
}

// measure probes every destination, runs act, waits until the port is bound
// to to and every probe has succeeded for stableFor, and logs and returns
// the probes' results, in the order of dsts.
func (f failover) measure(what string, to *ovnlab.Chassis, act func()) []ovnlab.ProbeResult {
	f.t.Helper()
	probes := make([]*ovnlab.Prober, len(f.dsts))
	for i, d := range f.dsts {
		probes[i] = f.vm.Probe(d)
	}
	stop := func() []ovnlab.ProbeResult {
		out := make([]ovnlab.ProbeResult, len(probes))
		for i, p := range probes {
			out[i] = p.Stop()
		}
		return out
	}
	start := time.Now()
	act()
	f.lab.WaitBinding(f.port, to.Name, outageDeadline)
	moved := time.Since(start)
	deadline := time.Now().Add(outageDeadline)
	for slices.ContainsFunc(probes, func(p *ovnlab.Prober) bool { return !p.UpFor(stableFor) }) {
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: the VM's probes to %v did not come back within %s: %+v", what, f.dsts, outageDeadline, stop())
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := stop()
	var parts []string
	for i, d := range f.dsts {
		parts = append(parts, fmt.Sprintf("to %s %s (%d of %d probes failed)", d, r[i].Outage.Round(time.Millisecond), r[i].Failed, r[i].Sent))
	}
	f.t.Logf("%s: %s holds %s after %s; outage %s", what, to.Name, f.port, moved.Round(time.Millisecond), strings.Join(parts, ", "))
	return r
}

// routerMAC is the MAC Kube-OVN gave the router port.
func routerMAC(t *testing.T, cl *cluster, port string) string {
	t.Helper()
	lrp, ok := cl.routerPort(port)
	if !ok {
		t.Fatalf("no router port %s", port)
	}
	return lrp.MAC
}

func chassisIndex(t *testing.T, lab *ovnlab.Lab, name string) int {
	t.Helper()
	for i, ch := range lab.Chassis {
		if ch.Name == name {
			return i
		}
	}
	t.Fatalf("no chassis %s in the lab", name)
	return -1
}

// applyWithAttachments applies spec as apply does, with the Vlan vid, and
// creates the Multus attachments vpcrender renders for each subnet. It
// returns the Proxmox-backed subnet and the overlay subnet.
func (cl *cluster) applyWithAttachments(specYAML string, vid int) (proxmox, overlay *kubeovnv1.Subnet) {
	cl.t.Helper()
	subnets := cl.apply(specYAML, vid)
	if len(subnets) != 1 {
		cl.t.Fatalf("want one Proxmox-backed subnet, rendered %d", len(subnets))
	}
	spec, err := vpcrender.ParseSpec([]byte(specYAML))
	if err != nil {
		cl.t.Fatal(err)
	}
	r, err := vpcrender.Render(spec)
	if err != nil {
		cl.t.Fatal(err)
	}
	for _, o := range r.Objects {
		if s, ok := o.(*kubeovnv1.Subnet); ok && s.Spec.Vlan == "" {
			overlay = s
		}
	}
	if overlay == nil {
		cl.t.Fatal("vpcrender rendered no overlay subnet")
	}
	objs, err := r.Unstructured()
	if err != nil {
		cl.t.Fatal(err)
	}
	for _, u := range objs {
		if u.GetKind() == "NetworkAttachmentDefinition" {
			cl.create(u)
		}
	}
	return subnets[0], overlay
}

// waitSwitch waits until Kube-OVN has made the logical switch name.
func (cl *cluster) waitSwitch(name string) {
	cl.t.Helper()
	cl.eventually(2*time.Minute, "Kube-OVN's switch "+name, func() (bool, string) {
		_, ok := cl.logicalSwitch(name)
		return ok, "no Logical_Switch " + name
	})
}

// workload is what kube-ovn-controller allocated for a pod's attachment.
type workload struct {
	// port is the logical switch port Kube-OVN made.
	port    string
	mac     string
	addr    netip.Prefix
	gateway netip.Addr
}

// addWorkload creates a pod on node attached to subnet through the subnet's
// Multus attachment and waits until kube-ovn-controller has allocated it:
// the annotations of the attachment's provider (pkg/controller/pod.go,
// Controller.reconcileAllocateSubnets) and the port
// <pod>.<namespace>.<provider> (ovs.PodNameToPortName).
func (cl *cluster) addWorkload(subnet *kubeovnv1.Subnet, name, node string) workload {
	cl.t.Helper()
	ns := subnet.Labels[vpcrender.LabelTenantName]
	provider := subnet.Spec.Provider
	cl.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{attachmentsAnnotation: ns + "/" + subnet.Name}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: name, Image: "registry.k8s.io/pause:3.10"}}},
	})
	anno := func(p *corev1.Pod, key string) string { return p.Annotations[provider+".kubernetes.io/"+key] }
	var pod corev1.Pod
	cl.eventually(time.Minute, "Kube-OVN allocating pod "+name, func() (bool, string) {
		if err := cl.c.Get(cl.ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
			return false, err.Error()
		}
		return anno(&pod, "allocated") == "true", fmt.Sprintf("annotations %v", pod.Annotations)
	})
	if got := anno(&pod, "logical_switch"); got != subnet.Name {
		cl.t.Fatalf("pod %s allocated on switch %q, want %s", name, got, subnet.Name)
	}
	addr, err := netip.ParseAddr(anno(&pod, "ip_address"))
	if err != nil {
		cl.t.Fatalf("pod %s: %v", name, err)
	}
	cidr := netip.MustParsePrefix(anno(&pod, "cidr"))
	w := workload{
		port: name + "." + ns + "." + provider, mac: anno(&pod, "mac_address"),
		addr: netip.PrefixFrom(addr, cidr.Bits()), gateway: netip.MustParseAddr(anno(&pod, "gateway")),
	}
	cl.eventually(time.Minute, "Kube-OVN's port "+w.port, func() (bool, string) {
		_, ok := cl.switchPort(w.port)
		return ok, "no Logical_Switch_Port " + w.port
	})
	return w
}

// checkRowsMadeByKubeOVN checks that every row the packets go through was
// written by Kube-OVN (vendor=kube-ovn), and that the only row of ours is
// the group on its router port.
func (cl *cluster) checkRowsMadeByKubeOVN(subnet, apps *kubeovnv1.Subnet, workloadPort string, gwy ovngateway.Gateway) {
	cl.t.Helper()
	vendor := func(what string, ids map[string]string) {
		if ids[vendorKey] != vendorKubeOVN {
			cl.t.Errorf("%s: external_ids %v, want %s=%s (a row Kube-OVN made)", what, ids, vendorKey, vendorKubeOVN)
		}
	}
	lr, ok := cl.router(subnet.Spec.Vpc)
	if !ok {
		cl.t.Fatalf("no router %s", subnet.Spec.Vpc)
	}
	vendor("router "+lr.Name, lr.ExternalIDs)
	for _, s := range []*kubeovnv1.Subnet{subnet, apps} {
		ls, _ := cl.logicalSwitch(s.Name)
		vendor("switch "+s.Name, ls.ExternalIDs)
		lrp, ok := cl.routerPort(ovngateway.RouterPortName(s.Spec.Vpc, s.Name))
		if !ok {
			cl.t.Fatalf("no router port of %s", s.Name)
		}
		vendor("router port "+lrp.Name, lrp.ExternalIDs)
		patch, _ := cl.switchPort(s.Name + "-" + s.Spec.Vpc)
		vendor("the switch's router port "+patch.Name, patch.ExternalIDs)
	}
	ln, _ := cl.switchPort("localnet." + subnet.Name)
	vendor("localnet port "+ln.Name, ln.ExternalIDs)
	wp, _ := cl.switchPort(workloadPort)
	vendor("workload port "+wp.Name, wp.ExternalIDs)
	st := ovngatewaytest.ReadRows(cl.t, cl.nb).State()
	g, ok := st.Groups[gwy.Group()]
	if !ok || st.Ports[gwy.RouterPort].Group != gwy.Group() {
		cl.t.Fatalf("%s does not use our group %s", gwy.RouterPort, gwy.Group())
	}
	if g.ExternalIDs[ovngateway.OwnerKey] != ovngateway.OwnerValue {
		cl.t.Errorf("group %s: tags %v, want ours", gwy.Group(), g.ExternalIDs)
	}
}

// checkVersions shows what runs together: databases of Kube-OVN's schemas
// (those of its OVN 24.03, newer than Debian's), translated by Debian's
// ovn-northd 23.03.
func checkVersions(t *testing.T, k *kubeovn.KubeOVN) {
	t.Helper()
	for _, db := range []struct {
		endpoint, name, want, debian string
	}{
		{k.NB.Unix, "OVN_Northbound", "7.3.0", "/usr/share/ovn/ovn-nb.ovsschema"},
		{k.SB.Unix, "OVN_Southbound", "20.33.0", "/usr/share/ovn/ovn-sb.ovsschema"},
	} {
		out, err := exec.Command("ovsdb-client", "get-schema-version", db.endpoint, db.name).CombinedOutput()
		if err != nil {
			t.Fatalf("ovsdb-client get-schema-version %s: %v: %s", db.name, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != db.want {
			t.Errorf("%s serves schema %s, want Kube-OVN's %s", db.name, got, db.want)
		}
		var debian struct{ Version string }
		if b, err := os.ReadFile(db.debian); err != nil || json.Unmarshal(b, &debian) != nil || debian.Version == db.want {
			t.Errorf("Debian's %s: version %q (%v), want one older than Kube-OVN's %s", db.debian, debian.Version, err, db.want)
		}
	}
	out, err := exec.Command("ovn-northd", "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ovn-northd 23.03") {
		t.Errorf("ovn-northd --version: %v: %s, want Debian's 23.03", err, out)
	}
}

// checkQuietLogs checks that Debian's ovn-northd and ovn-controllers,
// compiled against older schemas than the databases serve, have logged no
// warning and no error: their IDL monitors the columns it knows and leaves
// the others alone. Two of ovn-controller's warnings are not about the
// schemas and are allowed: at start, that it has no representor plug
// provider (vif_plug_provider, for SmartNICs), which is about the machine;
// and, now and then while the chassis first elect the active one (before
// BFD is up), that it is "Trying to release unknown interface" for the
// chassisredirect port: its interface-status tracker (controller/if-status.c,
// if_status_mgr_release_iface) knows the OVS interfaces it claimed only,
// and a cr- port is none. It was logged once in six runs, by the standby.
func checkQuietLogs(t *testing.T, lab *ovnlab.Lab) {
	t.Helper()
	daemons := []*testproc.Process{lab.Northd}
	for _, ch := range lab.Chassis {
		daemons = append(daemons, ch.Controller)
	}
	for _, d := range daemons {
		b, err := os.ReadFile(d.Logs[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if (strings.Contains(line, "|WARN|") || strings.Contains(line, "|ERR|") || strings.Contains(line, "|EMER|")) &&
				!strings.Contains(line, "|vif_plug_provider|WARN|") &&
				!strings.Contains(line, "|if_status|WARN|Trying to release unknown interface cr-") {
				t.Errorf("%s logged: %s", d.Name, line)
			}
		}
	}
}

// checkPrivateACLs checks the ACLs Kube-OVN gives a private subnet that
// admits allowed (ovs.OVNNbClient.SetLogicalSwitchPrivate): a drop of
// everything else, named after the switch, and an allow of the traffic
// between the two CIDRs, both on the subnet's switch.
func (cl *cluster) checkPrivateACLs(s *kubeovnv1.Subnet, allowed string) {
	cl.t.Helper()
	ls, ok := cl.logicalSwitch(s.Name)
	if !ok {
		cl.t.Fatalf("no switch %s", s.Name)
	}
	var drop, allow bool
	for _, a := range ovngatewaytest.Select[nbmodel.ACL](cl.t, cl.nb) {
		if !slices.Contains(ls.ACLs, a.UUID) {
			continue
		}
		drop = drop || (a.Action == nbmodel.ACLActionDrop && a.Match == "ip" && ptrString(a.Name) == s.Name)
		allow = allow || (a.Action == nbmodel.ACLActionAllowRelated && strings.Contains(a.Match, "ip4.src == "+allowed))
	}
	if !drop || !allow {
		cl.t.Errorf("switch %s: Kube-OVN's private ACLs (drop %v, allow from %s %v), want both", s.Name, drop, allowed, allow)
	}
}

// waitPing waits up to 15 s for h to reach dst: right after a port is
// bound its chassis may still be installing the flows.
func waitPing(t *testing.T, h *ovnlab.Host, dst netip.Addr, what string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; {
		out, err := h.Ping(dst, 0, false, time.Second)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s must reach %s (%s) within 15 s: %v\n%s", h.Name, dst, what, err, out)
		}
	}
}
