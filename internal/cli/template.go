package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

func init() { register(newTemplateCmd) }

// templateSubcommands are further `template` subcommands, added by the init
// functions of other files in this package.
var templateSubcommands []func(*App) *cobra.Command

func newTemplateCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "template",
		Short: "The Talos VM template workers are cloned from: its build program, and which template capmox picks",
	}
	cmd.AddCommand(newTemplatePrintCmd(app), newTemplateSelectCmd(app))
	for _, f := range templateSubcommands {
		cmd.AddCommand(f(app))
	}
	return cmd
}

// specFlags are the template inputs every mode takes besides VMID and STORAGE.
type specFlags struct {
	values, version, schematicID, schematicFile, factory, factoryCA, diskSize, cpu, tags string
	noAgent, nvidia                                                                      bool
	pciMappings                                                                          []string
}

func (f *specFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.values, "values", "", "kubernetes-nodes chart values file whose talos: block gives the version, schematic ID and factory URL")
	fs.StringVar(&f.version, "talos-version", "", "Talos version, such as v1.13.6 (overrides --values)")
	fs.StringVar(&f.schematicID, "schematic-id", "", "Image Factory schematic ID (overrides --values)")
	fs.StringVar(&f.schematicFile, "schematic", "", "schematic YAML: its ID is computed, and its extensions are checked for a VM template")
	fs.StringVar(&f.factory, "factory-url", "", "Image Factory URL (default "+talostemplate.DefaultFactoryURL+", or the one in --values)")
	fs.Var(nonEmpty{&f.factoryCA}, "factory-ca", "PEM file of CA certificates curl trusts for an https factory behind an internal CA")
	fs.StringVar(&f.diskSize, "disk-size", talostemplate.DefaultDiskSize, "system disk size in whole gibibytes: a quantity such as 32Gi or 1Ti, or PVE's 32G; every clone inherits it")
	fs.StringVar(&f.cpu, "cpu", talostemplate.DefaultCPU, "Proxmox CPU model; Talos needs x86-64-v2")
	fs.StringVar(&f.tags, "tags", "", "comma-separated template tags (default cozystack,talos,talos-<version>,schematic-<first 8 of the schematic>)")
	fs.BoolVar(&f.noAgent, "no-agent", false, "create the template without the QEMU guest agent (only for a schematic without qemu-guest-agent)")
	fs.StringArrayVar(&f.pciMappings, "pci-mapping", nil, "Proxmox VE PCI resource mapping of a GPU the template passes through (hostpciN: mapping=ID,pcie=1 on a q35 machine); repeat it once per device, and its tag gpu-<count>x-<ID> joins the tags")
	fs.BoolVar(&f.nvidia, "nvidia", false, "build from the NVIDIA schematic: qemu-guest-agent with nonfree-kmod-nvidia-production and nvidia-container-toolkit-production (its ID replaces --schematic-id)")
}

// spec turns the flags and the VMID and STORAGE arguments into a checked
// Spec and the warnings about its schematic.
func (f *specFlags) spec(app *App, vmid, storage string) (talostemplate.Spec, []talostemplate.Warning, error) {
	in := talostemplate.Inputs{VMID: vmid, Storage: storage, TalosVersion: f.version, SchematicID: f.schematicID,
		FactoryURL: f.factory, DiskSize: f.diskSize, CPU: f.cpu, Tags: f.tags, DisableAgent: f.noAgent, PCIMappings: f.pciMappings}
	if f.values != "" {
		data, err := readInput(app, f.values)
		if err != nil {
			return talostemplate.Spec{}, nil, err
		}
		chart, err := talostemplate.ReadChartValues(data)
		if err != nil {
			return talostemplate.Spec{}, nil, fmt.Errorf("%s: %w", f.values, oneDocument(err, "merge the values into one document"))
		}
		in = chart.Apply(in)
	}
	schematic, err := f.schematic(app, &in)
	if err != nil {
		return talostemplate.Spec{}, nil, err
	}
	if in.TalosVersion == "" {
		return talostemplate.Spec{}, nil, errors.New("the Talos version is not set: pass --talos-version, or --values with the pool's chart values")
	}
	if in.SchematicID == "" {
		return talostemplate.Spec{}, nil, errors.New("the schematic is not set: pass --schematic-id, --schematic with its YAML, or --values with the pool's chart values")
	}
	if f.factoryCA != "" {
		if in.FactoryCA, err = readInput(app, f.factoryCA); err != nil {
			return talostemplate.Spec{}, nil, err
		}
	}
	spec, err := talostemplate.NewSpec(in)
	if err != nil {
		return talostemplate.Spec{}, nil, byFlag(err, "pciMappings", "--pci-mapping")
	}
	warnings, err := talostemplate.CheckSchematic(spec.SchematicID, schematic, spec.DisableAgent)
	return spec, warnings, err
}

