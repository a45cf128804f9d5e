package talostemplate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// errFactoryCA refuses a private factory CA in create mode.
var errFactoryCA = errors.New("a factory CA cannot be used through the API: download-url checks the factory's certificate " +
	"against the node's own trust store and takes no CA; add the CA to every node's trust store " +
	"(/usr/local/share/ca-certificates, then update-ca-certificates) and drop the factory CA, or use template print")

// observeTimeout bounds the reads that find out what a failed run left.
const observeTimeout = 30 * time.Second

// Create builds the template through the Proxmox VE API, without ssh, in the
// order of Steps: it picks the node and the import storage, checks that the
// VMID is free (nextid), that the token sees every guest and that no
// template in the cluster carries the tag set, downloads the factory's
// uncompressed nocloud image to the import storage (download-url, content
// import), creates the VM from it with CreateParams, grows the disk,
// converts the VM into a template and removes the downloaded image. It waits
// for every task and treats any exit status but OK as a failure.
//
// On failure the error is a *CreateError that names the step and, read back
// from the hypervisor after the failure, every volume, VM and running task
// the run left, with the command and the API call that remove each. The
// result holds what was done so far. Nothing is rolled back.
func Create(ctx context.Context, c pveapi.Client, s Spec, opts CreateOptions) (CreateResult, error) {
	if err := s.Validate(); err != nil {
		return CreateResult{Spec: s}, fmt.Errorf("cannot create the template: %w", err)
	}
	if s.FactoryCA != "" {
		return CreateResult{Spec: s}, fmt.Errorf("cannot create the template: %w", errFactoryCA)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return CreateResult{Spec: s}, fmt.Errorf("cannot create the template: %w", err)
	}
	switch {
	case s.Node != "" && opts.Node == "":
		opts.Node = s.Node
	case s.Node != "" && opts.Node != s.Node:
		return CreateResult{Spec: s}, fmt.Errorf("cannot create the template: the template of node %s, on its local storage, is built on that node, not on %s", show(s.Node), show(opts.Node))
	}
	r := &creator{c: c, spec: s, opts: opts, w: waiter{pveapi.Tasks{Client: c, Interval: opts.PollInterval}},
		res: CreateResult{Spec: s, ImageURL: s.ImportImageURL(opts.ImageFormat), Tasks: map[Step]string{}}}
	for i, step := range Steps {
		if err := r.run(ctx, i+1, step); err != nil {
			return r.res, r.fail(ctx, step, err)
		}
	}
	return r.res, nil
}

// creator carries one run of Create.
type creator struct {
	c    pveapi.Client
	spec Spec
	opts CreateOptions
	w    waiter
	res  CreateResult
	// imageThere is true when the check found the image volume.
	imageThere bool
	// downloaded and created are set once the request that makes the image
	// or the VM is sent: from then on it may exist.
	downloaded, created bool
	// pending is a task whose end was not seen.
	pending string
}

// action is a step's work; log receives task log lines.
type action func(ctx context.Context, log func(string)) error

func (r *creator) run(ctx context.Context, index int, step Step) error {
	start := time.Now()
	report := func(p Phase, msg string) {
		if r.opts.Progress != nil {
			r.opts.Progress(Progress{Index: index, Total: len(Steps), Step: step, Phase: p, Message: msg, Elapsed: time.Since(start)})
		}
	}
	do, what, skip := r.plan(step)
	if skip != "" {
		report(PhaseSkipped, skip)
		return nil
	}
	report(PhaseStarted, what)
	if err := do(ctx, func(line string) { report(PhaseLog, line) }); err != nil {
		report(PhaseFailed, err.Error())
		return err
	}
	report(PhaseDone, what)
	return nil
}

