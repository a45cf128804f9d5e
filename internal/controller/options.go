package controller

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pxsubstrate/pxsubstrate/admission"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/heal"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/spread"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/poolheal"
)

// Defaults of the flags, as the proxmox-network package sets them.
const (
	DefaultNBAddress      = "ssl:ovn-nb.cozy-kubeovn.svc:6641"
	DefaultTLSSecret      = "cozy-kubeovn/kube-ovn-tls"
	DefaultMetricsAddress = ":8080"
	DefaultProbeAddress   = ":8081"
	DefaultWebhookPort    = 9443
	DefaultWebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"
	DefaultNamespace      = admission.DefaultReleaseNamespace
	LeaseName             = "proxmox-network-controller"
	// ReportingController is the reportingController of the
	// events.k8s.io Events the controller emits.
	ReportingController       = "proxmox-network-controller"
	DefaultKubeAPIQPS         = 50
	DefaultKubeAPIBurst       = 100
	DefaultGracefulShutdown   = 30 * time.Second
	WebhookPath               = "/validate"
	namespaceFile             = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
	envPodNamespace           = "POD_NAMESPACE"
	envPodName                = "POD_NAME"
	defaultLeaderElectEnabled = true
)

// DefaultWorkers is --workers: how many networks (and zones, and
// namespaces) are reconciled at once. A reconcile spends most of its time
// waiting on the API server, so several in flight converge a burst of
// networks several times faster than one.
const DefaultWorkers = 8

// ErrFlags marks a command line the controller cannot run with.
var ErrFlags = errors.New("invalid flags")

// SecretRef names a Secret: <namespace>/<name>.
type SecretRef struct{ Namespace, Name string }

func (r SecretRef) String() string { return r.Namespace + "/" + r.Name }

// ParseSecretRef parses "<namespace>/<name>"; both parts must be DNS-1123
// names, as the API server requires of a namespace and a Secret.
func ParseSecretRef(s string) (SecretRef, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return SecretRef{}, fmt.Errorf("secret %q: %w: want <namespace>/<name>, e.g. %s", s, ErrFlags, DefaultTLSSecret)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return SecretRef{}, fmt.Errorf("secret %q: %w: namespace %q: %s", s, ErrFlags, ns, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return SecretRef{}, fmt.Errorf("secret %q: %w: name %q: %s", s, ErrFlags, name, strings.Join(errs, "; "))
	}
	return SecretRef{Namespace: ns, Name: name}, nil
}

// Options are the controller's flags.
type Options struct {
	Kubeconfig           string
	ManageGatewayChassis bool
	OVNNBAddress         string
	// OVNTLSSecret is "<namespace>/<name>"; empty reads no Secret (tcp:
	// and unix: endpoints only).
	OVNTLSSecret string
	// ProxmoxHACredentials is "<namespace>/<name>" of the Secret with the
	// pool HA token (keys url, token_id, token_secret, root_ca); empty
	// turns pool HA off: Machines of pools with proxmox.ha get no HA
	// resource, and their pre-terminate hook is released at once.
	ProxmoxHACredentials string
	// HASweep is how often the HA resources and rules of gone Machines
	// and pools are removed.
	HASweep time.Duration
	// PoolHealing is which pools the controller heals of capmox's known
	// faults (package heal): "off", "labelled" (MachineDeployments with
	// proxmox.cozystack.io/heal: "true") or "all".
	PoolHealing string
	// PoolHealingGrace is the least age of a VM healing acts on, and
	// PoolHealingInterval how often a healing pool is looked at.
	PoolHealingGrace    time.Duration
	PoolHealingInterval time.Duration
	// FailureDomains keeps the pools spread over failure domains spread
	// (package spread): a lost domain's share moves to the others, and
	// comes back surge first. FailureDomainsInterval is how often such a
	// pool is looked at.
	FailureDomains         bool
	FailureDomainsInterval time.Duration
	SubnetPruneTimeout     time.Duration
	LeaderElect            bool
	LeaderElectionNS       string
	LeaseDuration          time.Duration
	RenewDeadline          time.Duration
	RetryPeriod            time.Duration
	MetricsBindAddress     string
	ProbeBindAddress       string
	WebhookPort            int
	WebhookCertDir         string
	AdmissionConfig        string
	KubeAPIQPS             float32
	KubeAPIBurst           int
	// Workers is network.Config.Workers.
	Workers            int
	LogLevel           string
	GracefulShutdown   time.Duration
	NBInactivityProbe  time.Duration
	NBReconnectTimeout time.Duration
	NBMaxBackoff       time.Duration
	// MetricsSecure serves /metrics over HTTPS, to callers the API
	// server authenticates (TokenReview) and authorizes (a
	// SubjectAccessReview for get on the non-resource URL /metrics).
	MetricsSecure bool
	// MetricsCertDir holds the metrics server's tls.crt and tls.key;
	// empty: a self-signed certificate made at start.
	MetricsCertDir string
	// EnableHTTP2 lets the metrics and webhook servers speak HTTP/2;
	// off, they offer only HTTP/1.1 (HTTP/2 rapid reset and stream
	// cancellation attacks stay out of reach).
	EnableHTTP2 bool
	// TLSMinVersion is the lowest TLS version the metrics and webhook
	// servers accept: "1.2" or "1.3".
	TLSMinVersion string
	// LogFormat is "json" or "text".
	LogFormat string
	tlsSecret SecretRef
	haSecret  SecretRef
}

