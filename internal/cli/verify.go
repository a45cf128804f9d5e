package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
	"github.com/pxsubstrate/pxsubstrate/verify"
)

func init() { register(newVerifyCmd) }

// verifyClients builds the management and tenant readers from their
// client configurations; tests replace it with fake clients.
var verifyClients = func(mgmt, tenant *rest.Config) (client.Client, client.Reader, error) {
	m, err := readerFor(mgmt, "management")
	if err != nil {
		return nil, nil, err
	}
	t, err := readerFor(tenant, "tenant")
	if err != nil {
		return nil, nil, err
	}
	return m, t, nil
}

func readerFor(cfg *rest.Config, which string) (client.Client, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("cannot build the client scheme: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("cannot connect to the %s cluster at %s: %w", which, cfg.Host, err)
	}
	return c, nil
}

// kubeFlags are kubectl's connection flags for the management cluster
// (--kubeconfig, --context, -n, --user, --server, ...), read as kubectl
// reads them: KUBECONFIG, then ~/.kube/config. --cluster is left out,
// since verify's --cluster names the Cluster object, and so are the
// flags that turn TLS verification or basic authentication on.
func kubeFlags() *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(false)
	f.ClusterName, f.Insecure, f.Username, f.Password, f.CacheDir = nil, nil, nil, nil, nil
	return f
}

// verifyOptions are the flags of `pxsubstrate verify`.
type verifyOptions struct {
	kube                                 *genericclioptions.ConfigFlags
	tenant, tenantContext, cluster, capi string
	ha                                   liveFlags
}

// configs resolves the management cluster's client configuration and
// namespace the way kubectl does, and the tenant's from its own file.
func (o verifyOptions) configs(app *App) (mgmt, tenant *rest.Config, namespace string, err error) {
	loader := o.kube.ToRawKubeConfigLoader()
	access := loader.ConfigAccess()
	files := append(kubeconfigFiles("--kubeconfig", access.GetExplicitFile(), access.GetLoadingPrecedence()), clientGoFile{"--tenant-kubeconfig", o.tenant},
		clientGoFile{"--certificate-authority", *o.kube.CAFile}, clientGoFile{"--client-certificate", *o.kube.CertFile}, clientGoFile{"--client-key", *o.kube.KeyFile})
	if err := checkFilesForClientGo(app, files...); err != nil {
		return nil, nil, "", err
	}
	if mgmt, err = loader.ClientConfig(); err != nil {
		return nil, nil, "", usageError{fmt.Errorf("management cluster: %w (set --kubeconfig, KUBECONFIG or ~/.kube/config, and --context)", err)}
	}
	if namespace, _, err = loader.Namespace(); err != nil {
		return nil, nil, "", fmt.Errorf("management cluster: cannot read the namespace: %w", err)
	}
	tenant, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.tenant},
		&clientcmd.ConfigOverrides{CurrentContext: o.tenantContext}).ClientConfig()
	if err != nil {
		return nil, nil, "", usageError{errorf("--tenant-kubeconfig %q: %w", o.tenant, err)}
	}
	return mgmt, tenant, namespace, nil
}

