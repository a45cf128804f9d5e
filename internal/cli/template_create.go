package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

func init() { templateSubcommands = append(templateSubcommands, newTemplateCreateCmd) }

type templateCreateFlags struct {
	spec                             specFlags
	live                             liveFlags
	node, importStorage, imageFormat string
	reuseImage, keepImage            bool
	timeout                          time.Duration
	perNode                          perNodeFlags
}

// templateCreateResult is `template create`'s report.
type templateCreateResult struct {
	talostemplate.CreateResult
	PoolSnippet string                  `json:"poolSnippet"`
	Warnings    []talostemplate.Warning `json:"warnings,omitempty"`
}

func newTemplateCreateCmd(app *App) *cobra.Command {
	var f templateCreateFlags
	cmd := &cobra.Command{
		Use:     "create VMID STORAGE --url https://HOST:8006 --token-id ID (--token-secret-file F | --token-secret S) [--node N]",
		Example: "  pxsubstrate template create 9000 local-lvm --values nodes-values.yaml --url https://pve1:8006 \\\n    --token-id 'root@pam!admin' --token-secret-file admin.secret",
		Short:   "Create the Talos VM template through the Proxmox VE API, without ssh",
		Long: `Builds the template the print program builds, through the API: checks that
VMID is free in the whole cluster and that no template carries the same tag set,
downloads the Image Factory's uncompressed nocloud image to a storage with the
import content type (download-url cannot decompress for import), creates the VM
with the image imported as scsi0 on STORAGE (OVMF with an EFI disk,
virtio-scsi, serial console, guest agent, no NIC; with --pci-mapping a q35
machine and a hostpciN per device), grows the disk, converts the
VM into a template and removes the downloaded image. Every task is waited for;
a task that fails stops the run, and the error lists what is left on the
hypervisor with the command and the API call that remove it.

The template's values go to stdout: paste them into the kubernetes-nodes pool.
Progress goes to stderr, live on a terminal and as plain lines otherwise.

With --per-node it builds one template per node (--nodes, default every node of
the cluster), each on the node's own STORAGE and tagged node-<node> beside the
shared tags, with VMID, VMID+1, ... in the nodes' name order: the templates of
a cluster without shared storage, which pools select with proxmox.localTemplates.
A rotation runs it again with a new VMID and the new release.

--url is the bare node address, https://HOST:8006; /api2/json is appended. TLS
is verified against the system roots and --ca-file. The token needs, besides
VM.Audit on /vms (propagated) to see every template:
  Datastore.AllocateTemplate on /storage/IMPORT-STORAGE, and Sys.Audit with
  Sys.Modify on / or Sys.AccessNetwork on /nodes/NODE    (download-url)
  VM.Allocate, VM.Config.CPU, .Memory, .HWType, .Options, .Disk on /vms/VMID,
  Datastore.AllocateSpace on /storage/STORAGE            (create, resize, template)
  Datastore.Allocate on /storage/IMPORT-STORAGE          (removing the image)
  Mapping.Use on /mapping/pci/ID                         (each --pci-mapping)`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTemplateCreate(cmd.Context(), app, &f, args[0], args[1])
		},
	}
	fs := cmd.Flags()
	f.spec.bind(fs)
	f.live.bind(fs)
	fs.StringVar(&f.node, "node", "", "node that downloads the image and holds the template (default: the cluster's only node)")
	fs.StringVar(&f.importStorage, "import-storage", "", "file-based storage with the import content type for the image (default: STORAGE when it has it, else the node's only one)")
	fs.StringVar(&f.imageFormat, "image-format", string(talostemplate.ImageRaw), "factory artefact to download: raw or qcow2 (same disk, smaller download)")
	fs.BoolVar(&f.reuseImage, "reuse-image", false, "build from an image an earlier run left on the import storage instead of refusing")
	fs.BoolVar(&f.keepImage, "keep-image", false, "keep the downloaded image after the template is made")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Minute, "give up after this long; what is left is reported")
	f.perNode.bind(fs, "default: every node of the cluster")

	return cmd
}

func runTemplateCreate(ctx context.Context, app *App, f *templateCreateFlags, vmid, storage string) error {
	if err := f.perNode.check(); err != nil {
		return err
	}
	if f.perNode.perNode && f.node != "" {
		return usageError{errors.New("--node: with --per-node each template is built on its own node; name the nodes with --nodes")}
	}
	spec, warnings, err := f.spec.spec(app, vmid, storage)
	if err != nil {
		return err
	}
	c, _, err := f.live.client(app)
	if err != nil {
		return err
	}
	warn(app, warnings)
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	opts := talostemplate.CreateOptions{Node: f.node, ImportStorage: f.importStorage, ImageFormat: talostemplate.ImageFormat(f.imageFormat),
		ReuseImage: f.reuseImage, KeepImage: f.keepImage, Progress: newCreateProgress(app.ErrOut, isTerminal(app.ErrOut)).report}
	if f.perNode.perNode {
		return createPerNode(ctx, app, f, c, spec, opts, warnings)
	}
	res, err := talostemplate.Create(ctx, c, spec, opts)
	if err != nil {
		return grantHint(tlsHint(err), f.live.tokenID)
	}
	for _, l := range res.Left {
		fmt.Fprintf(app.ErrOut, "Warning: the template is ready, but this is left: %s\n", escapeControl(fmt.Sprint(l)))
	}
	out := templateCreateResult{CreateResult: res, PoolSnippet: talostemplate.PoolSnippet(spec), Warnings: warnings}
	if res.DiskSize != "" {
		out.PoolSnippet += fmt.Sprintf("  templateDiskSize: %q\n", res.DiskSize)
	}
	return app.Print(out, func(w io.Writer) { createTable(w, out) })
}

