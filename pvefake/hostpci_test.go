package pvefake_test

import (
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestHostPCIConfigChecks: a hostpciN option of a create or a config update
// as qemu-server's check_hostpci_perm judges it, each refusal next to an
// admitted request: anyone but root@pam (a token of root too) may set only
// a mapped device, with Mapping.Use on /mapping/pci/<mapping> and
// VM.Config.HWType; whether the mapping exists is a matter for the start.
// The value is checked against pve-qm-hostpci first.
func TestHostPCIConfigChecks(t *testing.T) {
	vmAdmin := map[string][]string{"/vms/100": {"PVEVMAdmin"}, "/mapping/pci/gpu": {"PVEMappingUser"}}
	cases := map[string]struct {
		reason string
		grants map[string][]string // nil: the root token
		create bool                // POST /nodes/pve/qemu (VM 101) instead of PUT config of VM 100
		set    map[string]any
		want   string
	}{
		"Mapped": {reason: "Mapping.Use and VM.Config.HWType admit a mapped device", grants: vmAdmin, set: map[string]any{"hostpci0": "mapping=gpu,pcie=1"}},
		"NoMappingUse": {reason: "without Mapping.Use on the mapping", grants: map[string][]string{"/vms/100": {"PVEVMAdmin"}, "/mapping/pci/nic": {"PVEMappingUser"}},
			set: map[string]any{"hostpci0": "mapping=gpu"}, want: "Permission check failed (/mapping/pci/gpu, Mapping.Use)"},
		"NoHWType": {reason: "Mapping.Use alone is not VM.Config.HWType", grants: map[string][]string{"/vms/100": {"PVEVMUser"}, "/mapping/pci/gpu": {"PVEMappingUser"}},
			set: map[string]any{"hostpci0": "mapping=gpu"}, want: "Permission check failed (/vms/100, VM.Config.HWType)"},
		"UnknownMapping": {reason: "a mapping need not exist yet", grants: map[string][]string{"/vms/100": {"PVEVMAdmin"}, "/mapping": {"PVEMappingUser"}},
			set: map[string]any{"hostpci1": "mapping=later"}},
		"HostDevice": {reason: "a host device is root@pam's, not even its token's", set: map[string]any{"hostpci0": "0000:01:00.0"},
			want: "only root can set 'hostpci0' config for non-mapped devices"},
		"HostDeviceUser": {reason: "nor a user's with every privilege", grants: map[string][]string{"/": {"Administrator"}}, set: map[string]any{"hostpci0": "host=01:00.0;01:00.1"},
			want: "only root can set 'hostpci0' config for non-mapped devices"},
		"Romfile": {reason: "a romfile is root@pam's (qemu-server 8.4.10, 9.2.6)", grants: vmAdmin, set: map[string]any{"hostpci0": "mapping=gpu,romfile=vbios.bin"},
			want: "Parameter verification failed. | hostpci0: only root@pam can set 'romfile' option"},
		"Neither": {reason: "host or mapping", grants: vmAdmin, set: map[string]any{"hostpci0": "pcie=1"}, want: "either 'host' or 'mapping' must be set."},
		"BadMappingID": {reason: "mapping is pve-configid", set: map[string]any{"hostpci0": "mapping=g"},
			want: "hostpci0: invalid format - format error\nhostpci0.mapping: invalid format - invalid configuration ID 'g'"},
		"BadHost": {reason: "host is lower-case hex", set: map[string]any{"hostpci2": "0000:0A:00.0"},
			want: "hostpci2: invalid format - format error\nhostpci2.host: value does not match the regex pattern"},
		"BadBoolean": {reason: "pcie is a boolean", set: map[string]any{"hostpci0": "mapping=gpu,pcie=maybe"},
			want: "hostpci0.pcie: type check ('boolean') failed - got 'maybe'"},
		"BadDriver": {reason: "driver is vfio or keep", set: map[string]any{"hostpci0": "mapping=gpu,driver=nouveau"},
			want: "hostpci0.driver: value 'nouveau' does not have a value in the enumeration 'vfio, keep'"},
		"TwoDefaults": {reason: "one host", set: map[string]any{"hostpci0": "01:00.0,02:00.0"},
			want: "hostpci0: invalid format - duplicate key in comma-separated list property: host"},
		"CreateMapped": {reason: "a create checks the same", create: true, grants: map[string][]string{"/vms/101": {"PVEVMAdmin"}, "/mapping/pci/gpu": {"PVEMappingUser"}},
			set: map[string]any{"hostpci0": "mapping=gpu"}},
		"CreateRefused": {reason: "before the worker", create: true, grants: map[string][]string{"/vms/101": {"PVEVMAdmin"}},
			set: map[string]any{"hostpci0": "mapping=gpu"}, want: "Permission check failed (/mapping/pci/gpu, Mapping.Use)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, c := start(t)
			seedGPU(t, srv)
			must(t, srv.AddVM(pvefake.VMSpec{VMID: 100}))
			if tc.grants != nil {
				c = grantee(t, srv, "u@pve", tc.grants)
			}
			var err error
			if tc.create {
				body := map[string]any{"vmid": 101}
				for k, v := range tc.set {
					body[k] = v
				}
				var upid proxmox.UPID
				if err = c.Post(ctx, "/nodes/pve/qemu", body, &upid); err == nil {
					err = wait(proxmox.NewTask(upid, c), nil)
				}
			} else {
				err = c.Put(ctx, "/nodes/pve/qemu/100/config", tc.set, nil)
			}
			wantMessage(t, tc.reason, err, tc.want)
			conf, _, _ := srv.VMConfig(100)
			if tc.create {
				conf, _, _ = srv.VMConfig(101)
			}
			for k, v := range tc.set {
				if stored := conf[k] == v; stored != (tc.want == "") {
					t.Errorf("%s: %s = %q stored: %v", tc.reason, k, conf[k], stored)
				}
			}
		})
	}
}

