package capitest_test

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender/internal/scenario"
)

const (
	minSize    = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	maxSize    = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
	clonedFrom = "cluster.x-k8s.io/cloned-from-name"
	mdLabel    = "cluster.x-k8s.io/deployment-name"
)

// TestScenariosReconciledByClusterAPI creates every golden scenario of both
// capmox generations with Cluster API's webhooks live (a pool scenario
// together with the cluster it joins), and follows what Cluster API's
// controllers make of it: each pool's MachineSet waits, with Cluster API's
// preflight condition, until the control plane reports a version (the
// test then writes the status Kamaji writes); the Machines then come from
// our templates, with the replicas and autoscaler bounds we rendered, and
// stop where they wait for capmox and the Talos bootstrap provider. The
// seed's pool is then rolled to a new machine template.
func TestScenariosReconciledByClusterAPI(t *testing.T) {
	all := loadScenarios(t)
	for _, gen := range generations {
		t.Run(string(gen), func(t *testing.T) {
			t.Parallel()
			srv := servers[gen]
			for _, s := range all {
				t.Run(s.Name, func(t *testing.T) {
					t.Parallel()
					ns := nsName(gen, s)
					objs := scenario.RenderT(t, s, gen)
					if !isNodes(s) {
						relocate(objs, ns)
						create(t, srv.c, ns, objs)
						checkClusterWaits(t, srv.c, ns, objs)
						return
					}
					cluster := clusterFor(t, s, all, gen)
					relocate(cluster, ns)
					relocate(objs, ns)
					create(t, srv.c, ns, append(cluster, objs...))
					checkPools(t, srv.c, ns, cluster, objs)
					if s.Name == "nodes-seed" {
						var machines []string
						for _, m := range list(t, srv.c, "Machine", ns, nil) {
							machines = append(machines, m.GetName())
						}
						checkVerify(t, srv.cfg, ns, only(t, cluster, "Cluster").GetName(), machines)
						checkRoll(t, srv.c, gen, s, ns)
					}
				})
			}
		})
	}
}

// checkClusterWaits: a rendered Cluster waits for capmox and Kamaji with
// the conditions Cluster API gives.
func checkClusterWaits(t *testing.T, c client.Client, ns string, objs []*unstructured.Unstructured) {
	t.Helper()
	name := only(t, objs, "Cluster").GetName()
	eventually(t, "Cluster "+ns+"/"+name+" waits for its infrastructure and control plane", func() (bool, string) {
		cl := get(t, c, "cluster.x-k8s.io/v1beta2", "Cluster", ns, name)
		return hasCondition(cl, "InfrastructureReady", "False", "NotReady", "ProxmoxCluster status.initialization.provisioned is false") &&
				hasCondition(cl, "ControlPlaneAvailable", "False", "NotAvailable",
					"KamajiControlPlane status.initialization.controlPlaneInitialized is false"),
			fmt.Sprint(cl.Object["status"])
	})
}

// checkPools follows every MachineDeployment of a pool scenario.
func checkPools(t *testing.T, c client.Client, ns string, cluster, objs []*unstructured.Unstructured) {
	t.Helper()
	cp := only(t, cluster, "KamajiControlPlane")
	for _, md := range kinds(objs, "MachineDeployment") {
		// A pool of no machines (an autoscaler minimum of 0) has nothing
		// to wait for.
		scaling := wantReplicas(t, md) > 0
		eventually(t, "the MachineSet of "+md.GetName()+" waits for the control plane", func() (bool, string) {
			sets := list(t, c, "MachineSet", ns, map[string]string{mdLabel: md.GetName()})
			if len(sets) != 1 {
				return false, fmt.Sprintf("%d MachineSets", len(sets))
			}
			if !scaling {
				return hasCondition(&sets[0], "ScalingUp", "False", "NotScalingUp", ""), fmt.Sprint(sets[0].Object["status"])
			}
			return hasCondition(&sets[0], "ScalingUp", "True", "ScalingUp",
				fmt.Sprintf("KamajiControlPlane %s/%s is provisioning (\"ControlPlaneIsStable\" preflight check failed)", ns, cp.GetName())), fmt.Sprint(sets[0].Object["status"])
		})
	}
	playKamaji(t, c, cp)
	for _, md := range kinds(objs, "MachineDeployment") {
		checkPool(t, c, md, objs)
	}
}

