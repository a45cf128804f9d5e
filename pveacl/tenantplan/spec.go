package tenantplan

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Tenants is the desired isolation: the platform's own credentials and one
// entry per tenant. It is read from YAML (see docs/pveacl.md).
type Tenants struct {
	Platform Platform `json:"platform"`
	Tenants  []Tenant `json:"tenants"`
}

// Platform holds what the tenants share.
type Platform struct {
	// PVEVersion is the Proxmox VE major version (8 or 9; default 9).
	PVEVersion pveacl.Version `json:"pveVersion,omitempty"`
	// Capmox is the cluster-api provider's user and token, which creates
	// every tenant's VMs and so needs SDN.Use on each tenant VLAN and
	// Mapping.Use on each tenant's PCI mappings (Tenant.PCIMappings).
	Capmox *Credential `json:"capmox,omitempty"`
	// HA is the proxmox-network controller's user and token for pool HA
	// (package pveha): it reads and changes the cluster's HA resources
	// and rules, which Proxmox VE checks on / alone (Sys.Audit to read,
	// Sys.Console to change), and it reaches no VM.
	HA *Credential `json:"ha,omitempty"`
	// SharedStorages are storages no tenant may reach (ISO, templates,
	// backups); the audit treats them as foreign to every tenant.
	SharedStorages []string `json:"sharedStorages,omitempty"`
}

// Credential is a user and the name of its API token.
type Credential struct {
	User  string `json:"user"`
	Token string `json:"token"`
}

// TokenID is the full token id user@realm!token.
func (c Credential) TokenID() string { return pveacl.TokenID(c.User, c.Token) }

// Tenant is one tenant's slice of the hypervisor.
type Tenant struct {
	// Name identifies the tenant; the defaults below derive from it.
	Name string `json:"name"`
	// Pool is the resource pool holding the tenant's VMs (default: Name).
	Pool string `json:"pool,omitempty"`
	// Storage is the tenant's dedicated storage (required).
	Storage string `json:"storage"`
	// User owns the tenant's tokens (default: <Name>@pve).
	User string `json:"user,omitempty"`
	// Tokens are the token names of the CSI and CCM controllers.
	Tokens TenantTokens `json:"tokens,omitempty"`
	// VMs are existing guests to put into the pool.
	VMs []int `json:"vms,omitempty"`
	// Storages are extra storages of the tenant, also put into the pool.
	Storages []string `json:"storages,omitempty"`
	// Networks are the tenant's VLANs; capmox gets SDN.Use on each.
	Networks []Network `json:"networks,omitempty"`
	// Templates are the VM templates the tenant's capmox token may clone
	// (VM.Clone and VM.Audit on each, nothing else); templates may be
	// shared between tenants.
	Templates []int `json:"templates,omitempty"`
	// LinkedCloneStorages are the storages holding the base disks of the
	// templates, for linked clones (capmox's default full: false): PVE
	// checks Datastore.AllocateSpace on the storage of each disk a linked
	// clone shares, so the capmox token gets exactly that privilege there.
	LinkedCloneStorages []string `json:"linkedCloneStorages,omitempty"`
	// VMIDRange is the range of VM ids the tenant's VMs take: the render
	// writes it as the tenant's pools' vmIDRange, so capmox clones inside
	// it, and the audit reports a tenant VM outside it and another
	// tenant's VM inside it. Ranges of two tenants may not overlap.
	VMIDRange *VMIDRange `json:"vmIDRange,omitempty"`
	// PCIMappings are the Proxmox VE PCI resource mappings (cluster-wide
	// mapping ids, /cluster/mapping/pci) the tenant's VMs may use, the
	// GPUs of its templates' hostpciN: mapping=<id>. qemu-server checks
	// Mapping.Use on /mapping/pci/<id> when a clone copies such a device
	// from its template (check_mapping_access) and when a config sets
	// it, so the capmox token that clones the tenant's VMs (its own,
	// and the platform's when platform.capmox is set) gets CozyMapping
	// (Mapping.Use, nothing else) on each, without propagation. A
	// mapping belongs to one tenant: two tenants naming one would share
	// its devices. A platform-wide capmox token holds Mapping.Use on
	// every tenant's mappings (the audit says so with
	// PlatformWideToken), as it holds SDN.Use on every tenant's VLANs.
	// Mappings exist since Proxmox VE 8.0.
	PCIMappings []string `json:"pciMappings,omitempty"`
}

