package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// MetricLeader is 1 while this process holds the Lease (or runs without
// leader election) and reconciles, 0 otherwise.
const MetricLeader = "pxsubstrate_controller_leader"

// Deps are what a Process takes from its caller besides the flags. Every
// field is optional.
type Deps struct {
	// Log receives the process's logs; default: discard.
	Log logr.Logger
	// Registry receives every metric; default: controller-runtime's
	// registry, which --metrics-bind-address serves.
	Registry prometheus.Registerer
	// Identity names this replica in the Lease; default: $POD_NAME or the
	// host name, plus a random suffix.
	Identity string
	// Wrap, when set, wraps the controller's client (tests count or fail
	// its calls).
	Wrap func(client.Client) client.Client
}

// Process is one controller process: a controller-runtime Manager that runs
// the informer cache, the metrics, probe and webhook servers on every
// replica, and the reconcile session (network controller, gateway, garbage
// collection) only on the replica holding the Lease.
type Process struct {
	opts     Options
	deps     Deps
	log      logr.Logger
	mgr      manager.Manager
	cs       kubernetes.Interface
	metrics  *network.Metrics
	leader   prometheus.Gauge
	identity string
	ns       string
}

// New builds a process; nothing runs before Start. o must have passed
// Validate.
func New(cfg *rest.Config, o Options, d Deps) (*Process, error) {
	if d.Log.GetSink() == nil {
		d.Log = logr.Discard()
	}
	if d.Registry == nil {
		d.Registry = ctrlmetrics.Registry
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	cfg.UserAgent = "proxmox-network-controller"
	p := &Process{opts: o, deps: d, log: d.Log, identity: d.Identity, ns: leaseNamespace(o)}
	if p.identity == "" {
		p.identity = identity()
	}
	var err error
	if p.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("cannot build a Kubernetes client: %w", err)
	}
	if p.metrics, err = network.NewMetrics(d.Registry); err != nil {
		return nil, err
	}
	p.leader = prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricLeader, Help: "1 while this replica holds the Lease and reconciles."})
	if err := d.Registry.Register(p.leader); err != nil {
		return nil, fmt.Errorf("cannot register %s: %w", MetricLeader, err)
	}
	if p.mgr, err = manager.New(cfg, p.managerOptions()); err != nil {
		return nil, fmt.Errorf("cannot build the controller manager: %w", err)
	}
	if err := p.addChecks(); err != nil {
		return nil, err
	}
	if err := p.setupWebhook(); err != nil {
		return nil, err
	}
	if err := p.mgr.Add(elector{p}); err != nil {
		return nil, fmt.Errorf("cannot add the reconcile session: %w", err)
	}
	return p, nil
}

func (p *Process) managerOptions() manager.Options {
	shutdown := p.opts.GracefulShutdown
	o := manager.Options{
		Scheme:                  Scheme(),
		Logger:                  p.log,
		Metrics:                 p.metricsOptions(),
		HealthProbeBindAddress:  p.opts.ProbeBindAddress,
		GracefulShutdownTimeout: &shutdown,
		Cache:                   cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		// A Secret is read by name from the API server, never listed or
		// watched: its Role names the one Secret it may get.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		// Leader election is the process's own (engine.RunElected), so
		// that the Lease is never released while a reconcile runs.
		LeaderElection: false,
	}
	if p.opts.WebhookPort != 0 {
		o.WebhookServer = p.opts.WebhookServer()
	}
	return o
}

// WebhookServer is the admission webhook's server: --webhook-port,
// --webhook-cert-dir and the TLS settings of TLSOptions.
func (o *Options) WebhookServer() webhook.Server {
	return webhook.NewServer(webhook.Options{Port: o.WebhookPort, CertDir: o.WebhookCertDir, TLSOpts: o.TLSOptions()})
}