// playKamaji writes the status.version Kamaji writes once the control plane
// runs, which is what Cluster API's ControlPlaneIsStable preflight check reads.
func playKamaji(t *testing.T, c client.Client, cp *unstructured.Unstructured) {
	t.Helper()
	live := get(t, c, cp.GetAPIVersion(), cp.GetKind(), cp.GetNamespace(), cp.GetName())
	version, _, _ := unstructured.NestedString(live.Object, "spec", "version")
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"status":{"version":"`+version+`"}}`))
	if err := c.Status().Patch(context.Background(), live, patch); err != nil {
		t.Fatal(err)
	}
}

// checkPool: the MachineDeployment keeps our replicas and autoscaler bounds,
// its MachineSet and Machines reference our templates, the cloned
// ProxmoxMachines and TalosConfigs carry our templates' specs, and each
// Machine waits for its bootstrap config and infrastructure.
func checkPool(t *testing.T, c client.Client, md *unstructured.Unstructured, objs []*unstructured.Unstructured) {
	t.Helper()
	ns := md.GetNamespace()
	live := get(t, c, "cluster.x-k8s.io/v1beta2", "MachineDeployment", ns, md.GetName())
	want := wantReplicas(t, md)
	if got, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); got != want {
		t.Errorf("MachineDeployment %s: spec.replicas %d, want %d", md.GetName(), got, want)
	}
	for _, a := range []string{minSize, maxSize} {
		if live.GetAnnotations()[a] != md.GetAnnotations()[a] {
			t.Errorf("MachineDeployment %s: annotation %s is %q, rendered %q", md.GetName(), a, live.GetAnnotations()[a], md.GetAnnotations()[a])
		}
	}
	pmt, tct := templateNames(t, md)
	var machines []unstructured.Unstructured
	eventually(t, fmt.Sprintf("%d Machines of %s", want, md.GetName()), func() (bool, string) {
		machines = list(t, c, "Machine", ns, map[string]string{mdLabel: md.GetName()})
		return int64(len(machines)) == want, fmt.Sprintf("%d Machines", len(machines))
	})
	set := list(t, c, "MachineSet", ns, map[string]string{mdLabel: md.GetName()})[0]
	if p, b := msTemplateNames(&set); p != pmt || b != tct {
		t.Errorf("MachineSet %s references %s and %s, want our %s and %s", set.GetName(), p, b, pmt, tct)
	}
	for i := range machines {
		checkMachine(t, c, &machines[i], byName(t, objs, "ProxmoxMachineTemplate", pmt), byName(t, objs, "TalosConfigTemplate", tct))
	}
}

func checkMachine(t *testing.T, c client.Client, m *unstructured.Unstructured, pmt, tct *unstructured.Unstructured) {
	t.Helper()
	infraKind, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "kind")
	infraName, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "name")
	bootKind, _, _ := unstructured.NestedString(m.Object, "spec", "bootstrap", "configRef", "kind")
	bootName, _, _ := unstructured.NestedString(m.Object, "spec", "bootstrap", "configRef", "name")
	if infraKind != "ProxmoxMachine" || bootKind != "TalosConfig" {
		t.Fatalf("Machine %s references a %s and a %s, want a ProxmoxMachine and a TalosConfig", m.GetName(), infraKind, bootKind)
	}
	clone(t, c, get(t, c, pmt.GetAPIVersion(), "ProxmoxMachine", m.GetNamespace(), infraName), pmt)
	clone(t, c, get(t, c, tct.GetAPIVersion(), "TalosConfig", m.GetNamespace(), bootName), tct)
	// The bootstrap provider waits for the cluster's infrastructure, which
	// nothing provisions here: CABPT says so on the TalosConfig, and
	// Cluster API mirrors its Ready condition into the Machine's
	// BootstrapConfigReady. Until CABPT has seen the config, Cluster API
	// falls back to "TalosConfig status.initialization.dataSecretCreated
	// is false"; that is a moment, not where the Machine stops.
	eventually(t, "TalosConfig "+bootName+" waits for the cluster's infrastructure", func() (bool, string) {
		live := get(t, c, tct.GetAPIVersion(), "TalosConfig", m.GetNamespace(), bootName)
		return hasCondition(live, "DataSecretAvailable", "False", "WaitingForClusterInfrastructure", ""), fmt.Sprint(live.Object["status"])
	})
	eventually(t, "Machine "+m.GetName()+" waits for capmox and the bootstrap provider", func() (bool, string) {
		live := get(t, c, "cluster.x-k8s.io/v1beta2", "Machine", m.GetNamespace(), m.GetName())
		return hasCondition(live, "BootstrapConfigReady", "False", "WaitingForClusterInfrastructure", "") &&
			hasCondition(live, "InfrastructureReady", "False", "NotReady", "ProxmoxMachine status.initialization.provisioned is false"), fmt.Sprint(live.Object["status"])
	})
}

// clone: obj was cloned by Cluster API from our template tmpl, with its
// spec.template.spec as the API server holds it (our render with the CRD's
// defaults) unchanged.
func clone(t *testing.T, c client.Client, obj, tmpl *unstructured.Unstructured) {
	t.Helper()
	tmpl = get(t, c, tmpl.GetAPIVersion(), tmpl.GetKind(), obj.GetNamespace(), tmpl.GetName())
	if got := obj.GetAnnotations()[clonedFrom]; got != tmpl.GetName() {
		t.Errorf("%s %s cloned from %q, want our %s", obj.GetKind(), obj.GetName(), got, tmpl.GetName())
	}
	want, _, _ := unstructured.NestedMap(tmpl.Object, "spec", "template", "spec")
	got, _, _ := unstructured.NestedMap(obj.Object, "spec")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s %s: spec\n%v\nwant our template's\n%v", obj.GetKind(), obj.GetName(), got, want)
	}
}

// checkRoll renders the pool again with more memory, applies the new
// machine template and MachineDeployment, and expects a new MachineSet on
// the new template next to the old one.
func checkRoll(t *testing.T, c client.Client, gen capmoxrender.Capmox, s scenario.Scenario, ns string) {
	t.Helper()
	if !strings.Contains(string(s.Input), "memory: 8Gi") {
		t.Fatalf("%s: the roll changes memory: 8Gi, which its input no longer has", s.Name)
	}
	s.Input = []byte(strings.Replace(string(s.Input), "memory: 8Gi", "memory: 16Gi", 1))
	objs := scenario.RenderT(t, s, gen)
	relocate(objs, ns)
	md := only(t, objs, "MachineDeployment")
	pmt, tct := templateNames(t, md)
	if err := c.Create(context.Background(), byName(t, objs, "ProxmoxMachineTemplate", pmt).DeepCopy()); err != nil {
		t.Fatalf("the new ProxmoxMachineTemplate %s refused: %v", pmt, err)
	}
	// The kubelet's reservations follow the memory, so the Talos config
	// template is new too.
	if err := c.Create(context.Background(), byName(t, objs, "TalosConfigTemplate", tct).DeepCopy()); err != nil {
		t.Fatalf("the new TalosConfigTemplate %s refused: %v", tct, err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := get(t, c, md.GetAPIVersion(), "MachineDeployment", ns, md.GetName())
		_ = unstructured.SetNestedField(live.Object, md.Object["spec"].(map[string]any)["template"], "spec", "template")
		return c.Update(context.Background(), live)
	})
	if err != nil {
		t.Fatalf("the rolled MachineDeployment refused: %v", err)
	}
	eventually(t, "a new MachineSet on "+pmt, func() (bool, string) {
		sets := list(t, c, "MachineSet", ns, map[string]string{mdLabel: md.GetName()})
		var names []string
		for i := range sets {
			p, _ := msTemplateNames(&sets[i])
			names = append(names, p)
		}
		return len(sets) == 2 && (names[0] == pmt) != (names[1] == pmt), fmt.Sprint(names)
	})
}

func wantReplicas(t *testing.T, md *unstructured.Unstructured) int64 {
	t.Helper()
	if r, ok, _ := unstructured.NestedInt64(md.Object, "spec", "replicas"); ok {
		return r
	}
	r, err := strconv.ParseInt(md.GetAnnotations()[minSize], 10, 64)
	if err != nil {
		t.Fatalf("MachineDeployment %s has neither spec.replicas nor a %s annotation", md.GetName(), minSize)
	}
	return r
}

// templateNames returns the machine and bootstrap template names of a
// rendered MachineDeployment of either API version.
func templateNames(t *testing.T, md *unstructured.Unstructured) (pmt, tct string) {
	t.Helper()
	pmt, _, _ = unstructured.NestedString(md.Object, "spec", "template", "spec", "infrastructureRef", "name")
	tct, _, _ = unstructured.NestedString(md.Object, "spec", "template", "spec", "bootstrap", "configRef", "name")
	if pmt == "" || tct == "" {
		t.Fatalf("MachineDeployment %s without template references", md.GetName())
	}
	return pmt, tct
}

func msTemplateNames(ms *unstructured.Unstructured) (pmt, tct string) {
	pmt, _, _ = unstructured.NestedString(ms.Object, "spec", "template", "spec", "infrastructureRef", "name")
	tct, _, _ = unstructured.NestedString(ms.Object, "spec", "template", "spec", "bootstrap", "configRef", "name")
	return pmt, tct
}

func hasCondition(o *unstructured.Unstructured, typ, status, reason, message string) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			msg, _ := m["message"].(string)
			return m["status"] == status && m["reason"] == reason && strings.Contains(msg, message)
		}
	}
	return false
}

func get(t *testing.T, c client.Client, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatalf("%s %s/%s: %v", kind, ns, name, err)
	}
	return u
}

func kinds(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func only(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	k := kinds(objs, kind)
	if len(k) != 1 {
		t.Fatalf("want one %s, rendered %d", kind, len(k))
	}
	return k[0]
}

func byName(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range kinds(objs, kind) {
		if o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}
