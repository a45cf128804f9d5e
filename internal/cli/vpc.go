package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vpcrender"
)

// vpcFlags are the flags of `pxsubstrate render vpc`.
type vpcFlags struct {
	file, lookup        string
	fromCluster         bool
	kubeconfig, context string
}

// newRenderVPCCmd is `pxsubstrate render vpc`, a subcommand of render.
func newRenderVPCCmd(app *App) *cobra.Command {
	var f vpcFlags
	cmd := &cobra.Command{
		Use: "vpc -f VPC.yaml [--lookup CLUSTER.yaml | --from-cluster [--kubeconfig F] [--context C]]",
		Example: "  pxsubstrate render vpc -f vpc.yaml --lookup cluster.yaml\n" +
			"  pxsubstrate render vpc -f vpc.yaml --from-cluster --context mgmt",
		Short: "Print the Kube-OVN, IPAM and ProxmoxNetwork objects of a tenant VPC",
		Long: `Renders a VPC spec (namespace, name, subnets with cidr and proxmox: {zone,
vmRange}, peers, routes, egress) into the objects that make it: the Kube-OVN
Vpc and Subnets, a NetworkAttachmentDefinition per subnet, and for every
Proxmox-backed subnet its InClusterIPPool and ProxmoxNetwork; with egress the
VpcEgressGateway and its policy routes.

The spec may list the cluster's zones and the namespace's ProxmoxNetworks
itself (zones, previous); --lookup adds ProxmoxNetworkZone and ProxmoxNetwork
objects as kubectl prints them, and --from-cluster reads them from the
cluster of --kubeconfig (else KUBECONFIG, else ~/.kube/config) and
--context, telling a cluster without the proxmox.cozystack.io API (enable
the proxmox-network package) from one without a zone (create one). A
refusal exits 1 with the exact message on stderr. The default output is a
YAML stream for kubectl apply -f -; -o yaml and -o json print a v1 List.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := readVPCSpec(cmd.Context(), app, f)
			if err != nil {
				return err
			}
			r, err := vpcrender.Render(spec)
			if err != nil {
				return err
			}
			stream, err := r.YAML()
			if err != nil {
				return err
			}
			return app.Print(newKubeList(r.Objects), func(w io.Writer) { _, _ = w.Write(stream) })
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.file, "file", "f", "", "the VPC spec (YAML or JSON; - for stdin)")
	fs.StringVar(&f.lookup, "lookup", "", "ProxmoxNetworkZone and ProxmoxNetwork objects of the cluster (YAML or JSON)")
	fs.BoolVar(&f.fromCluster, "from-cluster", false, "read the zones and the namespace's ProxmoxNetworks from the cluster")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "with --from-cluster: the kubeconfig (default: KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "with --from-cluster: the kubeconfig context (default: its current context)")
	_ = cmd.MarkFlagRequired("file")
	cmd.MarkFlagsMutuallyExclusive("lookup", "from-cluster")
	return cmd
}

func readVPCSpec(ctx context.Context, app *App, f vpcFlags) (vpcrender.Spec, error) {
	data, err := readInput(app, f.file)
	if err != nil {
		return vpcrender.Spec{}, err
	}
	spec, err := vpcrender.ParseSpec(data)
	if err != nil {
		return vpcrender.Spec{}, fmt.Errorf("cannot read %s: %w", f.file, oneDocument(err, "render each VPC from a file of its own"))
	}
	if !f.fromCluster && (f.kubeconfig != "" || f.context != "") {
		return vpcrender.Spec{}, usageError{fmt.Errorf("--kubeconfig and --context need --from-cluster")}
	}
	var l vpcrender.Lookup
	switch {
	case f.fromCluster:
		if l, spec.API, err = clusterLookup(ctx, app, f, spec.Namespace); err != nil {
			return vpcrender.Spec{}, err
		}
	case f.lookup != "":
		if data, err = readInput(app, f.lookup); err != nil {
			return vpcrender.Spec{}, err
		}
		if l, err = vpcrender.ParseLookup(data); err != nil {
			return vpcrender.Spec{}, fmt.Errorf("cannot read %s: %w", f.lookup, err)
		}
	}
	spec.Zones = append(spec.Zones, l.Zones...)
	spec.Previous = append(spec.Previous, l.Networks...)
	return spec, nil
}

// clusterLookup reads the ProxmoxNetworkZones and the namespace's
// ProxmoxNetworks from the cluster, and whether it serves their API at all.
func clusterLookup(ctx context.Context, app *App, f vpcFlags, namespace string) (vpcrender.Lookup, vpcrender.APIState, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: f.kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence}
	if err := checkFilesForClientGo(app, kubeconfigFiles("--kubeconfig", rules.ExplicitPath, rules.Precedence)...); err != nil {
		return vpcrender.Lookup{}, vpcrender.APIUnknown, err
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context}).ClientConfig()
	if err != nil {
		return vpcrender.Lookup{}, vpcrender.APIUnknown, usageError{fmt.Errorf("--from-cluster: %w (set --kubeconfig, KUBECONFIG or ~/.kube/config, and --context)", err)}
	}
	gv := v1alpha1.GroupVersion.String()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return vpcrender.Lookup{}, vpcrender.APIUnknown, fmt.Errorf("cannot connect to the cluster at %s: %w", cfg.Host, err)
	}
	if _, err := dc.ServerResourcesForGroupVersion(gv); apierrors.IsNotFound(err) {
		return vpcrender.Lookup{}, vpcrender.APIAbsent, nil
	} else if err != nil {
		return vpcrender.Lookup{}, vpcrender.APIUnknown, fmt.Errorf("cannot read the %s API of the cluster at %s: %w", gv, cfg.Host, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return vpcrender.Lookup{}, vpcrender.APIUnknown, fmt.Errorf("cannot connect to the cluster at %s: %w", cfg.Host, err)
	}
	var items []map[string]any
	for _, r := range []struct{ resource, namespace string }{{"proxmoxnetworkzones", ""}, {"proxmoxnetworks", namespace}} {
		list, err := dyn.Resource(v1alpha1.GroupVersion.WithResource(r.resource)).Namespace(r.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return vpcrender.Lookup{}, vpcrender.APIUnknown, fmt.Errorf("cannot list %s: %w", schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: r.resource}, err)
		}
		for _, it := range list.Items {
			items = append(items, it.Object)
		}
	}
	l, err := vpcrender.LookupOf(items)
	if err != nil {
		return vpcrender.Lookup{}, vpcrender.APIUnknown, fmt.Errorf("the cluster's %s objects: %w", gv, err)
	}
	return l, vpcrender.APIServed, nil
}
