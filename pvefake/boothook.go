package pvefake

import (
	"bytes"
	"context"
	"maps"
	"regexp"
	"sync"
)

// BootHook plays a guest's boot: the server calls it for every guest that
// POST .../status/start has started, after the qmstart task has ended OK,
// as a real guest boots once QEMU runs. Its error is the guest's failure to
// boot, not the API's: the guest stays running and the task OK, as on PVE,
// where no guest content fails a start; the error is recorded for
// BootErrors. The hook runs before the start request is answered, with the
// server unlocked, so it may call the API; ctx ends when the server
// closes.
type BootHook func(ctx context.Context, vm BootingVM) error

// WithBootHook sets the hook called for every guest that starts (none by
// default).
func WithBootHook(h BootHook) Option { return func(c *config) { c.bootHook = h } }

// BootingVM is a guest that has just started, as a BootHook sees it.
type BootingVM struct {
	VMID int
	Node string
	// UPID is the qmstart task's.
	UPID string
	// Config is a copy of the guest's configuration when it started
	// (smbios1, netN with their MAC addresses, ide0 ...).
	Config map[string]string
	// PCI are the host PCI devices it took (VMPCIDevices).
	PCI   []PCIDevice
	media map[string][]byte
}

var smbiosUUIDRe = regexp.MustCompile(`(?:^|,)uuid=([0-9a-fA-F-]+)`)

// SMBIOSUUID returns the uuid of the guest's smbios1, the UUID its
// firmware reports ("" without one).
func (v BootingVM) SMBIOSUUID() string {
	if m := smbiosUUIDRe.FindStringSubmatch(v.Config["smbios1"]); m != nil {
		return m[1]
	}
	return ""
}

// CDROM returns the ISO volume in a CD-ROM drive of the guest (ide0 for
// capmox's bootstrap ISO) and the bytes it was uploaded with. ok is false
// when the drive holds no ISO volume or the server keeps no bytes of it
// (only uploaded volumes keep them).
func (v BootingVM) CDROM(drive string) (volid string, data []byte, ok bool) {
	d, err := parseDrive(v.Config[drive])
	if err != nil || !d.cdrom() {
		return "", nil, false
	}
	data, ok = v.media[drive]
	return d.file, bytes.Clone(data), ok
}

// BootError is a boot hook's failure for a guest.
type BootError struct {
	VMID int
	Node string
	UPID string // the qmstart task's
	Err  error
}

// bootLog holds the boot hook's failures.
type bootLog struct {
	mu     sync.Mutex
	errors []BootError
}

// BootErrors returns the boot hook's failures, in order.
func (srv *Server) BootErrors() []BootError {
	srv.boots.mu.Lock()
	defer srv.boots.mu.Unlock()
	return append([]BootError(nil), srv.boots.errors...)
}

// bootingVM collects what the boot hook sees of a guest, with the state
// locked: its configuration and the bytes of the ISOs in its CD-ROMs.
func (s *state) bootingVM(g *guest, upid string) BootingVM {
	vm := BootingVM{VMID: g.vmid, Node: g.node, UPID: upid, Config: maps.Clone(g.conf), PCI: g.pciDevices(),
		media: map[string][]byte{}}
	for k, v := range g.conf {
		d, err := parseDrive(v)
		if !isDriveKey(k) || err != nil || !d.cdrom() {
			continue
		}
		if vol, ok := s.volume(g.node, d.file); ok && vol.data != nil {
			vm.media[k] = vol.data // volumes' bytes are replaced, never changed
		}
	}
	return vm
}

// boot runs the boot hook for a started guest with the server unlocked
// and records its failure.
func (c *call) boot(vm BootingVM) {
	h := c.srv.cfg.bootHook
	if h == nil {
		return
	}
	c.srv.mu.Unlock()
	err := h(c.srv.ctx, vm)
	c.srv.mu.Lock()
	if err != nil {
		c.srv.boots.mu.Lock()
		c.srv.boots.errors = append(c.srv.boots.errors, BootError{VMID: vm.VMID, Node: vm.Node, UPID: vm.UPID, Err: err})
		c.srv.boots.mu.Unlock()
	}
}
