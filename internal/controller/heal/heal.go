// Package heal is the proxmox-network controller's pool healing: for each
// MachineDeployment that takes it (the label poolheal.Label "true" that
// capmoxrender writes for proxmox.heal, or every pool when the controller
// runs with --heal-pools), it reads the pool's ProxmoxMachines and the VMs
// of their Proxmox pool with the tenant's own capmox token (the Secret the
// ProxmoxCluster's credentialsRef names), asks package poolheal what to do
// and does it: it destroys a clone capmox lost, starts a VM capmox reports
// provisioned and left stopped, and asks capmox to try a failed delete
// again once the VM's node is back. Each action is an Event on the
// ProxmoxMachine and counts in cozy_proxmox_pool_healed_total (or
// cozy_proxmox_pool_heal_failures_total) by kind. The token is never
// logged and TLS is always verified (root_ca, else the system roots).
package heal

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/go-multierror"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/poolheal"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Event reasons: one per kind of healing, and the failures.
const (
	ReasonDestroyedLostClone engine.Reason = "HealDestroyedLostClone"
	ReasonStartedStopped     engine.Reason = "HealStartedVM"
	ReasonRetriedDelete      engine.Reason = "HealRetriedDelete"
	// ReasonFailed: an action failed; the pool is looked at again.
	ReasonFailed engine.Reason = "HealFailed"
	// ReasonCannotRead: the pool, its credentials or its VMs could not
	// be read, so nothing was done.
	ReasonCannotRead engine.Reason = "HealCannotRead"
)

// EventActions are the events.k8s.io action of every reason
// (engine.EventsRecorder's Actions).
var EventActions = map[engine.Reason]string{
	ReasonDestroyedLostClone: "PoolHealing", ReasonStartedStopped: "PoolHealing", ReasonRetriedDelete: "PoolHealing",
	ReasonFailed: "PoolHealing", ReasonCannotRead: "PoolHealing",
}

// Reasons maps each kind to the reason of its Event.
var Reasons = map[poolheal.Kind]engine.Reason{
	poolheal.KindDestroyLostClone: ReasonDestroyedLostClone,
	poolheal.KindStartStopped:     ReasonStartedStopped,
	poolheal.KindRetryDelete:      ReasonRetriedDelete,
}

// Metric names.
const (
	MetricHealed   = "cozy_proxmox_pool_healed_total"
	MetricFailures = "cozy_proxmox_pool_heal_failures_total"
)

// Metrics counts the actions taken and failed, by kind.
type Metrics struct {
	healed, failures *prometheus.CounterVec
}

// NewMetrics builds the metrics, every kind at zero, and registers them on
// reg (nil keeps them unregistered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		healed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricHealed,
			Help: "Actions the controller's pool healing took, by kind (DestroyLostClone, StartStopped, RetryDelete)."}, []string{"kind"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricFailures,
			Help: "Actions of the controller's pool healing that failed, by kind."}, []string{"kind"}),
	}
	for _, k := range poolheal.Kinds {
		m.healed.WithLabelValues(string(k))
		m.failures.WithLabelValues(string(k))
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.healed, m.failures} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("cannot register the pool healing metrics: %w", err)
			}
		}
	}
	return m, nil
}

// DefaultInterval is how often a healing pool is looked at again without
// a change: Proxmox VE is not watched.
const DefaultInterval = time.Minute

// Reconciler is the pool healing step over MachineDeployments.
type Reconciler struct {
	// Client lists Machines (from the informer) and patches
	// ProxmoxMachines; Reader reads the rest uncached.
	Client client.Client
	Reader client.Reader
	// All heals every pool, labelled or not (--heal-pools).
	All bool
	// Grace is poolheal's grace period (0: poolheal.DefaultGrace);
	// Interval how often a pool is looked at (0: DefaultInterval).
	Grace, Interval time.Duration
	// Kinds are the kinds of healing taken; nil takes every kind.
	Kinds []poolheal.Kind
	// Connect builds the Proxmox VE client of a tenant's credentials; nil
	// is pveapi.New.
	Connect func(pveapi.Config) (pveapi.Client, error)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Tasks is how long an action waits for its Proxmox task; 0 is two
	// minutes.
	TaskTimeout time.Duration
	Metrics     *Metrics
	Log         logr.Logger
}

var _ engine.Step[*clusterv1.MachineDeployment] = (*Reconciler)(nil)