// plan returns a step's work and what it does, or why it is skipped.
func (r *creator) plan(step Step) (do action, what, skip string) {
	// The node and volume come from the API, the tags from the input:
	// each is cut as termsafe cuts a value.
	s, node, vol := r.spec, termsafe.Cut(r.res.Node), termsafe.Cut(r.res.ImageVolume)
	switch step {
	case StepPrepare:
		return r.prepare, "choose the node and storages", ""
	case StepCheck:
		return r.check, fmt.Sprintf("check that VMID %d is free, that no template carries the tags %s and that %s is not there yet",
			s.VMID, termsafe.Cut(PVETags(s.Tags)), vol), ""
	case StepDownload:
		if r.imageThere {
			r.res.ImageReused = true
			return nil, "", "reusing " + vol + " from an earlier run"
		}
		return r.download, fmt.Sprintf("download %s to %s on node %s", r.res.ImageURL, vol, node), ""
	case StepCreate:
		return r.create, fmt.Sprintf("create VM %d (%s) on node %s with %s imported as scsi0 on %s", s.VMID, s.Name(), node, vol, s.Storage), ""
	case StepResize:
		return r.resize, fmt.Sprintf("resize scsi0 of VM %d to %s", s.VMID, s.DiskSize), ""
	case StepTemplate:
		return r.template, fmt.Sprintf("convert VM %d into a template", s.VMID), ""
	case StepCleanup:
		if r.opts.KeepImage {
			return nil, "", "keeping " + vol
		}
		return r.cleanup, "remove " + vol + ", which the template no longer needs", ""
	}
	panic("talostemplate: unknown step " + string(step))
}

func (r *creator) prepare(ctx context.Context, _ func(string)) error {
	nodes, err := readNodes(ctx, r.c)
	if err != nil {
		return err
	}
	node, err := pickNode(nodes, r.opts.Node)
	if err != nil {
		return err
	}
	storages, err := readStorages(ctx, r.c, node)
	if err != nil {
		return err
	}
	imp, err := pickStorages(storages, node, r.spec.Storage, r.opts.ImportStorage)
	if err != nil {
		return err
	}
	r.res.Node, r.res.ImportStorage = node, imp
	r.res.ImageVolume = imp + ":import/" + r.spec.ImportFilename(r.opts.ImageFormat)
	return nil
}

func pickNode(nodes []string, want string) (string, error) {
	switch {
	case want != "" && slices.Contains(nodes, want):
		return want, nil
	case want != "":
		return "", fmt.Errorf("%w: node %s is not in the cluster (nodes: %s)", ErrNoTarget, termsafe.Cut(want), termsafe.Cut(strings.Join(nodes, ", ")))
	case len(nodes) == 1:
		return nodes[0], nil
	case len(nodes) == 0:
		return "", fmt.Errorf("%w: the token sees no node", ErrNoTarget)
	}
	return "", fmt.Errorf("%w: the cluster has the nodes %s: name the node that downloads the image and holds the template",
		ErrNoTarget, termsafe.Cut(strings.Join(nodes, ", ")))
}

// pickStorages checks the disk storage and returns the import storage.
func pickStorages(storages []storageEntry, node, disk, want string) (string, error) {
	find := func(id string) (storageEntry, bool) {
		i := slices.IndexFunc(storages, func(s storageEntry) bool { return s.Storage == id })
		if i < 0 {
			return storageEntry{}, false
		}
		return storages[i], true
	}
	unseen := "storage %s is not enabled on node %s, or the token cannot see it (that needs Datastore.Audit or Datastore.AllocateSpace on /storage/%s)"
	d, ok := find(disk)
	switch {
	case !ok:
		return "", fmt.Errorf("%w: "+unseen, ErrNoTarget, disk, termsafe.Cut(node), disk)
	case !d.has("images"):
		return "", fmt.Errorf("%w: storage %s does not hold VM disks (its content types are %s): name a storage with the Disk image content type",
			ErrNoTarget, disk, termsafe.Cut(d.Content))
	}
	if want != "" {
		w, ok := find(want)
		switch {
		case !ok:
			return "", fmt.Errorf("%w: "+unseen, ErrNoTarget, want, termsafe.Cut(node), want)
		case !w.has("import"):
			return "", fmt.Errorf("%w: storage %s does not have the import content type (its content types are %s): add import to its content types, "+
				"or name a file-based storage that has it", ErrNoTarget, want, termsafe.Cut(w.Content))
		}
		return want, nil
	}
	if d.has("import") {
		return disk, nil
	}
	var imports []string
	for _, s := range storages {
		if s.has("import") {
			imports = append(imports, s.Storage)
		}
	}
	switch len(imports) {
	case 1:
		return imports[0], nil
	case 0:
		return "", fmt.Errorf("%w: no storage on node %s has the import content type, which download-url needs: add import to the content types "+
			"of a file-based storage (such as local) and name it as the import storage", ErrNoTarget, termsafe.Cut(node))
	}
	return "", fmt.Errorf("%w: storages %s on node %s have the import content type: name the one to download the image to",
		ErrNoTarget, termsafe.Cut(strings.Join(imports, ", ")), termsafe.Cut(node))
}