// verifyLong is the help text of `pxsubstrate verify`.
const verifyLong = `Reads the tenant cluster's Nodes and the management cluster's Machines of
one Cluster and prints one row per Node, then one per Machine no Node
matches. Each problem of a row has a code and the command that fixes or
inspects it:

  NoProviderID           the CCM has not initialised the Node
  ProviderIDDefaultForm  proxmox://<region>/<vmid>: the CCM lacks features.provider: capmox
  ProviderIDForm         a providerID that is not proxmox://<SMBIOS UUID>
  ProviderIDCase         it differs from its Machine's only in letter case
  ProviderIDMismatch     its Machine (by nodeRef) has another providerID
  NodeWithoutMachine     no Machine of the cluster has its providerID
  NoTopologyLabels       no topology.kubernetes.io/region or zone label: the
                         CSI node plugin exits with "Failed to get region or
                         zone for node"
  RegionMismatch         its region label is not the region of the CCM's
                         credentials Secret (the <cluster>-pccm Deployment's)
  ZoneMismatch           its zone is not the Proxmox node capmox reports for
                         the VM (a live migration)
  Uninitialized          still tainted node.cloudprovider.kubernetes.io/uninitialized
  CSINodeNotReady        no ready CSI node plugin Pod on the Node (checked when
                         the <cluster>-pcsi-controller Deployment exists)
  MachineNoProviderID    a Machine whose VM is not provisioned yet
  MachineWithoutNode     a Machine no tenant Node matches
  DiskSmallerThanAsked   its filesystem is smaller than the system disk the
                         pool's diskSize asked for (disks.bootVolume)

Before the rows it checks what stops workers as a whole, each reported with
its code and fix: no CAPI in-cluster IPAM provider (IPAMProviderMissing), a
ProxmoxCluster carrying cluster.x-k8s.io/managed-by (ManagedByAnnotation),
a control plane Service without a LoadBalancer address
(LoadBalancerNoAddress), a worker whose TalosConfig lacks the host entry of
its control plane endpoint or names another address (NoHostEntry,
StaleHostEntry), a CCM or CSI controller Deployment that is not ready
(ControllerNotReady), and an IP pool with no free address
(IPPoolExhausted). Exits 1 when a row or one of those checks fails. It
also warns, without failing, of each ProxmoxNetwork of the namespace whose
gateway group cannot fail over (GatewayNoFailover: its GatewayFailover
condition is False, NoFailover), naming the fix: a third trunk node, or a
chassis outside the group that carries the VPC, and of workers of a pool
with proxmox.ha that share a Proxmox node (HAWorkersShareNode). With
--proxmox-url, --proxmox-token-id and --proxmox-token-secret-file it also
checks Proxmox, as far as the token may read: with Sys.Audit on / (the
pool HA token) it names each HA resource the controller made for a Machine
of the namespace that is gone (HAResourceWithoutMachine; a token that may
not read them: the warning HAResourcesNotVisible); with VM.Audit on the
pools the namespace's ProxmoxMachines clone into (the tenant's capmox
token) it names each VM of those pools named after a ProxmoxMachine that
records another VM (DuplicateWorkerVM: a clone capmox made and lost the id
of) and each stopped VM of a ProxmoxMachine capmox reports provisioned
(WorkerVMStopped: capmox v0.9.0 never starts it again), and warns of each VM of
the pools no ProxmoxMachine knows
(WorkerVMWithoutMachine) and of a pool the token sees no VM of
(PoolNotVisible).

--cluster takes the Cluster name (kubernetes-<name>) or the Kubernetes
application name. The management cluster is reached as kubectl reaches it:
--kubeconfig, else KUBECONFIG, else ~/.kube/config, with --context and -n
(default: the context's namespace).`