// Takes says whether the pool of md heals.
func (r *Reconciler) Takes(md *clusterv1.MachineDeployment) bool {
	return md.DeletionTimestamp.IsZero() && (r.All || md.Labels[poolheal.Label] == "true")
}

// Reconcile heals the pool of one MachineDeployment.
func (r *Reconciler) Reconcile(ctx context.Context, s *engine.State[*clusterv1.MachineDeployment]) (engine.Result, error) {
	md := s.Object
	if !r.Takes(md) {
		return engine.Result{}, nil
	}
	g, err := r.Gather(ctx, md)
	if err != nil {
		s.Event(corev1.EventTypeWarning, ReasonCannotRead, err.Error())
		return engine.Result{}, err
	}
	if g == nil {
		return engine.Result{RequeueAfter: r.interval()}, nil
	}
	acts, waits := poolheal.Plan(g.Pool)
	var errs *multierror.Error
	for _, a := range acts {
		pm := g.machines[a.Machine]
		if err := r.act(ctx, g, a); err != nil {
			r.Metrics.failed(a.Kind)
			msg := fmt.Sprintf("%s of VM %d failed: %v", a.Kind, a.VMID, err)
			event(s, pm, corev1.EventTypeWarning, ReasonFailed, msg)
			errs = multierror.Append(errs, errors.New(msg))
			continue
		}
		r.Metrics.took(a.Kind)
		event(s, pm, corev1.EventTypeNormal, Reasons[a.Kind], a.Reason)
		r.Log.Info("healed", "pool", client.ObjectKeyFromObject(md), "kind", a.Kind, "vmid", a.VMID, "node", a.Node, "proxmoxMachine", a.Machine)
	}
	res := engine.Result{RequeueAfter: r.interval()}
	now := r.now()
	for _, w := range waits {
		if !w.After.IsZero() {
			res = res.Merge(engine.Result{RequeueAfter: max(w.After.Sub(now), time.Second)})
		}
	}
	return res, errs.ErrorOrNil()
}

func (r *Reconciler) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return DefaultInterval
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Gathered is one pool as healing reads it: poolheal's view, the Proxmox
// client of the tenant's token, and the ProxmoxMachines by name.
type Gathered struct {
	poolheal.Pool
	Proxmox  pveapi.Client
	machines map[string]*unstructured.Unstructured
}

// Gather reads the pool of md: its Machines and their ProxmoxMachines, and,
// with the tenant's capmox token, the VMs of their Proxmox pools and the
// nodes' state. It returns nil when there is nothing to heal yet (no
// ProxmoxMachine, or none names a Proxmox pool).
func (r *Reconciler) Gather(ctx context.Context, md *clusterv1.MachineDeployment) (*Gathered, error) {
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(md.Namespace), client.MatchingLabels{capmox.LabelDeploymentName: md.Name}); err != nil {
		return nil, fmt.Errorf("cannot list the Machines of pool %s: %w", md.Name, err)
	}
	g := &Gathered{Pool: poolheal.Pool{Now: r.now(), Grace: r.Grace, Enabled: r.kinds()}, machines: map[string]*unstructured.Unstructured{}}
	pools := map[string]bool{}
	for i := range machines.Items {
		m := &machines.Items[i]
		pm, err := r.proxmoxMachine(ctx, m)
		if err != nil || pm == nil {
			return nil, err
		}
		hm, pool, err := healMachine(m, pm)
		if err != nil {
			return nil, err
		}
		if pool != "" {
			pools[pool] = true
		}
		g.machines[hm.Name] = pm
		g.Machines = append(g.Machines, hm)
	}
	if len(pools) == 0 {
		return nil, nil
	}
	c, err := r.tenantClient(ctx, md)
	if err != nil {
		return nil, err
	}
	g.Proxmox = c
	g.VMs, err = poolVMs(ctx, c, pools, g.machines)
	return g, err
}

func (r *Reconciler) kinds() []poolheal.Kind {
	if r.Kinds == nil {
		return poolheal.Kinds
	}
	return r.Kinds
}

// proxmoxMachine reads the Machine's ProxmoxMachine in the version the API
// server serves; nil when the Machine has none (yet) or it is gone.
func (r *Reconciler) proxmoxMachine(ctx context.Context, m *clusterv1.Machine) (*unstructured.Unstructured, error) {
	ref := m.Spec.InfrastructureRef
	if ref.Kind != capmox.KindProxmoxMachine || ref.APIGroup != capmox.Group || ref.Name == "" {
		return nil, nil
	}
	return r.served(ctx, capmox.KindProxmoxMachine, m.Namespace, ref.Name)
}