func createTable(w io.Writer, r templateCreateResult) {
	ready := fmt.Sprintf("Template %d (%s) is ready on node %s, tags %s.", r.Spec.VMID, r.Spec.Name(), r.Node, talostemplate.PVETags(r.Spec.Tags))
	for _, line := range texttable.Wrap(ready, texttable.MaxWidth) {
		fmt.Fprintln(w, line)
	}
	image := "removed"
	switch {
	case r.ImageReused && r.ImageRemoved:
		image = "reused from an earlier run, then removed"
	case !r.ImageRemoved && len(r.Left) == 0:
		image = "kept"
	case !r.ImageRemoved:
		image = "not removed"
	}
	fmt.Fprintf(w, "Image imported as %s: %s. Its source:\n%s\n\n", r.ImageVolume, image, r.ImageURL)
	fmt.Fprintln(w, "Values for the kubernetes-nodes pool:")
	_, _ = io.WriteString(w, r.PoolSnippet)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// createProgress shows the steps of a create: on a terminal one line per
// step that follows its task log, plain lines without the log otherwise.
type createProgress struct {
	w   io.Writer
	tty bool
}

func newCreateProgress(w io.Writer, tty bool) *createProgress { return &createProgress{w: w, tty: tty} }

func (p *createProgress) report(e talostemplate.Progress) {
	prefix := fmt.Sprintf("[%d/%d] %s", e.Index, e.Total, e.Step)
	took := e.Elapsed.Round(100 * time.Millisecond).String()
	var line string
	switch e.Phase {
	case talostemplate.PhaseStarted:
		line = prefix + ": " + e.Message
	case talostemplate.PhaseLog:
		if !p.tty {
			return
		}
		line = prefix + " (" + e.Elapsed.Round(time.Second).String() + "): " + e.Message
	case talostemplate.PhaseDone:
		line = prefix + ": done in " + took
	case talostemplate.PhaseSkipped:
		line = prefix + ": skipped, " + e.Message
	case talostemplate.PhaseFailed:
		line = prefix + ": failed after " + took
	}
	line = printable(line)
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	// The step's line is rewritten in place until the step ends.
	if e.Phase == talostemplate.PhaseStarted || e.Phase == talostemplate.PhaseLog {
		if r := []rune(line); len(r) > 120 {
			line = string(r[:119]) + "…"
		}
		fmt.Fprint(p.w, "\r\033[K"+line)
		return
	}
	fmt.Fprint(p.w, "\r\033[K"+line+"\n")
}

// printable drops control characters, so a task log line cannot move the
// cursor or change the terminal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// grantHint adds the pveum command that grants the privilege a 403 named.
func grantHint(err error, tokenID string) error {
	var pe *talostemplate.PermissionError
	if !errors.As(err, &pe) || pe.Privilege == "" {
		return err
	}
	role := smallestRoleWith(pe.Privilege)
	if role == "" {
		return err
	}
	user, _, perr := pveacl.ParseTokenID(tokenID)
	if perr != nil {
		return err
	}
	return fmt.Errorf("%w\nto grant it with the built-in role %s: pveum acl modify %s --tokens '%s' --roles %s; and, for a token with privilege separation, pveum acl modify %s --users %s --roles %s",
		err, role, pe.Path, tokenID, role, pe.Path, user, role)
}

// smallestRoleWith is the built-in role with the fewest privileges that
// holds priv; ties go to the first name.
func smallestRoleWith(priv string) string {
	roles := pveacl.BuiltinRoles(pveacl.DefaultVersion)
	names := make([]string, 0, len(roles))
	for name, privs := range roles {
		if slices.Contains(privs, priv) {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := len(roles[a]) - len(roles[b]); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// selectLister is the guest list `template select` reads: the file of
// --resources, or the API of --url with the token of --token-id.
// Exactly one of them must be given.
func selectLister(app *App, resources string, live *liveFlags) (talostemplate.ResourceLister, *talostemplate.LiveResources, error) {
	switch {
	case resources != "" && live.url != "":
		return nil, nil, usageError{errors.New("pass either --resources or --url, not both")}
	case resources != "":
		data, err := readInput(app, resources)
		if err != nil {
			return nil, nil, err
		}
		rs, err := talostemplate.ParseResources(data)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot read cluster resources from %s: %w", resources, err)
		}
		return talostemplate.Resources(rs), nil, nil
	case live.url == "" && os.Getenv(envURL) == "":
		return nil, nil, usageError{errors.New("the guests are missing: pass --resources FILE, or --url https://HOST:8006 (or PROXMOX_URL) with --token-id and the token secret")}
	}
	c, _, err := live.client(app)
	if err != nil {
		return nil, nil, err
	}
	l := talostemplate.LiveResources{Client: c}
	return hintedLister{l}, &l, nil
}

// hintedLister adds what to do when the API's certificate is not trusted.
type hintedLister struct{ talostemplate.ResourceLister }

func (h hintedLister) ListVMResources(ctx context.Context) ([]talostemplate.VMResource, error) {
	rs, err := h.ResourceLister.ListVMResources(ctx)
	return rs, tlsHint(err)
}