// byFlag names the flag of the spec's field in each of its refusals.
func byFlag(err error, field, flag string) error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs := joined.Unwrap()
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = byFlag(e, field, flag)
		}
		return errors.Join(out...)
	}
	var ie *talostemplate.InvalidError
	if errors.As(err, &ie) && ie.Field == field {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return err
}

// schematic reads --schematic, fills in its ID and refuses an ID given
// elsewhere that does not match it.
func (f *specFlags) schematic(app *App, in *talostemplate.Inputs) (*talostemplate.Schematic, error) {
	if f.nvidia {
		return f.nvidiaSchematic(in)
	}
	if f.schematicFile == "" {
		return nil, nil
	}
	data, err := readInput(app, f.schematicFile)
	if err != nil {
		return nil, err
	}
	s, err := talostemplate.ParseSchematic(data)
	if err != nil {
		return nil, fmt.Errorf("cannot read the schematic %s: %w", f.schematicFile, oneDocument(err, schematicAdvice))
	}
	id, err := s.ID()
	if err != nil {
		return nil, fmt.Errorf("cannot read the schematic %s: %w", f.schematicFile, err)
	}
	if in.SchematicID != "" && in.SchematicID != id {
		return nil, fmt.Errorf("the schematic in %s has the ID %s, but the schematic ID to build is %s: pass the schematic the pool runs, or drop --schematic-id",
			f.schematicFile, id, in.SchematicID)
	}
	in.SchematicID = id
	return s, nil
}

// nvidiaSchematic is --nvidia: the NVIDIA schematic, whose ID must be the
// one to build when --schematic-id or --values names one.
func (f *specFlags) nvidiaSchematic(in *talostemplate.Inputs) (*talostemplate.Schematic, error) {
	if f.schematicFile != "" {
		return nil, usageError{errors.New("--nvidia and --schematic both give the schematic: pass one of them")}
	}
	s := talostemplate.NVIDIASchematic()
	id, err := s.ID()
	if err != nil {
		return nil, err
	}
	if in.SchematicID != "" && in.SchematicID != id {
		return nil, fmt.Errorf("--nvidia builds from the NVIDIA schematic %s, but the schematic ID to build is %s: set the pool's talos.schematicID to %s, or drop --schematic-id",
			id, in.SchematicID, id)
	}
	in.SchematicID = id
	return s, nil
}

func warn(app *App, ws []talostemplate.Warning) {
	for _, w := range ws {
		fmt.Fprintf(app.ErrOut, "Warning: %s\n", escapeControl(w.Message))
	}
}

// templatePrintResult is `template print` in -o json|yaml.
type templatePrintResult struct {
	Spec        talostemplate.Spec      `json:"spec"`
	Program     string                  `json:"program"`
	PoolSnippet string                  `json:"poolSnippet"`
	Warnings    []talostemplate.Warning `json:"warnings,omitempty"`
}