// TestHostPCIReplaceAndDelete: an update checks the value it replaces and
// a delete the value it removes, inside the worker of an asynchronous
// update; a clone checks the source's devices (check_mapping_access).
func TestHostPCIReplaceAndDelete(t *testing.T) {
	srv, root := start(t)
	seedGPU(t, srv)
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 100, Config: map[string]string{"hostpci0": "mapping=gpu", "hostpci1": "0000:07:00.0"}}))
	u := grantee(t, srv, "u@pve", map[string][]string{"/vms": {"PVEVMAdmin"}, "/mapping/pci/nic": {"PVEMappingUser"}})
	vm := u.NodeRef("pve").VirtualMachineRef(100)
	wantMessage(t, "replacing gpu needs Mapping.Use on it", wait(vm.Config(ctx, opt("hostpci0", "mapping=nic"))),
		"task failed: 403 Permission check failed (/mapping/pci/gpu, Mapping.Use)")
	wantMessage(t, "so does removing it", wait(vm.Config(ctx, opt("delete", "hostpci0"))),
		"task failed: 403 Permission check failed (/mapping/pci/gpu, Mapping.Use)")
	wantMessage(t, "a host device is root@pam's to remove", vm.ConfigSync(ctx, opt("delete", "hostpci1")),
		"only root can set 'hostpci1' config for non-mapped devices")
	wantMessage(t, "a new mapped device is the user's", vm.ConfigSync(ctx, opt("hostpci2", "mapping=nic")), "")
	wantMessage(t, "and so is its removal", vm.ConfigSync(ctx, opt("delete", "hostpci2")), "")
	if conf, _, _ := srv.VMConfig(100); conf["hostpci0"] != "mapping=gpu" || conf["hostpci1"] != "0000:07:00.0" || conf["hostpci2"] != "" {
		t.Errorf("the refused changes changed the configuration: %v", conf)
	}

	wantMessage(t, "root's token may not remove a host device either", wait(root.NodeRef("pve").VirtualMachineRef(100).Config(ctx, opt("delete", "hostpci1"))),
		"task failed: only root can set 'hostpci1' config for non-mapped devices")

	must(t, wait(root.NodeRef("pve").VirtualMachineRef(100).ConvertToTemplate(ctx)))
	_, _, err := vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101})
	wantMessage(t, "a clone needs Mapping.Use on the source's mapping", err, "Permission check failed (/mapping/pci/gpu, Mapping.Use)")
	must(t, srv.SetACL("/mapping/pci/gpu", pveacl.KindUser, "u@pve", false, "PVEMappingUser"))
	must(t, srv.SetACL("/mapping/pci/gpu", pveacl.KindToken, "u@pve!tk", false, "PVEMappingUser"))
	_, _, err = vm.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 101})
	wantMessage(t, "and root@pam to copy a host device", err, "only root can set 'hostpci1' config for non-mapped devices")
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 200, Template: true, Config: map[string]string{"hostpci0": "mapping=gpu"}}))
	_, task, err := u.NodeRef("pve").VirtualMachineRef(200).Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 201})
	wantMessage(t, "a mapped device alone is the user's to copy", wait(task, err), "")
}
