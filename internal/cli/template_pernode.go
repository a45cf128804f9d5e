package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// perNodeFlags ask `template print` and `template create` for the
// templates of each node's local storage.
type perNodeFlags struct {
	perNode bool
	nodes   []string
}

func (f *perNodeFlags) bind(fs *pflag.FlagSet, nodesDefault string) {
	fs.BoolVar(&f.perNode, "per-node", false, "build one template per node, each on the node's own storage and tagged node-<node> beside the shared tags, "+
		"for a cluster without shared storage (pools with proxmox.localTemplates); the templates take VMID, VMID+1, ... in the nodes' name order")
	fs.StringSliceVar(&f.nodes, "nodes", nil, "with --per-node, the nodes, comma-separated ("+nodesDefault+")")
}

// check refuses --nodes without --per-node.
func (f *perNodeFlags) check() error {
	if len(f.nodes) > 0 && !f.perNode {
		return usageError{errors.New("--nodes names the nodes of --per-node: add --per-node, or drop --nodes")}
	}
	return nil
}

// specs are the templates of each node: the spec on every node of
// --nodes, else of nodes (the cluster's).
func (f *perNodeFlags) specs(spec talostemplate.Spec, nodes []string) ([]talostemplate.Spec, error) {
	if len(f.nodes) > 0 {
		nodes = f.nodes
	}
	specs, err := talostemplate.PerNode(spec, nodes)
	if err != nil {
		return nil, byFlag(byFlag(err, "nodes", "--nodes"), "vmid", "VMID")
	}
	return specs, nil
}

// templatePerNodePrintResult is `template print --per-node` in -o json|yaml.
type templatePerNodePrintResult struct {
	Templates   []talostemplate.Spec    `json:"templates"`
	Program     string                  `json:"program"`
	PoolSnippet string                  `json:"poolSnippet"`
	Warnings    []talostemplate.Warning `json:"warnings,omitempty"`
}

func printPerNode(app *App, f *perNodeFlags, spec talostemplate.Spec, warnings []talostemplate.Warning) error {
	if len(f.nodes) == 0 {
		return usageError{errors.New("--per-node: print mode reads nothing from the cluster, so name the nodes with --nodes pve1,pve2,...")}
	}
	specs, err := f.specs(spec, nil)
	if err != nil {
		return err
	}
	program, err := talostemplate.PerNodeProgram(specs)
	if err != nil {
		return err
	}
	warn(app, warnings)
	res := templatePerNodePrintResult{Templates: specs, Program: program, PoolSnippet: talostemplate.PerNodePoolSnippet(specs), Warnings: warnings}
	return app.Print(res, func(w io.Writer) { _, _ = io.WriteString(w, program) })
}

// templatePerNodeCreateResult is `template create --per-node`'s report.
type templatePerNodeCreateResult struct {
	Templates   []talostemplate.CreateResult `json:"templates"`
	PoolSnippet string                       `json:"poolSnippet"`
	Warnings    []talostemplate.Warning      `json:"warnings,omitempty"`
}

// createPerNode builds each node's template in turn, in the nodes' name
// order; a failure stops the run, naming the templates already made.
func createPerNode(ctx context.Context, app *App, f *templateCreateFlags, c pveapi.Client, spec talostemplate.Spec, opts talostemplate.CreateOptions, warnings []talostemplate.Warning) error {
	var nodes []string
	if len(f.perNode.nodes) == 0 {
		var err error
		if nodes, err = talostemplate.ClusterNodes(ctx, c); err != nil {
			return tlsHint(err)
		}
	}
	specs, err := f.perNode.specs(spec, nodes)
	if err != nil {
		return err
	}
	var out templatePerNodeCreateResult
	for _, s := range specs {
		res, err := talostemplate.Create(ctx, c, s, opts)
		if err != nil {
			return madeBefore(grantHint(tlsHint(err), f.live.tokenID), out.Templates, s)
		}
		for _, l := range res.Left {
			fmt.Fprintf(app.ErrOut, "Warning: the template of node %s is ready, but this is left: %s\n", s.Node, escapeControl(fmt.Sprint(l)))
		}
		out.Templates = append(out.Templates, res)
	}
	out.PoolSnippet, out.Warnings = talostemplate.PerNodePoolSnippet(specs), warnings
	return app.Print(out, func(w io.Writer) {
		for _, r := range out.Templates {
			ready := fmt.Sprintf("Template %d (%s) is ready on node %s, tags %s.", r.Spec.VMID, r.Spec.Name(), r.Node, talostemplate.PVETags(r.Spec.Tags))
			for _, line := range texttable.Wrap(ready, texttable.MaxWidth) {
				fmt.Fprintln(w, line)
			}
		}
		fmt.Fprintln(w, "\nValues for the kubernetes-nodes pool:")
		_, _ = io.WriteString(w, out.PoolSnippet)
	})
}

// madeBefore adds to the error of node s's template the templates the run
// made before it, which stay.
func madeBefore(err error, made []talostemplate.CreateResult, s talostemplate.Spec) error {
	if len(made) == 0 {
		return fmt.Errorf("the template of node %s: %w", s.Node, err)
	}
	names := make([]string, len(made))
	for i, r := range made {
		names[i] = fmt.Sprintf("%d on %s", r.Spec.VMID, r.Node)
	}
	return fmt.Errorf("the template of node %s: %w\nthe templates made before it stay: %s; remove them (qm destroy) or build the rest with --nodes and their VMIDs",
		s.Node, err, strings.Join(names, ", "))
}

// selectPerNode is `template select --per-node`: each node's selection,
// and exit 1 when a node's MachineDeployment would not clone.
func selectPerNode(ctx context.Context, app *App, l talostemplate.ResourceLister, selector, nodes []string, opts talostemplate.SelectOptions) error {
	rs, err := l.ListVMResources(ctx)
	if err != nil {
		return fmt.Errorf("cannot list cluster resources: %w", err)
	}
	sels, serr := talostemplate.SelectPerNode(rs, selector, nodes, opts)
	if sels == nil && serr != nil {
		return usageError{serr}
	}
	if err := app.Print(sels, func(w io.Writer) { perNodeTable(w, sels) }); err != nil {
		return err
	}
	if serr != nil {
		return &ExitError{Code: 1, Err: serr}
	}
	return nil
}

func perNodeTable(w io.Writer, sels []talostemplate.NodeSelection) {
	t := texttable.New(texttable.Main("NODE"), texttable.Main("SELECTOR"), texttable.Main("TEMPLATE"), texttable.Main("ON"))
	for _, s := range sels {
		tmpl, on := "none", "-"
		if s.Template != nil {
			tmpl, on = fmt.Sprintf("%d (%s)", s.Template.VMID, termsafe.Cut(s.Template.Name)), termsafe.Cut(s.Template.Node)
		}
		t.Add(termsafe.Cut(s.Node), termsafe.Cut(strings.Join(s.Selector, ";")), tmpl, on)
	}
	t.Write(w, false)
	for _, s := range sels {
		if s.Error == "" {
			continue
		}
		fmt.Fprintf(w, "\nNode %s:\n", termsafe.Cut(s.Node))
		for _, line := range s.Explanation {
			for k, piece := range texttable.Wrap(line, texttable.MaxWidth-4) {
				lead := "  - "
				if k > 0 {
					lead = "    "
				}
				fmt.Fprintf(w, "%s%s\n", lead, piece)
			}
		}
	}
}