func newVerifyCmd(app *App) *cobra.Command {
	o := verifyOptions{kube: kubeFlags(), ha: proxmoxCheckFlags()}
	cmd := &cobra.Command{
		Use: "verify --tenant-kubeconfig TENANT --cluster NAME [-n NAMESPACE] [--kubeconfig MGMT] [--context CTX]",
		Example: "  pxsubstrate verify --tenant-kubeconfig tenant.kubeconfig -n tenant-alpha --cluster alpha\n" +
			"  pxsubstrate verify --context mgmt --tenant-kubeconfig tenant.kubeconfig -n tenant-alpha --cluster alpha -o wide",
		Short: "Check that every tenant worker is initialised by the Proxmox CCM and paired with its Machine",
		Long:  verifyLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), app) },
	}
	o.kube.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.tenant, "tenant-kubeconfig", "", "kubeconfig of the tenant cluster (the super-admin key of <cluster>-admin-kubeconfig, with a reachable server)")
	cmd.Flags().StringVar(&o.tenantContext, "tenant-context", "", "context of --tenant-kubeconfig to use (default: its current context)")
	cmd.Flags().StringVar(&o.cluster, "cluster", "", "Cluster name")
	cmd.Flags().StringVar(&o.capi, "capi-version", "v1beta1", "Cluster API version to read Machines with: v1beta1 or v1beta2")
	bindProxmoxChecks(&o.ha, cmd.Flags())
	for _, f := range []string{"tenant-kubeconfig", "cluster"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

// run gathers the management cluster, Proxmox VE (with the --proxmox-*
// flags) and the tenant cluster, judges them, and prints the findings,
// then one row per Node and per Machine no Node matches.
func (o verifyOptions) run(ctx context.Context, app *App) error {
	if o.capi != "v1beta1" && o.capi != "v1beta2" {
		return usageError{errorf("--capi-version %q: use v1beta1 (CAPI 1.10) or v1beta2 (CAPI 1.11 and later)", o.capi)}
	}
	mc, tc, namespace, err := o.configs(app)
	if err != nil {
		return err
	}
	m, t, err := verifyClients(mc, tc)
	if err != nil {
		return err
	}
	cluster := o.cluster
	if !strings.HasPrefix(cluster, "kubernetes-") {
		cluster = "kubernetes-" + cluster
	}
	src := verify.Sources{Management: m, Mapper: m.RESTMapper(), Tenant: t}
	if o.ha.wanted() {
		c, _, err := o.ha.client(app)
		if err != nil {
			return tlsHint(err)
		}
		src.Proxmox, src.ProxmoxTokenID = c, o.ha.tokenID
	}
	snap, err := verify.Gather(ctx, src, verify.Target{Namespace: namespace, Cluster: cluster, CAPIVersion: o.capi, TenantKubeconfig: o.tenant})
	if err != nil {
		return err
	}
	rep := verify.Judge(snap)
	for _, f := range rep.Findings {
		level := "Warning"
		if !f.Warning {
			level = "Error"
		}
		fmt.Fprintf(app.ErrOut, "%s: %s: %s\n  fix: %s\n", level, f.Code, escapeControl(f.Problem), escapeControl(f.Fix))
		if f.Healing != "" {
			fmt.Fprintf(app.ErrOut, "  healing: %s\n", escapeControl(f.Healing))
		}
	}
	rows := rep.Rows
	if err := app.Print(rows, func(w io.Writer) { verifyTable(w, rows, app.Wide()) }); err != nil {
		return err
	}
	switch {
	case rep.Errors() > 0:
		return &ExitError{Code: 1, Err: fmt.Errorf("%d error(s) above on the management cluster or on Proxmox: each names its fix", rep.Errors())}
	case verify.Failed(rows):
		return &ExitError{Code: 1, Err: errors.New("some workers are not initialised or not paired: see the fix of each failed row")}
	case len(rows) == 0:
		return &ExitError{Code: 1, Err: fmt.Errorf("the tenant has no Nodes and %s/%s has no Machines: nothing was verified", namespace, cluster)}
	}
	return nil
}

func verifyTable(w io.Writer, rows []verify.Row, wide bool) {
	t := texttable.New(texttable.Main("NODE"), texttable.Main("MACHINE"), texttable.Main("VM"), texttable.Main("ADDRESS"), texttable.Main("STATE"),
		texttable.Main("PROVIDERID"), texttable.Main("REGION"), texttable.Main("ZONE"), texttable.Main("STATUS"), texttable.Note("PROBLEM"), texttable.Note("FIX"))
	for _, r := range rows {
		status := "ok"
		if !r.OK {
			status = "failed"
		}
		problems := make([]string, len(r.Problems))
		for i, p := range r.Problems {
			problems[i] = r.Codes[i] + ": " + p
		}
		t.Add(r.Node, r.Machine, r.VM, r.Address, r.State, r.ProviderID, r.Region, r.Zone, status, strings.Join(problems, "; "), strings.Join(r.Fixes, "; "))
	}
	t.Write(w, wide)
}