// capmoxVersions are capmox's API versions, newest first.
var capmoxVersions = []string{"v1alpha2", "v1alpha1"}

// served reads a capmox object in the newest version the API server
// serves; nil when it is gone.
func (r *Reconciler) served(ctx context.Context, kind, ns, name string) (*unstructured.Unstructured, error) {
	for _, v := range capmoxVersions {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: capmox.Group, Version: v, Kind: kind})
		err := r.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
		switch {
		case meta.IsNoMatchError(err):
			continue
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("cannot read %s %s/%s: %w", kind, ns, name, err)
		}
		return u, nil
	}
	return nil, nil
}

// healMachine is poolheal's view of one ProxmoxMachine, and its Proxmox
// pool.
func healMachine(m *clusterv1.Machine, pm *unstructured.Unstructured) (poolheal.Machine, string, error) {
	where := fmt.Sprintf("ProxmoxMachine %s/%s", pm.GetNamespace(), pm.GetName())
	id, _, err := unstructured.NestedInt64(pm.Object, "spec", "virtualMachineID")
	if err != nil {
		return poolheal.Machine{}, "", fmt.Errorf("%s: spec.virtualMachineID: %w", where, err)
	}
	pool, _, err := unstructured.NestedString(pm.Object, "spec", "pool")
	if err != nil {
		return poolheal.Machine{}, "", fmt.Errorf("%s: spec.pool: %w", where, err)
	}
	hm := poolheal.Machine{Name: pm.GetName(), Machine: m.Name, VMID: int(id), HasNode: m.Status.NodeRef.IsDefined(),
		Deleting: pm.GetDeletionTimestamp() != nil, Provisioned: provisioned(pm)}
	_, hm.StoppedOnPurpose = pm.GetAnnotations()[poolheal.StoppedAnnotation]
	if at := pm.GetAnnotations()[poolheal.RetryAnnotation]; at != "" {
		// An annotation that does not parse counts as never.
		hm.RetriedAt, _ = time.Parse(time.RFC3339, at)
	}
	hm.DeleteFailedSince = deletionFailed(pm)
	return hm, pool, nil
}

// provisioned is capmox's word that the VM is provisioned:
// status.initialization.provisioned (v1alpha2) or status.ready (v1alpha1).
func provisioned(pm *unstructured.Unstructured) bool {
	if ok, found, _ := unstructured.NestedBool(pm.Object, "status", "initialization", "provisioned"); found {
		return ok
	}
	ok, _, _ := unstructured.NestedBool(pm.Object, "status", "ready")
	return ok
}

// The condition capmox reports a failed delete on, per version, with
// reason DeletionFailed: VirtualMachineProvisioned (v1alpha2, capmox
// v0.8+), VMProvisioned (v1alpha1, capmox v0.7).
const (
	conditionV1alpha2      = "VirtualMachineProvisioned"
	conditionV1alpha1      = "VMProvisioned"
	reasonDeletionFailed   = "DeletionFailed"
	lastTransitionTimeName = "lastTransitionTime"
)

// deletionFailed is when capmox reported it could not delete the VM,
// zero when it has not.
func deletionFailed(pm *unstructured.Unstructured) time.Time {
	conds, _, _ := unstructured.NestedSlice(pm.Object, "status", "conditions")
	for _, c := range conds {
		cm, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := cm["type"].(string)
		reason, _ := cm["reason"].(string)
		status, _ := cm["status"].(string)
		if (typ != conditionV1alpha2 && typ != conditionV1alpha1) || reason != reasonDeletionFailed || status != string(metav1.ConditionFalse) {
			continue
		}
		at, _ := cm[lastTransitionTimeName].(string)
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			// capmox said so without a time: since the epoch.
			return time.Unix(1, 0)
		}
		return t
	}
	return time.Time{}
}

// tenantClient builds the Proxmox client of the tenant's capmox token
// (TenantClient).
func (r *Reconciler) tenantClient(ctx context.Context, md *clusterv1.MachineDeployment) (pveapi.Client, error) {
	return TenantClient(ctx, r.Reader, r.Connect, md)
}