// The values of --pool-healing.
const (
	PoolHealingOff      = "off"
	PoolHealingLabelled = "labelled"
	PoolHealingAll      = "all"
)

// PoolHealingModes are the values of --pool-healing.
var PoolHealingModes = []string{PoolHealingOff, PoolHealingLabelled, PoolHealingAll}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{
		ManageGatewayChassis:   true,
		OVNNBAddress:           DefaultNBAddress,
		OVNTLSSecret:           DefaultTLSSecret,
		HASweep:                2 * time.Minute,
		PoolHealing:            PoolHealingOff,
		PoolHealingGrace:       poolheal.DefaultGrace,
		PoolHealingInterval:    heal.DefaultInterval,
		FailureDomainsInterval: spread.DefaultInterval,
		SubnetPruneTimeout:     network.DefaultSubnetPruneTimeout,
		LeaderElect:            defaultLeaderElectEnabled,
		LeaseDuration:          engine.DefaultLeaseDuration,
		RenewDeadline:          engine.DefaultRenewDeadline,
		RetryPeriod:            engine.DefaultRetryPeriod,
		MetricsBindAddress:     DefaultMetricsAddress,
		ProbeBindAddress:       DefaultProbeAddress,
		WebhookPort:            DefaultWebhookPort,
		WebhookCertDir:         DefaultWebhookCertDir,
		KubeAPIQPS:             DefaultKubeAPIQPS,
		KubeAPIBurst:           DefaultKubeAPIBurst,
		Workers:                DefaultWorkers,
		LogLevel:               "info",
		GracefulShutdown:       DefaultGracefulShutdown,
		NBInactivityProbe:      ovngateway.DefaultInactivityProbe,
		NBReconnectTimeout:     ovngateway.DefaultReconnectTimeout,
		NBMaxBackoff:           ovngateway.DefaultMaxBackoff,
		MetricsSecure:          true,
		TLSMinVersion:          "1.2",
		LogFormat:              "json",
	}
}

