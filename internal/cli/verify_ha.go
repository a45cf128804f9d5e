package cli

import "github.com/spf13/pflag"

// proxmoxCheckFlags are verify's Proxmox connection flags (the one set,
// liveFlags, under the prefix proxmox-), which reach the Proxmox VE API for
// its checks of what is on Proxmox: the HA resources (the pool HA token,
// or any token with Sys.Audit on /) and the worker VMs of the namespace's
// pools (the tenant's capmox token, or any token with VM.Audit on them).
func proxmoxCheckFlags() liveFlags { return liveFlags{prefix: "proxmox-", need: "the Proxmox checks"} }

// bindProxmoxChecks binds f and says in --proxmox-url's and
// --proxmox-token-id's help what the checks read with them.
func bindProxmoxChecks(f *liveFlags, fs *pflag.FlagSet) {
	f.bind(fs)
	fs.Lookup(f.prefix + "url").Usage = "Proxmox VE API address, https://HOST:8006: also check the HA resources the controller made and the worker VMs of the namespace's pools (needs the next two flags)"
	fs.Lookup(f.prefix + "token-id").Usage = "API token id, USER@REALM!TOKEN: Sys.Audit on / reads the HA resources (the pool HA token), VM.Audit on a pool its VMs (the tenant's capmox token)"
	fs.Lookup(f.prefix + "token-secret-file").Usage = "file whose first line is that token's secret"
}