func newTemplatePrintCmd(app *App) *cobra.Command {
	var f specFlags
	var pn perNodeFlags
	cmd := &cobra.Command{
		Use:     "print VMID STORAGE",
		Example: "  pxsubstrate template print 9000 local-lvm --values nodes-values.yaml",
		Short:   "Print the root shell program that builds the Talos VM template, for review",
		Long: `Prints the program that builds the template on a Proxmox VE node: it checks
that VMID is free and that no template carries the same tag set, downloads the
nocloud image from the Image Factory, creates the VM (OVMF with an EFI disk,
virtio-scsi, the image imported as scsi0, serial console, guest agent, no NIC),
grows the disk and converts the VM into a template. Run it as root on a node:
  pxsubstrate template print 9000 local-lvm --values values.yaml | ssh root@pve sh -s
Warnings about the schematic go to stderr.

A GPU template passes the devices of a Proxmox VE PCI resource mapping
through: --pci-mapping ID once per device (hostpciN: mapping=ID,pcie=1 on a
q35 machine, the mapping checked to exist); its tag gpu-<count>x-<ID> joins
the tags. --nvidia builds from the NVIDIA schematic.

On a cluster without shared storage, --per-node --nodes pve1,pve2,... prints
the one program that builds each node's template on the node's own storage,
tagged node-<node> beside the shared tags, with VMID, VMID+1, ... in the
nodes' name order: run it on each node, and pools set proxmox.localTemplates.`,
		Args: cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := pn.check(); err != nil {
				return err
			}
			spec, warnings, err := f.spec(app, args[0], args[1])
			if err != nil {
				return err
			}
			if pn.perNode {
				return printPerNode(app, &pn, spec, warnings)
			}
			program, err := talostemplate.Program(spec)
			if err != nil {
				return err
			}
			warn(app, warnings)
			res := templatePrintResult{Spec: spec, Program: program, PoolSnippet: talostemplate.PoolSnippet(spec), Warnings: warnings}
			return app.Print(res, func(w io.Writer) { _, _ = io.WriteString(w, program) })
		},
	}
	f.bind(cmd.Flags())
	pn.bind(cmd.Flags(), "required with --per-node")
	return cmd
}

// templateSelectResult is `template select`'s report.
type templateSelectResult struct {
	talostemplate.Selection
	// Error is capmox's error text when it would not clone.
	Error string `json:"error,omitempty"`
	// TemplateDiskSize is the size of the selected template's scsi0, read
	// from its configuration (with --url): a pool's proxmox.templateDiskSize.
	TemplateDiskSize string   `json:"templateDiskSize,omitempty"`
	Explanation      []string `json:"explanation"`
}