// TenantClient builds the Proxmox client of the tenant's capmox token: the
// Secret the ProxmoxCluster of md's Cluster names in credentialsRef, read
// through reader; connect nil is pveapi.New.
func TenantClient(ctx context.Context, reader client.Reader, connect func(pveapi.Config) (pveapi.Client, error), md *clusterv1.MachineDeployment) (pveapi.Client, error) {
	r := &Reconciler{Reader: reader}
	cl := &clusterv1.Cluster{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: md.Namespace, Name: md.Spec.ClusterName}, cl); err != nil {
		return nil, fmt.Errorf("cannot read Cluster %s/%s: %w", md.Namespace, md.Spec.ClusterName, err)
	}
	ref := cl.Spec.InfrastructureRef
	if ref.Kind != capmox.KindProxmoxCluster || ref.APIGroup != capmox.Group {
		return nil, fmt.Errorf("Cluster %s/%s runs on %s %s, not a ProxmoxCluster: the tenant's capmox token is a capmox pool's", md.Namespace, cl.Name, ref.APIGroup, ref.Kind)
	}
	pc, err := r.served(ctx, capmox.KindProxmoxCluster, md.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	if pc == nil {
		return nil, fmt.Errorf("ProxmoxCluster %s/%s is gone", md.Namespace, ref.Name)
	}
	name, _, _ := unstructured.NestedString(pc.Object, "spec", "credentialsRef", "name")
	ns, _, _ := unstructured.NestedString(pc.Object, "spec", "credentialsRef", "namespace")
	if name == "" {
		return nil, fmt.Errorf("ProxmoxCluster %s/%s has no spec.credentialsRef: pool healing and failure domains act with the tenant's own capmox token, which capmox reads from that Secret; "+
			"render the cluster with credentials.capmox, or turn healing off and leave failure domains out for the pool", md.Namespace, ref.Name)
	}
	if ns == "" {
		ns = md.Namespace
	}
	sec := &corev1.Secret{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sec); err != nil {
		return nil, fmt.Errorf("cannot read the capmox credentials Secret %s/%s: %w", ns, name, err)
	}
	cfg, err := CapmoxConfig(sec)
	if err != nil {
		return nil, fmt.Errorf("capmox credentials Secret %s/%s: %w", ns, name, err)
	}
	if connect == nil {
		connect = func(cfg pveapi.Config) (pveapi.Client, error) { return pveapi.New(cfg) }
	}
	c, err := connect(cfg)
	if err != nil {
		return nil, fmt.Errorf("capmox credentials Secret %s/%s: %w", ns, name, err)
	}
	return c, nil
}

// CapmoxConfig is the client configuration of a capmox credentials Secret
// (keys url, token, secret, and root_ca). TLS is verified whatever its
// insecure key says: against root_ca, else the system roots.
func CapmoxConfig(sec *corev1.Secret) (pveapi.Config, error) {
	cfg := pveapi.Config{URL: strings.TrimSpace(string(sec.Data["url"])), TokenID: strings.TrimSpace(string(sec.Data["token"])),
		Secret: strings.TrimSpace(string(sec.Data["secret"])), CAPEM: sec.Data["root_ca"],
		Names: pveapi.Names{URL: "key url", TokenID: "key token", CA: "key root_ca", Secret: "key secret"}}
	if cfg.URL == "" || cfg.TokenID == "" || cfg.Secret == "" {
		return pveapi.Config{}, errors.New("keys url, token and secret are required")
	}
	return cfg, nil
}

// poolVMs are the guests of pools named after a ProxmoxMachine of the
// pool (no other can be acted on), with their nodes' state and, on an
// online node, their age and lock from their configuration.
func poolVMs(ctx context.Context, c pveapi.Client, pools map[string]bool, machines map[string]*unstructured.Unstructured) ([]poolheal.VM, error) {
	nodes, err := pveapi.ClusterResources(ctx, c, pveapi.Nodes)
	if err != nil {
		return nil, err
	}
	online := map[string]bool{}
	for _, n := range nodes {
		online[n.Node] = n.Status == "online"
	}
	guests, err := pveapi.ClusterResources(ctx, c, pveapi.Guests)
	if err != nil {
		return nil, err
	}
	var out []poolheal.VM
	for _, g := range guests {
		if g.Type != "qemu" || !pools[g.Pool] || machines[g.Name] == nil {
			continue
		}
		vm := poolheal.VM{VMID: g.VMID, Name: g.Name, Node: g.Node, Running: g.Status == "running", Template: g.Template == 1,
			Lock: g.Lock, NodeOnline: online[g.Node]}
		if g.Tags != "" {
			vm.Tags = strings.Split(g.Tags, ";")
		}
		if vm.NodeOnline && !vm.Template {
			conf, err := pveapi.ReadGuestConfig(ctx, c, g.Node, g.VMID)
			if err != nil {
				return nil, err
			}
			vm.Created = conf.Created()
			vm.Lock = conf.Lock
		}
		out = append(out, vm)
	}
	return out, nil
}