// BindFlags registers the flags on fs, with o's values as defaults.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file; default: in-cluster config, then $KUBECONFIG, then ~/.kube/config")
	fs.BoolVar(&o.ManageGatewayChassis, "manage-gateway-chassis", o.ManageGatewayChassis, "manage the HA_Chassis_Group of each network's OVN router port; false reports GatewayReady=Unknown/Disabled")
	fs.StringVar(&o.OVNNBAddress, "ovn-nb-address", o.OVNNBAddress, "OVN northbound endpoints, comma-separated (tcp:, ssl: or unix:); writes go to the RAFT leader")
	fs.StringVar(&o.OVNTLSSecret, "ovn-tls-secret", o.OVNTLSSecret, "Secret <namespace>/<name> with keys cacert, cert and key for ssl: endpoints, read by name; empty reads none")
	fs.StringVar(&o.ProxmoxHACredentials, "proxmox-ha-credentials", o.ProxmoxHACredentials, "Secret <namespace>/<name> with the pool HA token (url, token_id, token_secret, root_ca); empty turns pool HA off")
	fs.DurationVar(&o.HASweep, "proxmox-ha-sweep-interval", o.HASweep, "how often the HA resources and rules of gone Machines and pools are removed")
	fs.StringVar(&o.PoolHealing, "pool-healing", o.PoolHealing, "which pools are healed of capmox's known faults (lost clones, workers left stopped, deletes held by capmox's backoff): off, labelled (proxmox.cozystack.io/heal: \"true\") or all")
	fs.DurationVar(&o.PoolHealingGrace, "pool-healing-grace", o.PoolHealingGrace, "the least age of a VM pool healing destroys or starts")
	fs.DurationVar(&o.PoolHealingInterval, "pool-healing-interval", o.PoolHealingInterval, "how often a healing pool is looked at (Proxmox VE is not watched)")
	fs.BoolVar(&o.FailureDomains, "failure-domains", o.FailureDomains, "keep pools spread over failure domains (proxmox.failureDomains) spread: a lost domain's share of workers moves to the others and comes back surge first")
	fs.DurationVar(&o.FailureDomainsInterval, "failure-domains-interval", o.FailureDomainsInterval, "how often a pool spread over failure domains is looked at (Proxmox VE is not watched)")
	fs.DurationVar(&o.SubnetPruneTimeout, "subnet-prune-timeout", o.SubnetPruneTimeout, "how long a deleted subnet Kube-OVN still lists on its Vlan holds the VLAN")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "reconcile only while holding the coordination.k8s.io Lease "+LeaseName)
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", o.LeaderElectionNS, "namespace of the Lease; default: $POD_NAMESPACE, the service account's namespace, then "+DefaultNamespace)
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "how long a Lease holder keeps it without renewing")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "how long the leader tries to renew before it stops reconciling")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "how often replicas try to take or renew the Lease")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "address of the /metrics endpoint; 0 turns it off")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "serve /metrics over HTTPS to callers the API server authenticates and authorizes (get on /metrics); false serves plain HTTP to anyone")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "folder holding the metrics server's tls.crt and tls.key; empty: a self-signed certificate made at start")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2, "let the metrics and webhook servers speak HTTP/2; off they offer only HTTP/1.1")
	fs.StringVar(&o.TLSMinVersion, "tls-min-version", o.TLSMinVersion, "lowest TLS version of the metrics and webhook servers: 1.2 or 1.3")
	fs.StringVar(&o.ProbeBindAddress, "health-probe-bind-address", o.ProbeBindAddress, "address of the /healthz and /readyz endpoints; 0 turns them off")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "port of the admission webhook (HTTPS, path "+WebhookPath+"); 0 turns it off")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir, "folder holding the webhook's tls.crt and tls.key (reloaded when they change)")
	fs.StringVar(&o.AdmissionConfig, "admission-config", o.AdmissionConfig, "proxmox-network package values (zones, admission) the webhook judges by; default: every policy on, no zones")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "queries per second to the Kubernetes API")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "burst of queries to the Kubernetes API")
	fs.IntVar(&o.Workers, "workers", o.Workers, "how many networks, zones and namespaces are reconciled at once (one object never twice at once)")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "debug, info or error")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "json (one object a line) or text (key=value); logs go to stderr")
	fs.DurationVar(&o.GracefulShutdown, "graceful-shutdown-timeout", o.GracefulShutdown, "how long to wait for reconciles and servers to stop after SIGTERM")
	fs.DurationVar(&o.NBInactivityProbe, "ovn-nb-inactivity-probe", o.NBInactivityProbe, "silence after which the NB connection is checked with an echo")
	fs.DurationVar(&o.NBReconnectTimeout, "ovn-nb-reconnect-timeout", o.NBReconnectTimeout, "bound of each NB connection attempt; shorter than the inactivity probe")
	fs.DurationVar(&o.NBMaxBackoff, "ovn-nb-max-backoff", o.NBMaxBackoff, "longest wait between NB connection attempts")
}

