package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender/nodeverify"
)

func init() { register(newVerifyCmd) }

// verifyClients builds the management and tenant readers from kubeconfig
// paths; tests replace it with fake clients.
var verifyClients = func(mgmt, tenant string) (client.Client, client.Reader, error) {
	m, err := readerFor(mgmt)
	if err != nil {
		return nil, nil, err
	}
	t, err := readerFor(tenant)
	if err != nil {
		return nil, nil, err
	}
	return m, t, nil
}

func readerFor(path string) (client.Client, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot load kubeconfig %q: %w", path, err)
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("cannot build the client scheme: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("cannot connect with kubeconfig %q: %w", path, err)
	}
	return c, nil
}

// verifyOptions are the flags of `pxsubstrate verify`.
type verifyOptions struct {
	mgmt, tenant, namespace, cluster, capi string
}

func newVerifyCmd(app *App) *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify --kubeconfig MGMT --tenant-kubeconfig TENANT -n NAMESPACE --cluster NAME",
		Short: "Check that every tenant worker is initialised by the Proxmox CCM and paired with its Machine",
		Long: `Reads the tenant cluster's Nodes and the management cluster's Machines of
one Cluster and prints one row per Node: its providerID must equal its
Machine's (proxmox://<SMBIOS UUID>), it must carry topology.kubernetes.io/region
and zone, and must have lost the node.cloudprovider.kubernetes.io/uninitialized
taint. Machines that no Node matches get a row too. Each failure says what to
do. First it checks the management cluster for the two mistakes that stop
workers before any VM exists: no CAPI in-cluster IPAM provider, and a
ProxmoxCluster carrying cluster.x-k8s.io/managed-by. Exits 1 when a row or
one of those checks fails.

--cluster takes the Cluster name (kubernetes-<name>) or the Kubernetes
application name.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), app) },
	}
	cmd.Flags().StringVar(&o.mgmt, "kubeconfig", "", "kubeconfig of the management cluster (empty: the usual lookup)")
	cmd.Flags().StringVar(&o.tenant, "tenant-kubeconfig", "", "kubeconfig of the tenant cluster (the super-admin key of <cluster>-admin-kubeconfig, with a reachable server)")
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "tenant namespace of the Cluster in the management cluster")
	cmd.Flags().StringVar(&o.cluster, "cluster", "", "Cluster name")
	cmd.Flags().StringVar(&o.capi, "capi-version", "v1beta1", "Cluster API version to read Machines with: v1beta1 or v1beta2")
	for _, f := range []string{"tenant-kubeconfig", "namespace", "cluster"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

// run checks the management cluster, then pairs the tenant's Nodes with
// their Machines and prints one row each.
func (o verifyOptions) run(ctx context.Context, app *App) error {
	if o.capi != "v1beta1" && o.capi != "v1beta2" {
		return usageError{fmt.Errorf("--capi-version %q: use v1beta1 (CAPI 1.10) or v1beta2 (CAPI 1.11 and later)", o.capi)}
	}
	m, t, err := verifyClients(o.mgmt, o.tenant)
	if err != nil {
		return err
	}
	cluster := o.cluster
	if !strings.HasPrefix(cluster, "kubernetes-") {
		cluster = "kubernetes-" + cluster
	}
	findings, err := nodeverify.CheckManagement(ctx, m, m.RESTMapper(), o.namespace, cluster)
	if err != nil {
		return err
	}
	for _, f := range findings {
		fmt.Fprintf(app.ErrOut, "Error: %s: %s\n  fix: %s\n", f.Code, f.Problem, f.Fix)
	}
	rows, err := nodeverify.Collect(ctx, m, t, o.namespace, cluster, o.capi)
	if err != nil {
		return err
	}
	if err := app.Print(rows, func(w io.Writer) { verifyTable(w, rows) }); err != nil {
		return err
	}
	switch {
	case len(findings) > 0:
		return &ExitError{Code: 1, Err: errors.New("the management cluster cannot create these workers: see the errors above")}
	case nodeverify.Failed(rows):
		return &ExitError{Code: 1, Err: errors.New("some workers are not initialised or not paired: see the FIX column")}
	case len(rows) == 0:
		return &ExitError{Code: 1, Err: fmt.Errorf("the tenant has no Nodes and %s/%s has no Machines: nothing was verified", o.namespace, cluster)}
	}
	return nil
}

func verifyTable(w io.Writer, rows []nodeverify.Row) {
	fmt.Fprintln(w, "NODE\tMACHINE\tVM\tPROVIDERID\tREGION\tZONE\tSTATUS\tFIX")
	for _, r := range rows {
		status, fix := "ok", "-"
		if !r.OK {
			status, fix = strings.Join(r.Problems, "; "), strings.Join(r.Fixes, "; ")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Node, orDash(r.Machine), orDash(r.VM), orDash(r.ProviderID), orDash(r.Region), orDash(r.Zone), status, fix)
	}
}
