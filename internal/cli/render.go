package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

func init() { register(newRenderCmd) }

func newRenderCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print the objects a tenant cluster, worker pool or VPC needs on the management cluster",
	}
	cmd.AddCommand(newRenderClusterCmd(app), newRenderNodesCmd(app), newRenderVPCCmd(app))
	return cmd
}

// renderFlags are shared by render cluster and render nodes.
type renderFlags struct {
	file, lookup, capmox string
	tenants              string // render nodes only
	tenantsGiven         bool   // --tenants was on the command line, maybe empty
	pciMappings          string // render nodes only
	versions, images     []string
	preDelete            string // render cluster only
	requireDigests       bool
}

func (f *renderFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "the input object (YAML or JSON; - for stdin)")
	cmd.Flags().StringVar(&f.lookup, "lookup", "", "live objects the guards, VPC lookups and template retention read: Clusters, MachineDeployments, MachineSets, ProxmoxMachineTemplates, ProxmoxNetworks (YAML stream or List)")
	cmd.Flags().StringVar(&f.capmox, "capmox", "v0.7", "capmox release to render for: v0.7 (v1alpha1, CAPI v1beta1) or v0.8 and later (v1alpha2, CAPI v1beta2)")
	cmd.Flags().StringArrayVar(&f.versions, "kubernetes-version", nil, "map a minor to the patch release rendered for it, e.g. v1.35=v1.35.2 (repeatable)")
	cmd.Flags().StringArrayVar(&f.images, "image", nil, "override an image, FIELD=REF with FIELD one of "+strings.Join(capmoxrender.ImageFields, ", ")+" and REF name:tag, name@sha256:<64 hex> or name:tag@sha256:<64 hex> (repeatable)")
	cmd.Flags().BoolVar(&f.requireDigests, "require-digests", false, "refuse, by field, every image not pinned by digest")
	_ = cmd.MarkFlagRequired("file")
}

func (f *renderFlags) options(app *App) (capmoxrender.Options, error) {
	gen, err := capmoxrender.ParseCapmox(f.capmox)
	if err != nil {
		return capmoxrender.Options{}, usageError{err}
	}
	pd, err := capmoxrender.ParsePreDelete(f.preDelete)
	if err != nil {
		return capmoxrender.Options{}, usageError{fmt.Errorf("--%w", err)}
	}
	o := capmoxrender.Options{Capmox: gen, KubernetesVersions: map[string]string{}, PreDelete: pd, RequireDigests: f.requireDigests}
	o.Warn = func(msg string) { fmt.Fprintf(app.ErrOut, "Warning: %s\n", escapeControl(msg)) }
	for _, kv := range f.images {
		field, ref, _ := strings.Cut(kv, "=")
		p := o.Images.Field(field)
		if p == nil || ref == "" {
			return o, usageError{errorf("--image %q: write FIELD=REF with FIELD one of %s", kv, strings.Join(capmoxrender.ImageFields, ", "))}
		}
		*p = ref
	}
	for _, v := range f.versions {
		minor, patch, ok := strings.Cut(v, "=")
		if !ok {
			return o, usageError{errorf("--kubernetes-version %q: write MINOR=PATCH such as v1.35=v1.35.2", v)}
		}
		o.KubernetesVersions[minor] = patch
	}
	if err := f.tenantOptions(app, &o); err != nil {
		return o, err
	}
	if err := f.readPCIMappings(app, &o); err != nil {
		return o, err
	}
	if f.lookup == "" {
		return o, nil
	}
	data, err := readInput(app, f.lookup)
	if err != nil {
		return o, err
	}
	objs, err := capmoxrender.ReadObjectsBytes(data)
	if err != nil {
		return o, fmt.Errorf("cannot read %s: %w", f.lookup, err)
	}
	o.Guards, o.Networks, o.Templates, o.Clusters = objs, objs, objs, objs
	return o, nil
}

const renderOutput = `The default output is a YAML stream for kubectl apply -f -; -o yaml and
-o json print a v1 List. A refusal exits 1 with the exact message on stderr.`

