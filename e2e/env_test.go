package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

// env is one API server with the manifests of config/ applied, an admin
// client fast enough to play Kube-OVN for many networks, and a kubeconfig
// for the controller's ServiceAccount.
type env struct {
	cfg        *rest.Config
	admin      client.Client
	kubeconfig string
	// scrapeToken is a token of a ServiceAccount bound to the metrics
	// reader role of config/rbac.
	scrapeToken string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	cfg, _ := controllertest.StartAPIServer(t)
	fast := rest.CopyConfig(cfg)
	fast.QPS, fast.Burst = 2000, 4000
	admin, err := client.New(fast, client.Options{Scheme: controllertest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Create(t, admin, sim.Namespace("cozy-kubeovn", nil))
	controllertest.Apply(t, admin, controllertest.Kustomize(t, "config"), false)
	if t.Failed() {
		t.FailNow()
	}
	return &env{cfg: cfg, admin: admin, kubeconfig: testenv.KubeconfigFile(t, cfg, serviceAccount), scrapeToken: scrapeToken(t, cfg)}
}

// cluster returns a cluster of its own for test id.
func cluster(id string, net int) controllertest.Cluster {
	return controllertest.Cluster{
		Zone: "zone-" + id, Bridge: "vmbr" + id, ProviderNetwork: "pn" + id, VPC: "vpc-" + id,
		Tenant: "tenant-" + id, Ranges: []string{"100-2099"}, Net: net,
	}
}

// network reads the tenant's network name.
func network(ctx context.Context, c client.Client, cl controllertest.Cluster, name string) (*v1alpha1.ProxmoxNetwork, error) {
	n := &v1alpha1.ProxmoxNetwork{}
	return n, c.Get(ctx, client.ObjectKey{Namespace: cl.Tenant, Name: name}, n)
}

// allReady reports whether every named network is Ready with GatewayReady
// ChassisAssigned, naming the first that is not.
func allReady(ctx context.Context, c client.Client, cl controllertest.Cluster, names []string) (bool, string) {
	for _, name := range names {
		n, err := network(ctx, c, cl, name)
		if err != nil {
			return false, err.Error()
		}
		ready := meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.ConditionReady)
		gw := meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionGatewayReady)
		if !ready || gw == nil || gw.Reason != v1alpha1.ReasonChassisAssigned {
			return false, fmt.Sprintf("%s: %+v", name, n.Status.Conditions)
		}
	}
	return true, ""
}

// checkVLANs: every named network holds a distinct VLAN, its Kube-OVN Vlan
// carries that ID and names the network, and the zone's claims hold
// exactly those IDs.
func checkVLANs(t *testing.T, c client.Client, cl controllertest.Cluster, names []string) []int {
	t.Helper()
	ctx := context.Background()
	var vids []int
	for _, name := range names {
		n, err := network(ctx, c, cl, name)
		if err != nil {
			t.Fatalf("network %s is lost: %v", name, err)
		}
		v := &kubeovnv1.Vlan{}
		if err := c.Get(ctx, client.ObjectKey{Name: n.Status.VLANName}, v); err != nil {
			t.Errorf("network %s: its Vlan %q: %v", name, n.Status.VLANName, err)
			continue
		}
		if v.Spec.ID != int(n.Status.VLAN) || v.Labels[v1alpha1.LabelNetworkName] != name {
			t.Errorf("network %s has VLAN %d but its Vlan has %d and names %q", name, n.Status.VLAN, v.Spec.ID, v.Labels[v1alpha1.LabelNetworkName])
		}
		vids = append(vids, int(n.Status.VLAN))
	}
	slices.Sort(vids)
	if d := slices.Compact(slices.Clone(vids)); len(d) != len(vids) {
		t.Errorf("duplicate VLANs among %d networks: %v", len(vids), vids)
	}
	var claims v1alpha1.ProxmoxVLANClaimList
	if err := c.List(ctx, &claims, client.MatchingLabels{v1alpha1.LabelProviderNetwork: cl.ProviderNetwork}); err != nil {
		t.Fatal(err)
	}
	var claimed []int
	for _, cl := range claims.Items {
		claimed = append(claimed, int(cl.Spec.VLAN))
	}
	slices.Sort(claimed)
	if !slices.Equal(claimed, vids) {
		t.Errorf("claims of provider %s hold VLANs %v, networks hold %v", cl.ProviderNetwork, claimed, vids)
	}
	return vids
}

// checkGroups: the router port of every named network points at its group,
// whose chassis are exactly want.
func checkGroups(k *controllertest.KubeOVN, cl controllertest.Cluster, names []string, want []string) func() (bool, string) {
	return func() (bool, string) {
		st, err := k.Dump(context.Background())
		if err != nil {
			return false, err.Error()
		}
		for _, name := range names {
			port := ovngateway.RouterPortName(cl.VPC, name)
			g := st.Ports[port].Group
			if g != ovngateway.GroupName(port) {
				return false, fmt.Sprintf("port %s points at group %q", port, g)
			}
			var got []string
			for _, ch := range st.Groups[g].Chassis {
				got = append(got, ch.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return false, fmt.Sprintf("group %s has chassis %v, want %v", g, got, want)
			}
		}
		return true, ""
	}
}

// waitGone waits until the network and its Vlan are gone.
func waitGone(t *testing.T, c client.Client, cl controllertest.Cluster, name string, step func() error) {
	ctx := context.Background()
	controllertest.Eventually(t, 60*time.Second, step, func() (bool, string) {
		if _, err := network(ctx, c, cl, name); !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("network %s still there (%v)", name, err)
		}
		err := c.Get(ctx, client.ObjectKey{Name: name}, &kubeovnv1.Vlan{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Vlan %s still there (%v)", name, err)
	})
}

// scrapeToken creates the ServiceAccount monitoring/prometheus, binds it
// to the metrics reader role of config/rbac, and returns a token of it.
func scrapeToken(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("monitoring").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-proxmox-network-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "proxmox-network-controller-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: "prometheus"}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, "prometheus", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
