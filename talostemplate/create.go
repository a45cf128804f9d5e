package talostemplate

import (
	"fmt"
	"strconv"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// ImageFormat is the disk format of the Image Factory artefact that create
// mode downloads. PVE's download-url cannot decompress an image for the
// import content type, so only the factory's uncompressed artefacts work.
type ImageFormat string

const (
	// ImageRaw is nocloud-amd64.raw, the same image the print program
	// unpacks from nocloud-amd64.raw.xz.
	ImageRaw ImageFormat = "raw"
	// ImageQCOW2 is nocloud-amd64.qcow2: the same disk, a smaller download.
	ImageQCOW2 ImageFormat = "qcow2"
)

// ImportImageURL is the uncompressed nocloud image download-url fetches:
// <factory>/image/<schematic>/<version>/nocloud-amd64.<raw|qcow2>.
func (s Spec) ImportImageURL(f ImageFormat) string {
	return s.FactoryURL + "/image/" + s.SchematicID + "/" + s.TalosVersion + "/nocloud-amd64." + string(f)
}

// ImportFilename is the file name the image gets on the import storage:
// <template name>-nocloud-amd64.<raw|qcow2>, which PVE's import content
// type accepts (letters, digits, - . + = _ and a disk extension).
func (s Spec) ImportFilename(f ImageFormat) string {
	return s.Name() + "-nocloud-amd64." + string(f)
}

// Param is one parameter of a PVE API call, in the order it is reviewed.
type Param struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// CreateParams are the parameters of POST /nodes/{node}/qemu that create
// the template's VM from the image volume image (such as
// local:import/talos-v1.13.6-ce4c9805-nocloud-amd64.raw): the configuration
// the print program passes to qm create. UEFI (OVMF) with a 4 MB EFI disk
// without pre-enrolled keys, virtio-scsi with the image imported as scsi0, a
// serial console, the guest agent channel, and no NIC: capmox writes net0 on
// every clone. A template with PCI mappings also gets the q35 machine
// (GPUMachine) and a hostpciN: mapping=<id>,pcie=1 per device.
func CreateParams(s Spec, image string) []Param {
	agent := "enabled=1"
	if s.DisableAgent {
		agent = "enabled=0"
	}
	params := []Param{
		{"vmid", strconv.Itoa(s.VMID)},
		{"name", s.Name()},
		{"tags", PVETags(s.Tags)},
		{"ostype", "l26"},
		{"cpu", s.CPU},
		{"sockets", "1"},
		{"cores", "2"},
		{"memory", "4096"},
		{"bios", "ovmf"},
		{"efidisk0", s.Storage + ":1,efitype=4m,pre-enrolled-keys=0"},
		{"scsihw", "virtio-scsi-pci"},
		{"scsi0", s.Storage + ":0,import-from=" + image + ",cache=none,discard=on,ssd=1"},
		{"boot", "order=scsi0"},
		{"serial0", "socket"},
		{"vga", "std"},
		{"agent", agent},
	}
	if len(s.PCIMappings) > 0 {
		params = append(params, Param{"machine", GPUMachine})
		params = append(params, s.hostPCI()...)
	}
	return params
}

// Step is a stage of Create. Steps run in the order of Steps.
type Step string

// The stages of Create.
const (
	// StepPrepare picks the node and the storage the image is downloaded to.
	StepPrepare Step = "prepare"
	// StepCheck checks that the VMID is free, that the token sees every
	// guest, that no template carries the tag set and that the image volume
	// is not there yet.
	StepCheck Step = "check"
	// StepDownload fetches the image with download-url.
	StepDownload Step = "download"
	// StepCreate creates the VM, importing the image as its system disk.
	StepCreate Step = "create"
	// StepResize grows the system disk to the spec's size.
	StepResize Step = "resize"
	// StepTemplate converts the VM into a template.
	StepTemplate Step = "template"
	// StepCleanup removes the downloaded image, which the template no longer needs.
	StepCleanup Step = "cleanup"
)

// Steps is the order Create runs its stages in.
var Steps = []Step{StepPrepare, StepCheck, StepDownload, StepCreate, StepResize, StepTemplate, StepCleanup}

// verb says what a step does, for "cannot <verb>" errors.
func (s Step) verb() string {
	switch s {
	case StepPrepare:
		return "choose the node and storages"
	case StepCheck:
		return "check that the template can be created"
	case StepDownload:
		return "download the image"
	case StepCreate:
		return "create the VM"
	case StepResize:
		return "resize the system disk"
	case StepTemplate:
		return "convert the VM into a template"
	case StepCleanup:
		return "remove the downloaded image"
	}
	return string(s)
}

// mutates reports whether the step changes the hypervisor.
func (s Step) mutates() bool { return s != StepPrepare && s != StepCheck }

// Phase is where a step stands in a Progress report.
type Phase string

// Progress phases.
const (
	PhaseStarted Phase = "started"
	// PhaseLog carries a new line of the step's task log.
	PhaseLog     Phase = "log"
	PhaseDone    Phase = "done"
	PhaseSkipped Phase = "skipped"
	PhaseFailed  Phase = "failed"
)

// Progress reports a step of Create as it runs.
type Progress struct {
	// Index counts from 1 to Total in the order of Steps.
	Index, Total int
	Step         Step
	Phase        Phase
	// Message says what the step does (started), the task log line (log),
	// why it was skipped (skipped) or the error (failed).
	Message string
	// Elapsed is the time since the step started.
	Elapsed time.Duration
}

// CreateOptions tune Create. The zero value works on a one-node cluster
// whose disk storage, or only import-capable storage, takes the image.
type CreateOptions struct {
	// Node is the node that downloads the image and holds the template;
	// empty means the cluster's only node.
	Node string
	// ImportStorage is the file-based storage with the import content type
	// that download-url writes the image to. Empty means the spec's storage
	// when it has that content type, or else the node's only storage that has it.
	ImportStorage string
	// ImageFormat is the artefact fetched; empty means ImageRaw.
	ImageFormat ImageFormat
	// ReuseImage uses an image volume of the same name that is already on
	// the import storage (left by an earlier run) instead of refusing.
	ReuseImage bool
	// KeepImage keeps the downloaded image after the template is made.
	KeepImage bool
	// PollInterval is the pause between task status reads; default 1s.
	PollInterval time.Duration
	// Progress, when set, is called as steps start, log and end.
	Progress func(Progress)
}

func (o CreateOptions) withDefaults() (CreateOptions, error) {
	if o.ImageFormat == "" {
		o.ImageFormat = ImageRaw
	}
	if o.ImageFormat != ImageRaw && o.ImageFormat != ImageQCOW2 {
		return o, fmt.Errorf("image format %s is not an uncompressed factory artefact: use %s or %s (download-url cannot decompress for import)",
			termsafe.Quote(string(o.ImageFormat)), ImageRaw, ImageQCOW2)
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	for _, v := range []struct{ what, id string }{{"node", o.Node}, {"import storage", o.ImportStorage}} {
		if v.id != "" && !matches(storagePattern, v.id) {
			return o, fmt.Errorf("%s %s is not a Proxmox %s name", v.what, show(v.id), v.what)
		}
	}
	return o, nil
}

// CreateResult is what Create made.
type CreateResult struct {
	Spec Spec `json:"spec"`
	// Node holds the template.
	Node string `json:"node"`
	// ImportStorage took the downloaded image.
	ImportStorage string `json:"importStorage"`
	// ImageURL is the artefact fetched from the Image Factory.
	ImageURL string `json:"imageURL"`
	// ImageVolume is the downloaded image's volume ID.
	ImageVolume string `json:"imageVolume"`
	// ImageReused is true when an image left by an earlier run was used.
	ImageReused bool `json:"imageReused,omitempty"`
	// ImageRemoved is true when the image was deleted after the import.
	ImageRemoved bool `json:"imageRemoved"`
	// Tasks are the UPIDs of the tasks that ran, by step.
	Tasks map[Step]string `json:"tasks,omitempty"`
	// Config is the template's configuration as PVE reports it.
	Config map[string]string `json:"config,omitempty"`
	// DiskSize is the size of the template's boot disk (scsi0) read from
	// Config, as a pool's proxmox.templateDiskSize takes it (20Gi).
	DiskSize string `json:"diskSize,omitempty"`
	// Left lists what stays on the hypervisor besides the template and a
	// kept image: an image that could not be removed.
	Left []Leftover `json:"left,omitempty"`
}

// LeftoverKind classifies a Leftover.
type LeftoverKind string

// Kinds of leftovers.
const (
	// LeftImage is a downloaded image volume.
	LeftImage LeftoverKind = "image"
	// LeftVM is a VM that is not (or not yet known to be) a finished template.
	LeftVM LeftoverKind = "vm"
	// LeftTask is a task that was still running when Create gave up on it.
	LeftTask LeftoverKind = "task"
)

// Leftover is something a failed or interrupted Create leaves on the
// hypervisor, with the command and the API call that remove it.
type Leftover struct {
	Kind LeftoverKind `json:"kind"`
	Node string       `json:"node"`
	// VolID is the image volume (LeftImage).
	VolID string `json:"volid,omitempty"`
	// VMID is the VM (LeftVM).
	VMID int `json:"vmid,omitempty"`
	// Template is true when the VM is already a template (LeftVM).
	Template bool `json:"template,omitempty"`
	// UPID is the running task (LeftTask).
	UPID string `json:"upid,omitempty"`
	// Unverified says why the leftover may or may not be there: the check
	// that would tell could not be made.
	Unverified string `json:"unverified,omitempty"`
	// Command removes it, run as root on Node.
	Command string `json:"command"`
	// API removes it through the API: METHOD /api2/json/PATH.
	API string `json:"api"`
}

func imageLeftover(node, storage, volid string) Leftover {
	return Leftover{Kind: LeftImage, Node: node, VolID: volid, Command: "pvesm free " + volid,
		API: "DELETE /api2/json" + contentPath(node, storage, volid)}
}

func vmLeftover(node string, vmid int, template bool) Leftover {
	return Leftover{Kind: LeftVM, Node: node, VMID: vmid, Template: template, Command: "qm destroy " + strconv.Itoa(vmid),
		API: "DELETE /api2/json" + vmPath(node, vmid)}
}

func taskLeftover(node, upid string) Leftover {
	return Leftover{Kind: LeftTask, Node: node, UPID: upid, Command: "pvesh delete " + taskPath(node, upid),
		API: "DELETE /api2/json" + taskPath(node, upid)}
}

// String says what is left and how to remove it, in one line.
func (l Leftover) String() string {
	// Every field comes from the API: each is cut as termsafe cuts a value.
	l.VolID, l.Node, l.Command, l.API, l.UPID = termsafe.Cut(l.VolID), termsafe.Cut(l.Node), termsafe.Cut(l.Command), termsafe.Cut(l.API), termsafe.Cut(l.UPID)
	var what string
	switch l.Kind {
	case LeftImage:
		what = fmt.Sprintf("image volume %s on node %s; remove it with: %s (on node %s), or through the API: %s", l.VolID, l.Node, l.Command, l.Node, l.API)
	case LeftVM:
		if l.Template {
			what = fmt.Sprintf("VM %d on node %s is a template already; if it is unwanted, remove it with: %s (on node %s), or through the API: %s",
				l.VMID, l.Node, l.Command, l.Node, l.API)
		} else {
			what = fmt.Sprintf("VM %d was created but is not a template; remove it with: %s (on node %s), or through the API: %s",
				l.VMID, l.Command, l.Node, l.API)
		}
	case LeftTask:
		what = fmt.Sprintf("task %s is still running on node %s and may still change it; stop it with: %s (on node %s), or through the API: %s",
			l.UPID, l.Node, l.Command, l.Node, l.API)
	}
	if l.Unverified != "" {
		what += " (not verified: " + l.Unverified + ")"
	}
	return what
}

// API paths, relative to /api2/json, built by pveapi.Path: a node,
// storage, volume or UPID from an answer stays one path segment.
func vmPath(node string, vmid int) string {
	return pveapi.Path("nodes", node, "qemu", strconv.Itoa(vmid))
}

func storagePath(node, storage string) string { return pveapi.Path("nodes", node, "storage", storage) }

func contentPath(node, storage, volid string) string {
	return pveapi.Path("nodes", node, "storage", storage, "content", volid)
}

func taskPath(node, upid string) string { return pveapi.TaskPath(node, upid) }