// VMIDRange is a range of VM ids, both ends included.
type VMIDRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Contains reports whether vmid is in the range.
func (r VMIDRange) Contains(vmid int) bool { return vmid >= r.Start && vmid <= r.End }

// String is START-END.
func (r VMIDRange) String() string { return fmt.Sprintf("%d-%d", r.Start, r.End) }

// TenantTokens names a tenant's tokens (defaults csi and ccm). Capmox,
// when set, is the tenant's own cluster-api provider token, which a
// ProxmoxCluster's credentialsRef names; without it the platform's capmox
// token clones the tenant's VMs.
type TenantTokens struct {
	CSI    string `json:"csi,omitempty"`
	CCM    string `json:"ccm,omitempty"`
	Capmox string `json:"capmox,omitempty"`
}

// Network is a bridge and the VLANs a tenant uses on it.
type Network struct {
	// Zone is the SDN zone (default localnetwork: plain bridges).
	Zone   string `json:"zone,omitempty"`
	Bridge string `json:"bridge"`
	VLANs  []int  `json:"vlans,omitempty"`
	// Untagged grants the bridge itself, for NICs without a VLAN tag (a
	// template's NIC, a pool on a plain bridge); implied when VLANs is
	// empty.
	Untagged bool `json:"untagged,omitempty"`
	// VNets are the tenant's Proxmox SDN VNets in Zone (a zone in mode
	// VNets gives each VLAN one): SDN.Use on /sdn/zones/<zone>/<vnet> for
	// each, and nothing on the bridge. Bridge, VLANs and Untagged stay
	// unset with VNets.
	VNets []string `json:"vnets,omitempty"`
}

// SDNPaths are the ACL paths a NIC on this network is checked against:
// /sdn/zones/<zone>/<bridge> for an untagged NIC,
// /sdn/zones/<zone>/<bridge>/<vlan> for each VLAN, and
// /sdn/zones/<zone>/<vnet> for each VNet.
func (n Network) SDNPaths() []string {
	if len(n.VNets) > 0 {
		out := make([]string, len(n.VNets))
		for i, v := range n.VNets {
			out[i] = fmt.Sprintf("/sdn/zones/%s/%s", n.Zone, v)
		}
		return out
	}
	base := fmt.Sprintf("/sdn/zones/%s/%s", n.Zone, n.Bridge)
	var out []string
	if n.Untagged || len(n.VLANs) == 0 {
		out = append(out, base)
	}
	for _, v := range n.VLANs {
		out = append(out, fmt.Sprintf("%s/%d", base, v))
	}
	return out
}

// CapmoxTokenID returns the tenant's own capmox token id, "" without one.
func (t Tenant) CapmoxTokenID() string {
	if t.Tokens.Capmox == "" {
		return ""
	}
	return pveacl.TokenID(t.User, t.Tokens.Capmox)
}

// TokenIDs returns the tenant's full CSI and CCM token ids.
func (t Tenant) TokenIDs() (csi, ccm string) {
	return pveacl.TokenID(t.User, t.Tokens.CSI), pveacl.TokenID(t.User, t.Tokens.CCM)
}

// PCIMappingPath is the ACL path of a PCI resource mapping,
// /mapping/pci/<id>, on which qemu-server checks Mapping.Use.
func PCIMappingPath(id string) string { return "/mapping/pci/" + id }