func newTemplateSelectCmd(app *App) *cobra.Command {
	var tags, resources, capmox, policy string
	var live liveFlags
	var pn perNodeFlags
	cmd := &cobra.Command{
		Use: "select --tags a,b (--resources FILE | --url https://HOST:8006 --token-id ID --token-secret-file F)",
		Example: "  pxsubstrate template select --tags cozystack,talos,talos-v1.13.6 --resources resources.json\n" +
			"  pxsubstrate template select --tags cozystack,talos,talos-v1.13.6 --url https://pve1:8006 \\\n    --token-id 'capmox@pve!capi' --token-secret-file capi.secret",
		Short: "Show which template capmox clones for a tag selector, or its exact error and why",
		Long: `Replays capmox's template selection over the guests of a cluster, as
GET /cluster/resources?type=vm lists them (pvesh get /cluster/resources --type vm
--output-format json), in JSON or YAML, the data array or the whole answer.
With --url the guests are read from the API with the given token instead, as
capmox reads them with its own: PVE lists only guests the token may audit.
--tags is the pool's proxmox.templateTags (templateSelector.matchTags), comma-separated.
Exits 1 with capmox's own error text on stderr when capmox would not clone.

For a pool with proxmox.localTemplates, --per-node shows the selection of each
node's MachineDeployment (the tags and node-<node>) for the nodes of --nodes,
or those the guests are on, and refuses a template that sits on another node.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			selector, err := selectorTags(tags)
			if err != nil {
				return usageError{err}
			}
			opts := talostemplate.SelectOptions{Capmox: talostemplate.CapmoxVersion(capmox), Policy: talostemplate.MatchPolicy(policy)}
			if err := pn.check(); err != nil {
				return err
			}
			lister, api, err := selectLister(app, resources, &live)
			if err != nil {
				return err
			}
			if pn.perNode {
				return selectPerNode(cmd.Context(), app, lister, selector, pn.nodes, opts)
			}
			return runTemplateSelect(cmd.Context(), app, lister, api, selector, opts)
		},
	}
	cmd.Flags().StringVar(&tags, "tags", "", "the selector: the pool's proxmox.templateTags, comma-separated")
	cmd.Flags().StringVar(&resources, "resources", "", "file with the answer of GET /cluster/resources?type=vm (JSON or YAML)")
	cmd.Flags().StringVar(&capmox, "capmox", string(talostemplate.CapmoxV07), "capmox release line: v0.7 (what Cozystack ships) or v0.8 (v0.8 and later)")
	cmd.Flags().StringVar(&policy, "match-policy", string(talostemplate.MatchExact), "capmox v0.8 templateSelector.matchPolicy: exact, uniqueSubset or bestSubset")
	live.bind(cmd.Flags())
	cmd.Flags().BoolVar(&pn.perNode, "per-node", false, "the selection of each node's MachineDeployment of a pool with proxmox.localTemplates: the tags and the node's tag node-<node>")
	cmd.Flags().StringSliceVar(&pn.nodes, "nodes", nil, "with --per-node, the pool's nodes, comma-separated (default: the nodes the guests are on)")
	_ = cmd.MarkFlagRequired("tags")
	return cmd
}

// runTemplateSelect selects from the guests of lister and prints the
// selection, with the template's disk size when api reads the guests.
func runTemplateSelect(ctx context.Context, app *App, lister talostemplate.ResourceLister, api *talostemplate.LiveResources,
	selector []string, opts talostemplate.SelectOptions) error {
	sel, err := talostemplate.SelectFrom(ctx, lister, selector, opts)
	var notFound *talostemplate.NotFoundError
	if err != nil && !errors.As(err, &notFound) {
		return err
	}
	res := templateSelectResult{Selection: sel, Explanation: talostemplate.Explain(sel)}
	if api != nil && sel.Template != nil {
		if res.TemplateDiskSize, _, err = api.BootDiskSize(ctx, sel.Template.Node, sel.Template.VMID); err != nil {
			return tlsHint(err)
		}
	}
	if notFound != nil {
		res.Error = notFound.Error()
	}
	if perr := app.Print(res, func(w io.Writer) { selectTable(w, res, app.Wide()) }); perr != nil {
		return perr
	}
	if notFound != nil {
		return &ExitError{Code: 1, Err: notFound}
	}
	return nil
}

// selectorTags splits --tags as a list of matchTags items, unchanged, and
// refuses items the ProxmoxMachineTemplate CRD would refuse.
func selectorTags(list string) ([]string, error) {
	tags := strings.Split(list, ",")
	for i, t := range tags {
		if !talostemplate.ValidSelectorTag(t) {
			return nil, errorf("--tags item %d %q is not a tag capmox's CRD accepts in matchTags (letters, digits, _ + . -, not starting with + . -)", i+1, t)
		}
	}
	return tags, nil
}

func selectTable(w io.Writer, res templateSelectResult, wide bool) {
	if res.Template != nil {
		fmt.Fprintf(w, "capmox %s clones template %d (%s) on node %s\n", res.Capmox, res.Template.VMID, termsafe.Cut(res.Template.Name), termsafe.Cut(res.Template.Node))
		if res.TemplateDiskSize != "" {
			fmt.Fprintf(w, "Its disk %s is %s: a pool's diskSize may not be smaller (proxmox.templateDiskSize: %s)\n", talostemplate.BootDisk, res.TemplateDiskSize, res.TemplateDiskSize)
		}
	} else {
		for _, line := range texttable.Wrap(res.Error, texttable.MaxWidth) {
			fmt.Fprintln(w, line)
		}
	}
	if len(res.Candidates) > 0 {
		fmt.Fprintln(w)
		t := texttable.New(texttable.Main("VMID"), texttable.Main("NAME"), texttable.Main("NODE"), texttable.Main("TEMPLATE"), texttable.Main("MATCH"),
			texttable.Note("TAGS"), texttable.Note("MISSING"), texttable.Note("EXTRA"))
		for _, c := range res.Candidates {
			match := "no"
			switch {
			case c.Counted:
				match = "yes"
			case c.Skipped != "":
				match = "skipped: " + c.Skipped
			}
			// A table is for people: a name or tag list from the cluster or
			// the selector is cut (-o json has them whole).
			t.Add(strconv.Itoa(c.VMID), termsafe.Cut(c.Name), termsafe.Cut(c.Node), strconv.Itoa(int(c.Template)), match, termsafe.Cut(c.Tags),
				termsafe.Cut(strings.Join(c.Missing, ",")), termsafe.Cut(strings.Join(c.Extra, ",")))
		}
		t.Write(w, wide)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Why:")
	for _, line := range res.Explanation {
		for k, piece := range texttable.Wrap(line, texttable.MaxWidth-4) {
			lead := "  - "
			if k > 0 {
				lead = "    "
			}
			fmt.Fprintf(w, "%s%s\n", lead, piece)
		}
	}
}