// metricsOptions serve /metrics over HTTPS to callers the API server
// authenticates and authorizes (--metrics-secure, the default), or over
// plain HTTP to anyone.
func (p *Process) metricsOptions() metricsserver.Options {
	o := metricsserver.Options{BindAddress: p.opts.MetricsBindAddress}
	if p.opts.MetricsSecure {
		o.SecureServing = true
		o.CertDir = p.opts.MetricsCertDir
		o.TLSOpts = p.opts.TLSOptions()
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

func (p *Process) addChecks() error {
	if err := p.mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("cannot add the health check: %w", err)
	}
	synced := func(req *http.Request) error {
		if !p.mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("the informer cache has not synced")
		}
		return nil
	}
	if err := p.mgr.AddReadyzCheck("informers", synced); err != nil {
		return fmt.Errorf("cannot add the readiness check: %w", err)
	}
	if p.opts.WebhookPort != 0 {
		if err := p.mgr.AddReadyzCheck("webhook", p.mgr.GetWebhookServer().StartedChecker()); err != nil {
			return fmt.Errorf("cannot add the webhook readiness check: %w", err)
		}
	}
	return nil
}

// Start runs the process until ctx ends (then it stops gracefully and
// returns nil) or something fails, such as losing the Lease.
func (p *Process) Start(ctx context.Context) error {
	p.log.Info("starting proxmox-network-controller", "identity", p.identity, "leaderElect", p.opts.LeaderElect,
		"leaseNamespace", p.ns, "manageGatewayChassis", p.opts.ManageGatewayChassis, "ovnNBAddress", p.opts.OVNNBAddress,
		"ovnTLSSecret", p.opts.OVNTLSSecret, "subnetPruneTimeout", p.opts.SubnetPruneTimeout.String(), "webhookPort", p.opts.WebhookPort,
		"metricsBindAddress", p.opts.MetricsBindAddress, "metricsSecure", p.opts.MetricsSecure, "enableHTTP2", p.opts.EnableHTTP2, "tlsMinVersion", p.opts.TLSMinVersion,
		"version", version())
	if err := p.mgr.Start(ctx); err != nil {
		return fmt.Errorf("the controller stopped: %w", err)
	}
	return nil
}

// elector runs the reconcile session on every replica while it holds the
// Lease, or at once without leader election.
type elector struct{ p *Process }

// NeedLeaderElection is false: the manager starts the elector on every
// replica, and the elector campaigns itself.
func (elector) NeedLeaderElection() bool { return false }

func (e elector) Start(ctx context.Context) error {
	p := e.p
	session := runFunc(p.session)
	if !p.opts.LeaderElect {
		return session.Run(ctx)
	}
	lock, err := engine.NewLeaseLock(p.cs, p.ns, LeaseName, p.identity)
	if err != nil {
		return err
	}
	p.log.Info("campaigning for the lease", "lease", p.ns+"/"+LeaseName, "identity", p.identity)
	return engine.RunElected(ctx, engine.LeaderElection{
		Lock: lock, LeaseDuration: p.opts.LeaseDuration, RenewDeadline: p.opts.RenewDeadline, RetryPeriod: p.opts.RetryPeriod,
	}, session)
}

type runFunc func(ctx context.Context) error

func (f runFunc) Run(ctx context.Context) error { return f(ctx) }

// leaseNamespace is --leader-election-namespace, else $POD_NAMESPACE, else
// the service account's namespace, else DefaultNamespace.
func leaseNamespace(o Options) string {
	if o.LeaderElectionNS != "" {
		return o.LeaderElectionNS
	}
	if ns := os.Getenv(envPodNamespace); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(namespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return DefaultNamespace
}

// identity is $POD_NAME (or the host name) plus a random suffix, so that a
// restarted process never mistakes the previous one's Lease for its own.
func identity() string {
	name := os.Getenv(envPodName)
	if name == "" {
		name, _ = os.Hostname()
	}
	return name + "_" + uuid.NewString()
}