// act carries one action out.
func (r *Reconciler) act(ctx context.Context, g *Gathered, a poolheal.Action) error {
	timeout := r.TaskTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch a.Kind {
	case poolheal.KindDestroyLostClone:
		return r.destroy(ctx, g, a)
	case poolheal.KindStartStopped:
		return task(ctx, g.Proxmox, a.Node, "POST", pveapi.Path("nodes", a.Node, "qemu", strconv.Itoa(a.VMID), "status", "start"))
	case poolheal.KindRetryDelete:
		pm := g.machines[a.Machine]
		patch := client.MergeFrom(pm.DeepCopy())
		ann := pm.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[poolheal.RetryAnnotation] = r.now().UTC().Format(time.RFC3339)
		pm.SetAnnotations(ann)
		if err := r.Client.Patch(ctx, pm, patch); err != nil {
			return fmt.Errorf("cannot annotate ProxmoxMachine %s/%s: %w", pm.GetNamespace(), pm.GetName(), err)
		}
		return nil
	}
	return fmt.Errorf("unknown kind %q", a.Kind)
}

// destroy stops and destroys a lost clone, after reading once more that
// no ProxmoxMachine records it and nothing locks it: between the plan and
// now capmox may have moved.
func (r *Reconciler) destroy(ctx context.Context, g *Gathered, a poolheal.Action) error {
	pm, err := r.served(ctx, capmox.KindProxmoxMachine, g.machines[a.Machine].GetNamespace(), a.Machine)
	if err != nil {
		return err
	}
	if pm != nil {
		if id, _, _ := unstructured.NestedInt64(pm.Object, "spec", "virtualMachineID"); int(id) == a.VMID {
			return fmt.Errorf("ProxmoxMachine %s now records VM %d: left alone", a.Machine, a.VMID)
		}
	}
	conf, err := pveapi.ReadGuestConfig(ctx, g.Proxmox, a.Node, a.VMID)
	if err != nil {
		return err
	}
	if conf.Lock != "" || conf.Name != a.Machine {
		return fmt.Errorf("VM %d is now locked (%q) or named %q: left alone", a.VMID, conf.Lock, conf.Name)
	}
	vm := pveapi.Path("nodes", a.Node, "qemu", strconv.Itoa(a.VMID))
	running := slices.ContainsFunc(g.VMs, func(v poolheal.VM) bool { return v.VMID == a.VMID && v.Running })
	if running {
		if err := task(ctx, g.Proxmox, a.Node, "POST", vm+"/status/stop"); err != nil {
			return err
		}
	}
	q := url.Values{"purge": {"1"}, "destroy-unreferenced-disks": {"1"}}
	return task(ctx, g.Proxmox, a.Node, "DELETE", vm+"?"+q.Encode())
}

// task sends a request that starts a Proxmox task and waits for it to
// succeed.
func task(ctx context.Context, c pveapi.Client, node, method, path string) error {
	var upid string
	var err error
	if method == "DELETE" {
		err = c.Delete(ctx, path, &upid)
	} else {
		err = c.Post(ctx, path, nil, &upid)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, termsafe.Cut(path), err)
	}
	st, err := pveapi.Tasks{Client: c}.Wait(ctx, node, upid, nil)
	if err != nil {
		return err
	}
	if !st.Succeeded() {
		return fmt.Errorf("%s %s: task %s ended %s", method, termsafe.Cut(path), termsafe.Cut(upid), termsafe.Cut(st.ExitStatus))
	}
	return nil
}

func (m *Metrics) took(k poolheal.Kind) {
	if m != nil {
		m.healed.WithLabelValues(string(k)).Inc()
	}
}

func (m *Metrics) failed(k poolheal.Kind) {
	if m != nil {
		m.failures.WithLabelValues(string(k)).Inc()
	}
}

// event records on the ProxmoxMachine an action was about, through the
// State's Recorder; none when it is not known.
func event(s *engine.State[*clusterv1.MachineDeployment], pm *unstructured.Unstructured, typ string, reason engine.Reason, msg string) {
	if pm != nil {
		s.Recorder.Event(pm, typ, reason, msg)
	}
}