// AllStorages returns the dedicated storage followed by the extra ones.
func (t Tenant) AllStorages() []string { return append([]string{t.Storage}, t.Storages...) }

// LoadTenants reads a tenant specification from YAML (or JSON), fills the
// defaults and validates it. Unknown fields are errors, and so is a
// document that holds nothing (empty, blank or only comments): an empty
// file is a mistake, never "no tenants"; `tenants: []` says that.
//
// The specification is one YAML document; empty documents around it are
// passed over, and a file with a second document of data is refused
// (strictyaml.DocumentsError) rather than read in part.
func LoadTenants(data []byte) (*Tenants, error) {
	j, err := strictyaml.JSON(data)
	if err != nil {
		return nil, fmt.Errorf("cannot read the tenant specification: %w: %w", ErrInvalidSpec, err)
	}
	if string(j) == "null" {
		return nil, fmt.Errorf("cannot read the tenant specification: %w: it is empty; write the tenants (or `tenants: []` to mean none)", ErrInvalidSpec)
	}
	var t Tenants
	if err := strictyaml.UnmarshalJSON(j, &t); err != nil {
		return nil, fmt.Errorf("cannot read the tenant specification: %w: %w", ErrInvalidSpec, err)
	}
	d := t.Defaulted()
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// Defaulted returns a copy of the specification with the defaults filled
// in; t is not changed.
func (t *Tenants) Defaulted() *Tenants {
	d := *t
	d.Platform.SharedStorages = slices.Clone(t.Platform.SharedStorages)
	d.Tenants = make([]Tenant, len(t.Tenants))
	for i, tn := range t.Tenants {
		tn.VMs, tn.Storages = slices.Clone(tn.VMs), slices.Clone(tn.Storages)
		tn.Networks = slices.Clone(tn.Networks)
		tn.Templates = slices.Clone(tn.Templates)
		tn.LinkedCloneStorages = slices.Clone(tn.LinkedCloneStorages)
		tn.PCIMappings = slices.Clone(tn.PCIMappings)
		if tn.VMIDRange != nil {
			r := *tn.VMIDRange
			tn.VMIDRange = &r
		}
		d.Tenants[i] = tn
	}
	d.fillDefaults()
	return &d
}

// fillDefaults fills the defaults in place.
func (t *Tenants) fillDefaults() {
	if t.Platform.PVEVersion == 0 {
		t.Platform.PVEVersion = pveacl.DefaultVersion
	}
	for i := range t.Tenants {
		tn := &t.Tenants[i]
		if tn.Pool == "" {
			tn.Pool = tn.Name
		}
		if tn.User == "" && tn.Name != "" {
			tn.User = tn.Name + "@pve"
		}
		if tn.Tokens.CSI == "" {
			tn.Tokens.CSI = "csi"
		}
		if tn.Tokens.CCM == "" {
			tn.Tokens.CCM = "ccm"
		}
		for j := range tn.Networks {
			if tn.Networks[j].Zone == "" {
				tn.Networks[j].Zone = "localnetwork"
			}
		}
	}
}

// Validate checks the specification after Defaulted and joins every problem
// into one error; each is a *fieldError wrapping ErrInvalidSpec.
func (t *Tenants) Validate() error {
	v := &validator{owners: map[string]string{}}
	if err := t.Platform.PVEVersion.Validate(); err != nil {
		v.add("platform.pveVersion", "%v", err)
	}
	if c := t.Platform.Capmox; c != nil {
		v.credential("platform.capmox.user", c.User)
		v.check("platform.capmox.token", pveacl.ValidTokenName(c.Token))
		v.own("user", c.User, "platform.capmox.user", "the capmox user")
	}
	if c := t.Platform.HA; c != nil {
		v.credential("platform.ha.user", c.User)
		v.check("platform.ha.token", pveacl.ValidTokenName(c.Token))
		v.own("user", c.User, "platform.ha.user", "the pool HA user")
	}
	for i, s := range t.Platform.SharedStorages {
		f := fmt.Sprintf("platform.sharedStorages[%d]", i)
		v.check(f, pveacl.ValidStorageID(s))
		v.own("storage", s, f, "the shared storages")
	}
	for i, tn := range t.Tenants {
		v.tenant(i, tn, t.Platform.Capmox != nil || tn.Tokens.Capmox != "")
	}
	v.nestedPools(t.Tenants)
	v.linkedClones(t.Tenants)
	v.vmIDRanges(t)
	v.foreignTemplates(t)
	v.pciMappings(t)
	return termsafe.Join(v.errs...)
}

type validator struct {
	errs   []error
	owners map[string]string // kind/id -> owner description
}

func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, &fieldError{Field: field, Msg: fmt.Sprintf(format, termsafe.QuoteArgs(args...)...)})
}

