package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// PoolHASecret is the <namespace>/<name> of the pool HA token's Secret on
// the management API server (Options.PoolHA), and PoolHATokenID its token.
const (
	PoolHASecret  = "cozy-proxmox-network/pve-pool-ha"
	PoolHATokenID = "poolha@pve!ha"
)

// poolHASecret makes the platform's pool HA user and token with pveacl's
// plan (platform.ha: CozyHA on / alone) and writes the Secret the
// controller reads, with the keys a zone's credentials Secret has.
func (l *Lab) poolHASecret(ctx context.Context) error {
	root, err := l.Root()
	if err != nil {
		return err
	}
	user, token, _ := strings.Cut(PoolHATokenID, "!")
	spec, err := tenantplan.LoadTenants(fmt.Appendf(nil, "platform:\n  ha: {user: %q, token: %q}\ntenants: []\n", user, token))
	if err != nil {
		return err
	}
	keep := tokenKeep{}
	if _, err := liveacl.Apply(ctx, root, spec, liveacl.WithSecretSink(keep)); err != nil {
		return fmt.Errorf("cannot make the pool HA token: %w", err)
	}
	ns, name, _ := strings.Cut(PoolHASecret, "/")
	if err := l.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{
		"url": []byte(l.Proxmox.URL), "token_id": []byte(PoolHATokenID), "token_secret": []byte(keep[PoolHATokenID].Secret.Reveal()), "root_ca": l.Proxmox.CAPEM}}
	if err := l.Client.Create(ctx, sec); err != nil {
		return fmt.Errorf("cannot write the pool HA Secret %s: %w", PoolHASecret, err)
	}
	l.log("pool HA token " + PoolHATokenID + " in Secret " + PoolHASecret)
	return nil
}

// ControllerAccount is the ServiceAccount the manifests run the controller
// as; the lab runs it as that account, under the manifests' RBAC (config/rbac's ClusterRole and ClusterRoleBinding, and
// the chart's Role on the pool HA Secret), so that a call the RBAC does not
// grant fails the lab's tests.
const ControllerAccount = "system:serviceaccount:cozy-proxmox-network:proxmox-network-controller"

// controllerKubeconfig grants the manifests' RBAC and writes a kubeconfig
// that impersonates ControllerAccount, returning its path.
func (l *Lab) controllerKubeconfig(ctx context.Context, rbac ...string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	var objs []*unstructured.Unstructured
	for _, f := range rbac {
		data, err := os.ReadFile(filepath.Join(root, "config", "rbac", f))
		if err != nil {
			return "", err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			return "", fmt.Errorf("config/rbac/%s: %w", f, err)
		}
		objs = append(objs, u)
	}
	ns, name, _ := strings.Cut(PoolHASecret, "/")
	role := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "proxmox-network-controller-pool-ha"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{name}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: role.ObjectMeta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "cozy-proxmox-network", Name: "proxmox-network-controller"}}}
	for _, typed := range []any{role, binding} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		if err != nil {
			return "", err
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	if err := l.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	for _, o := range objsOf(objs) {
		if err := l.Client.Create(ctx, o); err != nil {
			return "", fmt.Errorf("cannot create the controller's RBAC: %w", err)
		}
	}
	path := filepath.Join(l.Dir, "controller.kubeconfig")
	return path, testenv.WriteKubeconfig(path, l.Mgmt, ControllerAccount)
}

func objsOf(us []*unstructured.Unstructured) []client.Object {
	out := make([]client.Object, 0, len(us))
	for _, u := range us {
		out = append(out, u)
	}
	return out
}