// Validate says what is wrong with o, all at once, and fills the parsed
// fields.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrFlags}, a...)...))
	}
	errs = append(errs, o.validateSecrets()...)
	if o.HASweep <= 0 {
		bad("--proxmox-ha-sweep-interval %s must be positive", o.HASweep)
	}
	if !slices.Contains(PoolHealingModes, o.PoolHealing) {
		bad("--pool-healing %q is not one of %s", o.PoolHealing, strings.Join(PoolHealingModes, ", "))
	}
	if o.PoolHealingGrace <= 0 || o.PoolHealingInterval <= 0 {
		bad("--pool-healing-grace (%s) and --pool-healing-interval (%s) must be positive", o.PoolHealingGrace, o.PoolHealingInterval)
	}
	if o.FailureDomainsInterval <= 0 {
		bad("--failure-domains-interval %s must be positive", o.FailureDomainsInterval)
	}
	if o.SubnetPruneTimeout <= 0 {
		bad("--subnet-prune-timeout %s must be positive", o.SubnetPruneTimeout)
	}
	if o.LeaderElect && (o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod || o.LeaseDuration <= o.RenewDeadline) {
		bad("leader election needs 0 < --leader-elect-retry-period (%s) < --leader-elect-renew-deadline (%s) < --leader-elect-lease-duration (%s)",
			o.RetryPeriod, o.RenewDeadline, o.LeaseDuration)
	}
	if o.WebhookPort < 0 || o.WebhookPort > 65535 {
		bad("--webhook-port %d is not a port (0 turns the webhook off)", o.WebhookPort)
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 {
		bad("--kube-api-qps (%v) and --kube-api-burst (%d) must be positive", o.KubeAPIQPS, o.KubeAPIBurst)
	}
	if o.Workers < 1 {
		bad("--workers %d must be at least 1", o.Workers)
	}
	if _, err := parseLevel(o.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if o.LogFormat != "json" && o.LogFormat != "text" {
		bad("--log-format %q: use json or text", o.LogFormat)
	}
	if _, ok := tlsVersions[o.TLSMinVersion]; !ok {
		bad("--tls-min-version %q: use 1.2 or 1.3", o.TLSMinVersion)
	}
	if o.MetricsCertDir != "" && !o.MetricsSecure {
		bad("--metrics-cert-dir is set but --metrics-secure=false serves plain HTTP; drop one of them")
	}
	if o.GracefulShutdown <= 0 {
		bad("--graceful-shutdown-timeout %s must be positive", o.GracefulShutdown)
	}
	return errors.Join(errs...)
}

// validateSecrets checks the NB address and parses the Secret references
// (--ovn-tls-secret, --proxmox-ha-credentials).
func (o *Options) validateSecrets() []error {
	var errs []error
	if o.ManageGatewayChassis {
		if _, err := ovngateway.ParseAddress(o.OVNNBAddress); err != nil {
			errs = append(errs, fmt.Errorf("--ovn-nb-address: %w", err))
		}
		if o.OVNTLSSecret != "" {
			ref, err := ParseSecretRef(o.OVNTLSSecret)
			if err != nil {
				errs = append(errs, fmt.Errorf("--ovn-tls-secret: %w", err))
			}
			o.tlsSecret = ref
		} else if strings.Contains(o.OVNNBAddress, "ssl:") {
			errs = append(errs, fmt.Errorf("%w: --ovn-nb-address %q has ssl: endpoints, so --ovn-tls-secret must name the Secret holding cacert, cert and key", ErrFlags, o.OVNNBAddress))
		}
	}
	if o.ProxmoxHACredentials != "" {
		ref, err := ParseSecretRef(o.ProxmoxHACredentials)
		if err != nil {
			errs = append(errs, fmt.Errorf("--proxmox-ha-credentials: %w", err))
		}
		o.haSecret = ref
	}
	return errs
}

// TLSSecret is the parsed --ovn-tls-secret; ok is false when none is read.
func (o *Options) TLSSecret() (SecretRef, bool) {
	return o.tlsSecret, o.ManageGatewayChassis && o.tlsSecret.Name != ""
}

// tlsVersions are the values of --tls-min-version.
var tlsVersions = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

// aeadSuites are the TLS 1.2 cipher suites the servers accept: forward
// secret key exchange and authenticated encryption only (no CBC, no SHA-1
// MAC, no RSA key exchange). TLS 1.3's suites are all AEAD.
var aeadSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// TLSOptions are the settings of the metrics and webhook servers' TLS:
// the lowest version of --tls-min-version, AEAD cipher suites only, and
// HTTP/1.1 only unless --enable-http2. o must have passed Validate.
func (o *Options) TLSOptions() []func(*tls.Config) {
	minVersion := tlsVersions[o.TLSMinVersion]
	http2 := o.EnableHTTP2
	return []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = minVersion
		c.CipherSuites = aeadSuites
		if !http2 {
			c.NextProtos = []string{"http/1.1"}
		}
	}}
}

// HASecret is the parsed --proxmox-ha-credentials, after Validate; false
// when pool HA is off.
func (o *Options) HASecret() (SecretRef, bool) {
	return o.haSecret, o.ProxmoxHACredentials != ""
}