func (v *validator) check(field string, err error) {
	if err != nil {
		v.add(field, "%v", err)
	}
}

// own records that id belongs to owner, and reports a second owner.
func (v *validator) own(kind, id, field, owner string) {
	key := kind + "/" + id
	if prev, ok := v.owners[key]; ok && prev != owner {
		v.add(field, "%s %q already belongs to %s; give every tenant its own %s", kind, id, prev, kind)
		return
	}
	v.owners[key] = owner
}

// sdnIDRe is Proxmox's VNet and SDN zone ID rule (pve-network's
// pve-sdn-vnet-id): 2-8 letters and digits, starting with a letter.
var sdnIDRe = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]{1,7}$`)

// vnets checks a network of SDN VNets; a VNet belongs to one tenant.
func (v *validator) vnets(nf, owner string, n Network) {
	if n.Zone == "localnetwork" || !sdnIDRe.MatchString(n.Zone) {
		v.add(nf+".zone", "zone %q is not a Proxmox SDN zone: VNets need the zone's spec.sdn.zone (2-8 letters and digits)", n.Zone)
	}
	if n.Bridge != "" || len(n.VLANs) > 0 || n.Untagged {
		v.add(nf, "a network of vnets has no bridge, vlans or untagged: a VNet is the bridge and carries its VLAN")
	}
	for k, id := range n.VNets {
		vf := fmt.Sprintf("%s.vnets[%d]", nf, k)
		if !sdnIDRe.MatchString(id) {
			v.add(vf, "VNet %q is not a Proxmox VNet ID: 2-8 letters and digits, starting with a letter", id)
		}
		v.own("VNet", n.Zone+"/"+id, vf, owner)
	}
}

// ownFolded refuses two tenants whose ids differ only in case or in '-',
// '_' and '.': names derived from them that allow only lower-case letters,
// digits and '-' (Kubernetes namespaces and Secrets, DNS labels) would be
// one name for both.
func (v *validator) ownFolded(kind, id, field, owner string) {
	key := "folded " + kind + "/" + foldID(id)
	prev, ok := v.owners[key]
	if !ok {
		v.owners[key] = owner + "\x00" + id
		return
	}
	prevOwner, prevID, _ := strings.Cut(prev, "\x00")
	if prevOwner != owner && prevID != id { // the same id is reported by own
		v.add(field, "%s %q of %s and %s %q of %s differ only in case or in '-', '_', '.', so names derived from them (Kubernetes namespaces and Secrets) would be one name for both tenants; rename one of them",
			kind, id, owner, kind, prevID, prevOwner)
	}
}

// foldID lower-cases id and turns '_' and '.' into '-'.
func foldID(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '.' {
			return '-'
		}
		return unicode.ToLower(r)
	}, id)
}

func (v *validator) credential(field, user string) {
	if _, _, err := pveacl.ParseUserID(user); err != nil {
		v.add(field, "%v", err)
	} else if user == "root@pam" {
		v.add(field, "root@pam bypasses every ACL check; create a dedicated user")
	}
}

func (v *validator) tenant(i int, tn Tenant, haveCapmox bool) {
	f := fmt.Sprintf("tenants[%d]", i)
	owner := "tenant " + termsafe.Quote(tn.Name)
	if pveacl.ValidRoleID(tn.Name) != nil || tn.Name == "" {
		v.add(f+".name", "tenant name %q is invalid: use letters, digits, '.', '-' or '_'", tn.Name)
	}
	v.own("tenant", tn.Name, f+".name", fmt.Sprintf("tenants[%d]", i))
	v.ownFolded("name", tn.Name, f+".name", owner)
	v.check(f+".pool", pveacl.ValidNewPoolID(tn.Pool))
	v.own("pool", tn.Pool, f+".pool", owner)
	v.ownFolded("pool", tn.Pool, f+".pool", owner)
	if tn.Storage == "" {
		v.add(f+".storage", "a dedicated storage is required: name the PVE storage only this tenant uses")
	}
	for j, s := range tn.AllStorages() {
		sf := f + ".storage"
		if j > 0 {
			sf = fmt.Sprintf("%s.storages[%d]", f, j-1)
		}
		if s != "" {
			v.check(sf, pveacl.ValidStorageID(s))
			v.own("storage", s, sf, owner)
		}
	}
	v.credential(f+".user", tn.User)
	v.check(f+".tokens.csi", pveacl.ValidTokenName(tn.Tokens.CSI))
	v.check(f+".tokens.ccm", pveacl.ValidTokenName(tn.Tokens.CCM))
	if tn.Tokens.CSI == tn.Tokens.CCM {
		v.add(f+".tokens", "the CSI and CCM tokens must differ (both are %q): each has its own blast radius", tn.Tokens.CSI)
	}
	v.capmoxToken(f, tn)
	v.own("user", tn.User, f+".user", owner)
	v.ownFolded("user", tn.User, f+".user", owner)
	for j, vm := range tn.VMs {
		vf := fmt.Sprintf("%s.vms[%d]", f, j)
		switch {
		case vm < 100:
			v.add(vf, "VM id %d is invalid: VM ids start at 100", vm)
		case vm > 999999999:
			v.add(vf, "VM id %d is invalid: Proxmox VM ids end at 999999999", vm)
		}
		v.own("VM", fmt.Sprint(vm), vf, owner)
	}
	v.networks(f, owner, tn, haveCapmox)
}

// networks checks the tenant's bridges and VLANs; a VLAN belongs to one
// tenant.
func (v *validator) networks(f, owner string, tn Tenant, haveCapmox bool) {
	for j, n := range tn.Networks {
		nf := fmt.Sprintf("%s.networks[%d]", f, j)
		if !haveCapmox {
			v.add(nf, "networks need platform.capmox or tokens.capmox: SDN.Use on a tenant VLAN is granted to the capmox token that creates the VMs")
		}
		if len(n.VNets) > 0 {
			v.vnets(nf, owner, n)
			continue
		}
		if pveacl.ValidRoleID(n.Zone) != nil || pveacl.ValidRoleID(n.Bridge) != nil {
			v.add(nf, "zone %q or bridge %q is invalid: use letters, digits, '.', '-' or '_'", n.Zone, n.Bridge)
		}
		if len(n.VLANs) == 0 && !n.Untagged {
			v.add(nf+".vlans", "list at least one VLAN id (1-4094), or set untagged: true for NICs on the bridge itself")
		}
		for k, vlan := range n.VLANs {
			vf := fmt.Sprintf("%s.vlans[%d]", nf, k)
			if vlan < 1 || vlan > 4094 {
				v.add(vf, "VLAN id %d is out of range: use 1-4094", vlan)
			}
			v.own("VLAN", fmt.Sprintf("%s/%s/%d", n.Zone, n.Bridge, vlan), vf, owner)
		}
	}
}

// capmoxToken checks the tenant's own capmox token and its templates.
func (v *validator) capmoxToken(f string, tn Tenant) {
	if tn.Tokens.Capmox == "" {
		if len(tn.Templates) > 0 {
			v.add(f+".templates", "templates are cloned by the tenant's own capmox token: set tokens.capmox")
		}
		return
	}
	v.check(f+".tokens.capmox", pveacl.ValidTokenName(tn.Tokens.Capmox))
	if tn.Tokens.Capmox == tn.Tokens.CSI || tn.Tokens.Capmox == tn.Tokens.CCM {
		v.add(f+".tokens.capmox", "the capmox token must differ from the CSI and CCM tokens (%q): it clones and deletes VMs", tn.Tokens.Capmox)
	}
	if len(tn.Templates) == 0 {
		v.add(f+".templates", "list the VM templates the tenant's capmox token may clone")
	}
	for j, vm := range tn.Templates {
		if vm < 100 || vm > 999999999 {
			v.add(fmt.Sprintf("%s.templates[%d]", f, j), "VM id %d is invalid: use 100-999999999", vm)
		}
	}
}

// linkedClones checks each tenant's linkedCloneStorages against every
// tenant's own storages: a grant there must not reach another tenant's
// storage, and the tenant's own needs none.
func (v *validator) linkedClones(ts []Tenant) {
	owner := map[string]string{}
	for _, t := range ts {
		for _, s := range t.AllStorages() {
			owner[s] = t.Name
		}
	}
	for i, t := range ts {
		f := fmt.Sprintf("tenants[%d].linkedCloneStorages", i)
		if len(t.LinkedCloneStorages) > 0 && t.Tokens.Capmox == "" {
			v.add(f, "linked clones are made by the tenant's own capmox token: set tokens.capmox and templates, or drop linkedCloneStorages (the platform's capmox token already allocates everywhere)")
		}
		seen := map[string]bool{}
		for j, s := range t.LinkedCloneStorages {
			sf := fmt.Sprintf("%s[%d]", f, j)
			switch o, owned := owner[s]; {
			case pveacl.ValidStorageID(s) != nil:
				v.check(sf, pveacl.ValidStorageID(s))
			case seen[s]:
				v.add(sf, "storage %q is listed twice", s)
			case owned && o == t.Name:
				v.add(sf, "storage %q is the tenant's own: its capmox token allocates there through the pool already; list only the storages that hold the templates' disks", s)
			case owned:
				v.add(sf, "storage %q is tenant %q's dedicated storage: Datastore.AllocateSpace there would let this tenant's token fill it; keep templates on a storage no tenant owns", s, o)
			}
			seen[s] = true
		}
	}
}

// nestedPools refuses a tenant pool inside another tenant's pool: the
// parent's ACLs could propagate into it.
func (v *validator) nestedPools(ts []Tenant) {
	owner := map[string]string{}
	for _, t := range ts {
		owner[t.Pool] = t.Name
	}
	for i, t := range ts {
		for p := pveacl.PoolParent(t.Pool); p != ""; p = pveacl.PoolParent(p) {
			if name, ok := owner[p]; ok {
				v.add(fmt.Sprintf("tenants[%d].pool", i), "pool %q is nested in pool %q of tenant %q; give each tenant a top-level pool", t.Pool, p, name)
			}
		}
	}
}

// vmIDRanges checks each tenant's range and that no two overlap.
func (v *validator) vmIDRanges(t *Tenants) {
	ts := t.Tenants
	for i, tn := range ts {
		r := tn.VMIDRange
		if r == nil {
			continue
		}
		f := fmt.Sprintf("tenants[%d].vmIDRange", i)
		if r.Start < 100 || r.End > 999999999 || r.End < r.Start {
			v.add(f, "range %s is invalid: write start and end within 100-999999999, end not below start", r)
			continue
		}
		for j, o := range ts[:i] {
			if o.VMIDRange != nil && r.Start <= o.VMIDRange.End && o.VMIDRange.Start <= r.End {
				v.add(f, "range %s of tenant %q overlaps range %s of tenant %q (tenants[%d]): give every tenant a range of its own", r, tn.Name, o.VMIDRange, o.Name, j)
			}
		}
	}
	v.pinnedInOtherRanges(t)
}

// pinnedInOtherRanges refuses a tenant's listed VM whose id lies in
// another tenant's vmIDRange: that tenant's capmox token clones into its
// range, and the audit would name the VM as inside a foreign range
// (ForeignVMInRange) right after an apply. A VM two tenants list is
// refused by own.
func (v *validator) pinnedInOtherRanges(t *Tenants) {
	for i, tn := range t.Tenants {
		for k, vm := range tn.VMs {
			for _, c := range t.OtherTenantsVM(tn.Name, vm, nil) {
				if c.Range {
					v.add(fmt.Sprintf("tenants[%d].vms[%d]", i, k), "VM %d of tenant %q lies inside vmIDRange %s of tenant %q (tenants[%d]), where that tenant's VMs are cloned: move the VM to an id outside it, or shrink that range",
						vm, tn.Name, t.Tenants[c.Index].VMIDRange, c.Tenant, c.Index)
				}
			}
		}
	}
}

// foreignTemplates refuses a template that is another tenant's VM (see
// OtherTenantsVM): the tenant's capmox token would hold VM.Clone on it,
// and a full clone copies that tenant's disks into this tenant's pool.
func (v *validator) foreignTemplates(t *Tenants) {
	for i, tn := range t.Tenants {
		for k, vm := range tn.Templates {
			for _, c := range t.OtherTenantsVM(tn.Name, vm, nil) {
				v.add(fmt.Sprintf("tenants[%d].templates[%d]", i, k), "template %d of tenant %q is tenant %q's VM (%s, tenants[%d]): its capmox token would hold VM.Clone there, and a full clone copies that tenant's disks into pool %q; list only templates that are no tenant's VM (keep them outside every tenant's vms and vmIDRange)",
					vm, tn.Name, c.Tenant, c.How, c.Index, tn.Pool)
			}
		}
	}
}

// pciMappings checks each tenant's pciMappings: a valid mapping id, once
// per tenant, a capmox token to grant it to, a version with mappings,
// and no mapping of two tenants.
func (v *validator) pciMappings(t *Tenants) {
	owner := map[string]int{}
	for i, tn := range t.Tenants {
		f := fmt.Sprintf("tenants[%d].pciMappings", i)
		if len(tn.PCIMappings) == 0 {
			continue
		}
		if t.Platform.Capmox == nil && tn.Tokens.Capmox == "" {
			v.add(f, "pciMappings need platform.capmox or tokens.capmox: Mapping.Use on a mapping is granted to the capmox token that clones the VMs")
		}
		if t.Platform.PVEVersion < pveacl.PVE8 {
			v.add(f, "PCI resource mappings and their Mapping.Use exist since Proxmox VE 8.0, not in Proxmox VE %d", int(t.Platform.PVEVersion))
		}
		seen := map[string]bool{}
		for j, id := range tn.PCIMappings {
			mf := fmt.Sprintf("%s[%d]", f, j)
			switch o, taken := owner[id]; {
			case !capmox.ValidMappingID(id):
				v.add(mf, "PCI mapping %q is not a Proxmox VE mapping ID: a letter, then one or more letters, digits, '-' or '_'", id)
			case seen[id]:
				v.add(mf, "PCI mapping %q is listed twice", id)
			case taken && o != i:
				v.add(mf, "PCI mapping %q of tenant %q is also tenant %q's (tenants[%d]): both tenants' VMs could take its devices, so a GPU one tenant used (its memory included) would pass to the other and either could hold all of them; give every tenant mappings of its own",
					id, tn.Name, t.Tenants[o].Name, o)
			default:
				owner[id] = i
			}
			seen[id] = true
		}
	}
}