func (r *creator) check(ctx context.Context, _ func(string)) error {
	if err := checkVMID(ctx, r.c, r.spec.VMID); err != nil {
		return err
	}
	if err := checkGuestView(ctx, r.c); err != nil {
		return err
	}
	if m, _ := r.spec.GPUs(); m != "" {
		if err := checkMapping(ctx, r.c, m); err != nil {
			return err
		}
	}
	rs, err := LiveResources{Client: r.c}.ListVMResources(ctx)
	if err != nil {
		return err
	}
	if err := CheckTagSetFree(rs, r.spec.Tags); err != nil {
		return fmt.Errorf("%w; capmox needs exactly one template per tag set: reuse that template, or give this one other tags", err)
	}
	node, imp, vol := r.res.Node, r.res.ImportStorage, r.res.ImageVolume
	there, err := hasVolume(ctx, r.c, node, imp, vol, "import")
	if err != nil {
		return permissionError("GET "+storagePath(node, imp)+"/content", "Datastore.Audit or Datastore.AllocateSpace on /storage/"+imp, err)
	}
	if there && !r.opts.ReuseImage {
		return &ImageExistsError{Node: node, Storage: imp, VolID: vol}
	}
	r.imageThere = there
	return nil
}

func (r *creator) download(ctx context.Context, log func(string)) error {
	node, imp := r.res.Node, r.res.ImportStorage
	path := storagePath(node, imp) + "/download-url"
	params := map[string]string{"content": "import", "filename": r.spec.ImportFilename(r.opts.ImageFormat),
		"url": r.res.ImageURL, "verify-certificates": "1"}
	needs := fmt.Sprintf("Datastore.AllocateTemplate on /storage/%s, and either Sys.Audit and Sys.Modify on / or Sys.AccessNetwork on /nodes/%s", termsafe.Cut(imp), termsafe.Cut(node))
	r.downloaded = true
	return r.task(ctx, StepDownload, "POST", path, needs, params, log)
}

func (r *creator) create(ctx context.Context, log func(string)) error {
	s := r.spec
	params := map[string]string{}
	for _, p := range CreateParams(s, r.res.ImageVolume) {
		params[p.Key] = p.Value
	}
	needs := fmt.Sprintf("VM.Allocate, VM.Config.CPU, VM.Config.Memory, VM.Config.HWType, VM.Config.Options and VM.Config.Disk on /vms/%d, "+
		"Datastore.AllocateSpace on /storage/%s, and Datastore.AllocateSpace or Datastore.Audit on /storage/%s to import the image",
		s.VMID, s.Storage, termsafe.Cut(r.res.ImportStorage))
	if m, _ := s.GPUs(); m != "" {
		needs += ", and Mapping.Use on /mapping/pci/" + m + " for the PCI devices"
	}
	r.created = true
	return r.task(ctx, StepCreate, "POST", pveapi.Path("nodes", r.res.Node, "qemu"), needs, params, log)
}

func (r *creator) resize(ctx context.Context, log func(string)) error {
	params := map[string]string{"disk": "scsi0", "size": r.spec.DiskSize}
	return r.task(ctx, StepResize, "PUT", vmPath(r.res.Node, r.spec.VMID)+"/resize", "VM.Config.Disk on /vms/"+strconv.Itoa(r.spec.VMID), params, log)
}