func newRenderClusterCmd(app *App) *cobra.Command {
	var f renderFlags
	cmd := &cobra.Command{
		Use:     "cluster -f KUBERNETES.yaml [--lookup LIVE.yaml] [--capmox v0.7|v0.8]",
		Example: "  pxsubstrate render cluster -f kubernetes.yaml --lookup live.yaml | kubectl apply -f -",
		Short:   "Print the CAPI Cluster, Kamaji control plane, ProxmoxCluster and CCM/CSI controllers of a tenant Kubernetes",
		Long: `Renders an apps.cozystack.io/v1alpha1 Kubernetes with substrate: proxmox
into the objects the management cluster needs: the Cluster, the
KamajiControlPlane published as a LoadBalancer, the ProxmoxCluster, the
cloud-controller-manager and CSI controller Deployments (their cloud-config is
built from the credentials Secret at Pod start) and the tenant-side CSI
HelmRelease. --lookup enables the substrate guard and VPC-subnet mode.

--pre-delete adds the Job that frees the tenant's Proxmox volumes before
the cluster is deleted (it deletes every PersistentVolumeClaim of the
tenant and the Pods that hold one, then waits for the CSI driver to delete
the disks): omit (default) leaves it out, since kubectl apply would run it
at once; include adds it with the Helm pre-delete hook annotations, for a
chart that packages the output; only prints it alone, to apply and wait
for just before deleting the cluster with kubectl.

` + renderOutput,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd.Context(), app, &f, func(ctx context.Context, data []byte, o capmoxrender.Options) ([]*unstructured.Unstructured, error) {
				k, err := capmoxrender.ParseKubernetes(data)
				if err != nil {
					return nil, inFile(f.file, oneDocument(err, "render each Kubernetes from a file of its own"))
				}
				return capmoxrender.RenderCluster(ctx, k, o)
			})
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&f.preDelete, "pre-delete", "omit", "the Job that frees the tenant's Proxmox volumes before deletion: omit, include (Helm hook) or only")
	return cmd
}

func newRenderNodesCmd(app *App) *cobra.Command {
	var f renderFlags
	cmd := &cobra.Command{
		Use:     "nodes -f KUBERNETESNODES.yaml [--lookup LIVE.yaml] [--capmox v0.7|v0.8]",
		Example: "  pxsubstrate render nodes -f pool.yaml --lookup live.yaml --capmox v0.8",
		Short:   "Print the ProxmoxMachineTemplate, TalosConfigTemplate, MachineDeployment and MachineHealthCheck of a worker pool",
		Long: `Renders an apps.cozystack.io/v1alpha1 KubernetesNodes with substrate: proxmox
into the pool's objects. The machine and Talos config templates are named
after a hash of their spec, so a change rolls the pool. --lookup enables the
substrate guards, VPC-subnet NICs and the retention of earlier machine
templates that a MachineSet still references.

` + renderOutput,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.tenantsGiven = cmd.Flags().Changed("tenants")
			return runRender(cmd.Context(), app, &f, func(ctx context.Context, data []byte, o capmoxrender.Options) ([]*unstructured.Unstructured, error) {
				n, err := capmoxrender.ParseKubernetesNodes(data)
				if err != nil {
					return nil, inFile(f.file, oneDocument(err, "render each KubernetesNodes pool from a file of its own"))
				}
				return capmoxrender.RenderNodes(ctx, n, o)
			})
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&f.tenants, "tenants", "", "the tenant specification (acl plan's TENANTS.yaml): each tenant's vmIDRange becomes the vmIDRange of the pools in its Proxmox pool, and a pool's gpus must name its tenant's pciMappings")
	cmd.Flags().StringVar(&f.pciMappings, "pci-mappings", "", "the Proxmox VE cluster's PCI mappings, the answer of pvesh get /cluster/mapping/pci --output-format json: a pool's gpus are placed on their devices")
	return cmd
}

// tenantOptions reads --tenants into Options.VMIDRanges and
// Options.PoolTenants, by Proxmox pool.
func (f *renderFlags) tenantOptions(app *App, o *capmoxrender.Options) error {
	if !f.tenantsGiven {
		return nil
	}
	spec, err := readTenants(app, f.tenants)
	if err != nil {
		return err
	}
	o.VMIDRanges = map[string]capmoxrender.VMIDRange{}
	o.PoolTenants = map[string]capmoxrender.PoolTenant{}
	for _, t := range spec.Tenants {
		if r := t.VMIDRange; r != nil {
			o.VMIDRanges[t.Pool] = capmoxrender.VMIDRange{Start: int64(r.Start), End: int64(r.End)}
		}
		o.PoolTenants[t.Pool] = capmoxrender.PoolTenant{Name: t.Name, PCIMappings: t.PCIMappings}
	}
	return nil
}

// readPCIMappings reads --pci-mappings into Options.PCIMappings.
func (f *renderFlags) readPCIMappings(app *App, o *capmoxrender.Options) error {
	if f.pciMappings == "" {
		return nil
	}
	data, err := readInput(app, f.pciMappings)
	if err != nil {
		return err
	}
	if o.PCIMappings, err = capmoxrender.ParsePCIMappings(data); err != nil {
		return fmt.Errorf("--pci-mappings %s: %w", f.pciMappings, err)
	}
	return nil
}

type renderFunc func(context.Context, []byte, capmoxrender.Options) ([]*unstructured.Unstructured, error)

func runRender(ctx context.Context, app *App, f *renderFlags, render renderFunc) error {
	o, err := f.options(app)
	if err != nil {
		return err
	}
	data, err := readInput(app, f.file)
	if err != nil {
		return err
	}
	objs, err := render(ctx, data, o)
	if err != nil {
		return err
	}
	stream, err := capmoxrender.MarshalYAML(objs)
	if err != nil {
		return err
	}
	items := make([]any, 0, len(objs))
	for _, u := range objs {
		items = append(items, u.Object)
	}
	return app.Print(newKubeList(items), func(w io.Writer) { _, _ = w.Write(stream) })
}