func (r *creator) template(ctx context.Context, log func(string)) error {
	vmid := r.spec.VMID
	if err := r.task(ctx, StepTemplate, "POST", vmPath(r.res.Node, vmid)+"/template", "VM.Allocate on /vms/"+strconv.Itoa(vmid), nil, log); err != nil {
		return err
	}
	conf, err := readConfig(ctx, r.c, r.res.Node, vmid)
	if err != nil {
		return err
	}
	if conf["template"] != "1" {
		return fmt.Errorf("VM %d is not a template after its template task succeeded (template: %s)", vmid, termsafe.Quote(conf["template"]))
	}
	r.res.Config = conf
	r.res.DiskSize, _ = BootDiskSize(conf)
	return nil
}

// cleanup removes the image. A failure leaves the template intact, so it
// is reported in the result, not as an error.
func (r *creator) cleanup(ctx context.Context, log func(string)) error {
	node, imp, vol := r.res.Node, r.res.ImportStorage, r.res.ImageVolume
	err := r.task(ctx, StepCleanup, "DELETE", contentPath(node, imp, vol), "Datastore.Allocate on /storage/"+imp, nil, log)
	if err == nil {
		r.res.ImageRemoved = true
		return nil
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), observeTimeout)
	defer cancel()
	left := imageLeftover(node, imp, vol)
	there, oerr := hasVolume(octx, r.c, node, imp, vol, "import")
	switch {
	case oerr != nil:
		left.Unverified = oerr.Error()
	case !there:
		r.res.ImageRemoved = true
		return nil
	}
	log("cannot remove " + vol + ": " + err.Error())
	r.res.Left = append(r.res.Left, left)
	return nil
}

// task sends a request that starts a PVE task and waits for the task.
// params nil sends no body; an empty UPID (an older PVE's synchronous
// resize) means the work is done.
func (r *creator) task(ctx context.Context, step Step, method, path, needs string, params map[string]string, log func(string)) error {
	call := method + " " + termsafe.Cut(path)
	var upid string
	var err error
	var data any
	if params != nil {
		data = params
	}
	switch method {
	case "POST":
		err = r.c.Post(ctx, path, data, &upid)
	case "PUT":
		err = r.c.Put(ctx, path, data, &upid)
	case "DELETE":
		err = r.c.Delete(ctx, path, &upid)
	}
	if err != nil {
		if perr := permissionError(call, needs, err); perr != err {
			return perr
		}
		return fmt.Errorf("%s: %w", call, err)
	}
	if upid == "" {
		return nil
	}
	r.res.Tasks[step] = upid
	running, err := r.w.wait(ctx, r.res.Node, upid, log)
	if running {
		r.pending = upid
	}
	return err
}

// fail wraps err in a *CreateError with what the run left, read back from
// the hypervisor (also when ctx is already cancelled).
func (r *creator) fail(ctx context.Context, step Step, err error) error {
	if !step.mutates() {
		return &CreateError{Step: step, Err: err}
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), observeTimeout)
	defer cancel()
	return &CreateError{Step: step, Err: err, Left: r.observe(octx)}
}

// observe lists what the run made that is still there.
func (r *creator) observe(ctx context.Context) []Leftover {
	var left []Leftover
	node := r.res.Node
	if r.pending != "" {
		var st pveapi.TaskStatus
		n, ok := pveapi.UPIDNode(r.pending)
		if !ok {
			n = node
		}
		err := r.c.Get(ctx, pveapi.TaskPath(n, r.pending)+"/status", &st)
		if err != nil || st.Status == "running" {
			l := taskLeftover(n, r.pending)
			if err != nil {
				l.Unverified = err.Error()
			}
			left = append(left, l)
		}
	}
	if r.created {
		exists, template, err := vmState(ctx, r.c, node, r.spec.VMID)
		if err != nil || exists {
			l := vmLeftover(node, r.spec.VMID, template)
			if err != nil {
				l.Unverified = err.Error()
			}
			left = append(left, l)
		}
	}
	if r.downloaded {
		imp, vol := r.res.ImportStorage, r.res.ImageVolume
		there, err := hasVolume(ctx, r.c, node, imp, vol, "import")
		if err != nil || there {
			l := imageLeftover(node, imp, vol)
			if err != nil {
				l.Unverified = err.Error()
			}
			left = append(left, l)
		}
	}
	return left
}
