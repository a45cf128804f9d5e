package liveacl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pvepath"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Outcome is what applying one change did.
type Outcome string

// Outcomes.
const (
	// OutcomeApplied: the API made the change.
	OutcomeApplied Outcome = "applied"
	// OutcomePresent: the API answered that the object already exists (or
	// is already gone), so nothing changed.
	OutcomePresent Outcome = "present"
	// OutcomePlanned: a dry run (WithDryRun) would make the change.
	OutcomePlanned Outcome = "planned"
)

// Applied is one change and its outcome.
type Applied struct {
	Change  tenantplan.Change `json:"change"`
	Outcome Outcome           `json:"outcome"`
}

// StoredSecret says where the secret of a new token went (never the value).
type StoredSecret struct {
	TokenID  string `json:"tokenId"`
	Location string `json:"location"`
}

// Result is what a live apply did.
type Result struct {
	Version pveacl.Version    `json:"version"`
	Applied []Applied         `json:"applied"`
	Kept    []tenantplan.Kept `json:"kept,omitempty"`
	Secrets []StoredSecret    `json:"secrets,omitempty"`
}

// Progress reports a change about to be made (Outcome empty) or made.
type Progress struct {
	Index, Total int
	Change       tenantplan.Change
	Outcome      Outcome
}

// Option adjusts Apply and applyChanges.
type Option func(*settings)

type settings struct {
	pruning  bool
	adopt    []string
	prune    []string
	sink     SecretSink
	progress func(Progress)
	url      string
	region   string
	tenants  map[string]string // token id -> tenant
	dryRun   bool
}

// WithDryRun reads the live state and plans as Apply does, then returns
// the changes it would make as OutcomePlanned without sending any
// changing request or touching the secret sink. A plan that Apply would
// refuse (an unconfirmed removal, a foreign volume, new tokens without a
// sink) is refused the same way.
func WithDryRun() Option { return func(o *settings) { o.dryRun = true } }

// WithPrune also removes the owned users, tokens and pools of the named
// tenants, which the specification must no longer list (see
// tenantplan.Prune); owned objects of tenants not named stay.
func WithPrune(tenants ...string) Option {
	return func(o *settings) { o.pruning, o.prune = true, append(o.prune, tenants...) }
}

// WithConfirmedRemovals lets the plan take over the named existing users
// and tokens, removing their entries outside their tenant (see
// tenantplan.WithConfirmedRemovals).
func WithConfirmedRemovals(principals ...string) Option {
	return func(o *settings) { o.adopt = append(o.adopt, principals...) }
}

// WithSecretSink stores the secrets of created tokens. Without it an apply
// that would create a token fails before changing anything.
func WithSecretSink(s SecretSink) Option { return func(o *settings) { o.sink = s } }

// WithSecretContext sets the url and region written next to each secret.
func WithSecretContext(apiURL, region string) Option {
	return func(o *settings) { o.url, o.region = apiURL, region }
}

// WithProgress calls f before and after each change.
func WithProgress(f func(Progress)) Option { return func(o *settings) { o.progress = f } }

// Apply makes a cluster match the tenants: it reads the live state
// (Read), plans for the version the cluster runs (tenantplan.Plan, plus
// tenantplan.Prune with WithPrune) and performs only the missing changes.
// Applying again plans nothing and sends no changing request.
func Apply(ctx context.Context, c Client, desired *tenantplan.Tenants, opts ...Option) (Result, error) {
	observed, err := Read(ctx, c)
	if err != nil {
		return Result{}, fmt.Errorf("cannot apply: %w", err)
	}
	if err := onCluster(desired, observed); err != nil {
		return Result{}, fmt.Errorf("cannot apply: %w", err)
	}
	if err := ownStorages(desired, observed); err != nil {
		return Result{}, fmt.Errorf("cannot apply: %w", err)
	}
	o := options(opts)
	changes, err := tenantplan.Plan(desired, observed, tenantplan.WithVersion(observed.Version), tenantplan.WithConfirmedRemovals(o.adopt...))
	if err != nil {
		return Result{}, fmt.Errorf("cannot apply: %w", err)
	}
	var kept []tenantplan.Kept
	if o.pruning {
		var prune []tenantplan.Change
		if prune, kept, err = tenantplan.Prune(desired, observed, o.prune); err != nil {
			return Result{}, fmt.Errorf("cannot apply: %w", err)
		}
		changes = append(changes, prune...)
	}
	opts = append(opts, func(o *settings) { o.tenants = tokenTenants(desired) })
	res, err := applyChanges(ctx, c, changes, opts...)
	res.Version, res.Kept = observed.Version, kept
	return res, err
}

// ErrNotOnCluster reports that the specification names storages or guests the cluster
// does not have. PVE accepts them as pool members but never lists them,
// so an apply could not converge.
var ErrNotOnCluster = errors.New("the tenant specification names objects the cluster does not have")

// onCluster checks that every tenant storage and guest exists.
func onCluster(desired *tenantplan.Tenants, observed *pveacl.Config) error {
	var missing []string
	for _, t := range desired.Tenants {
		for _, s := range t.AllStorages() {
			if !slices.Contains(observed.Resources.Storages, s) {
				missing = append(missing, fmt.Sprintf("storage %s (tenant %s)", s, t.Name))
			}
		}
		for _, vm := range t.VMs {
			if !slices.Contains(observed.Resources.VMs, vm) {
				missing = append(missing, fmt.Sprintf("VM %d (tenant %s)", vm, t.Name))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s; create them first or remove them from the specification", ErrNotOnCluster, termsafe.Cut(strings.Join(missing, ", ")))
	}
	return nil
}

// ErrForeignVolumes reports that a tenant's dedicated storage holds volumes
// of guests outside the tenant: its CSI token would get Datastore.Allocate
// on them.
var ErrForeignVolumes = errors.New("a tenant's dedicated storage holds volumes of guests outside the tenant")

// ownStorages checks the tenants' storages against their contents.
func ownStorages(desired *tenantplan.Tenants, observed *pveacl.Config) error {
	foreign := tenantplan.ForeignVolumes(desired, observed)
	if len(foreign) == 0 {
		return nil
	}
	msgs := make([]string, len(foreign))
	for i, f := range foreign {
		msgs[i] = f.String()
	}
	return fmt.Errorf("%w: %s; give the tenant a storage only its guests use, or move those volumes away", ErrForeignVolumes, termsafe.Cut(strings.Join(msgs, "; ")))
}

// tokenTenants maps each tenant token id to its tenant's name.
func tokenTenants(desired *tenantplan.Tenants) map[string]string {
	spec := desired.Defaulted()
	out := map[string]string{}
	for _, t := range spec.Tenants {
		csi, ccm := t.TokenIDs()
		out[csi], out[ccm] = t.Name, t.Name
	}
	return out
}

func options(opts []Option) settings {
	var o settings
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// applyChanges performs changes in order through the API. Each is
// idempotent: a create whose object exists (PVE's "already exists"), a
// delete whose object is gone, members already in a pool, all count as
// present. Token secrets go to the sink as soon as a token is created; the
// sink is checked before the first change. It stops at the first error and
// returns what was done so far.
func applyChanges(ctx context.Context, c Client, changes []tenantplan.Change, opts ...Option) (Result, error) {
	o := options(opts)
	var res Result
	var created []string
	for _, ch := range changes {
		if ch.Op == tenantplan.OpCreateToken {
			created = append(created, pveacl.TokenID(ch.User, ch.Token))
		}
	}
	if len(created) > 0 {
		if o.sink == nil {
			return res, fmt.Errorf("cannot apply: %w: pass a secret sink (--secrets-dir or --secret-manifests)", ErrNoSecretSink)
		}
		if !o.dryRun { // Check may create the directory: a dry run writes nothing
			if err := o.sink.Check(created); err != nil {
				return res, fmt.Errorf("cannot apply: %w", err)
			}
		}
	}
	if o.dryRun {
		for _, ch := range changes {
			res.Applied = append(res.Applied, Applied{Change: ch, Outcome: OutcomePlanned})
		}
		return res, nil
	}
	a := &applier{c: c, o: o}
	for i, ch := range changes {
		a.report(Progress{Index: i + 1, Total: len(changes), Change: ch})
		out, err := a.do(ctx, ch, &res)
		if err != nil {
			return res, fmt.Errorf("cannot %s (change %d of %d): %w", ch.Op.Describe(), i+1, len(changes), err)
		}
		res.Applied = append(res.Applied, Applied{Change: ch, Outcome: out})
		a.report(Progress{Index: i + 1, Total: len(changes), Change: ch, Outcome: out})
	}
	return res, nil
}

type applier struct {
	c Client
	o settings
}

func (a *applier) report(p Progress) {
	if a.o.progress != nil {
		a.o.progress(p)
	}
}

func (a *applier) do(ctx context.Context, ch tenantplan.Change, res *Result) (Outcome, error) {
	switch ch.Op {
	case tenantplan.OpCreateRole, tenantplan.OpUpdateRole:
		return a.role(ctx, ch)
	case tenantplan.OpCreatePool:
		return present(a.c.Post(ctx, "/pools", map[string]any{"poolid": ch.Pool, "comment": ch.Comment}, nil), "already exists")
	case tenantplan.OpCreateUser:
		return present(a.c.Post(ctx, "/access/users", map[string]any{"userid": ch.User, "enable": 1, "comment": ch.Comment}, nil), "already exists")
	case tenantplan.OpEnableUser:
		return applied(a.c.Put(ctx, userPath(ch.User), map[string]any{"enable": 1}, nil))
	case tenantplan.OpCreateToken:
		return a.createToken(ctx, ch, res)
	case tenantplan.OpUpdateToken:
		return applied(a.c.Put(ctx, tokenPath(ch.User, ch.Token), map[string]any{"privsep": 1}, nil))
	case tenantplan.OpAddPoolMembers:
		return a.addMembers(ctx, ch)
	case tenantplan.OpSetACL, tenantplan.OpDeleteACL:
		return applied(a.c.Put(ctx, "/access/acl", aclBody(ch), nil))
	case tenantplan.OpDeleteToken:
		return present(a.c.Delete(ctx, tokenPath(ch.User, ch.Token), nil), "no such token", "no such user")
	case tenantplan.OpDeleteUser:
		return present(a.c.Delete(ctx, userPath(ch.User), nil), "no such user")
	case tenantplan.OpRemovePoolMembers:
		body := memberBody(ch)
		body["delete"] = 1
		return applied(a.c.Put(ctx, "/pools", body, nil))
	case tenantplan.OpDeletePool:
		return present(a.c.Delete(ctx, "/pools?"+url.Values{"poolid": {ch.Pool}}.Encode(), nil), "does not exist")
	}
	return "", fmt.Errorf("%w: unknown operation %q", tenantplan.ErrRefused, ch.Op)
}

func userPath(uid string) string { return pvepath.Path("access", "users", uid) }
func tokenPath(uid, name string) string {
	return pvepath.Path("access", "users", uid, "token", name)
}

func applied(err error) (Outcome, error) {
	if err != nil {
		return "", err
	}
	return OutcomeApplied, nil
}

// present maps an API error containing one of the texts to OutcomePresent.
func present(err error, texts ...string) (Outcome, error) {
	if err == nil {
		return OutcomeApplied, nil
	}
	if apiMessageHas(err, texts...) {
		return OutcomePresent, nil
	}
	return "", err
}

// apiMessageHas reports whether PVE's message (or a parameter error) of an
// API error contains one of the texts.
func apiMessageHas(err error, texts ...string) bool {
	var ae *proxmox.APIError
	if !errors.As(err, &ae) {
		return false
	}
	msgs := []string{ae.Message, ae.Status}
	for _, m := range ae.Errors {
		msgs = append(msgs, m)
	}
	for _, m := range msgs {
		for _, t := range texts {
			if strings.Contains(m, t) {
				return true
			}
		}
	}
	return false
}

// role creates the role or, when it exists, sets its privileges (PUT
// without append replaces the list).
func (a *applier) role(ctx context.Context, ch tenantplan.Change) (Outcome, error) {
	privs := strings.Join(ch.Privs, ",")
	if ch.Op == tenantplan.OpCreateRole {
		err := a.c.Post(ctx, "/access/roles", map[string]any{"roleid": ch.Role, "privs": privs}, nil)
		if err == nil || !apiMessageHas(err, "already exists") {
			return applied(err)
		}
	}
	return applied(a.c.Put(ctx, pvepath.Path("access", "roles", ch.Role), map[string]any{"privs": privs}, nil))
}

// createToken creates a privilege-separated token and stores its secret.
func (a *applier) createToken(ctx context.Context, ch tenantplan.Change, res *Result) (Outcome, error) {
	var created proxmox.NewAPIToken
	err := a.c.Post(ctx, tokenPath(ch.User, ch.Token), map[string]any{"privsep": 1, "comment": ch.Comment}, &created)
	if err != nil {
		return present(err, "Token already exists.")
	}
	id := pveacl.TokenID(ch.User, ch.Token)
	loc, err := a.o.sink.Store(TokenSecret{URL: a.o.url, TokenID: id, Secret: Secret(created.Value),
		Region: a.o.region, Tenant: a.o.tenants[id], Capmox: strings.HasSuffix(ch.Comment, tenantplan.CapmoxComment)})
	if err != nil {
		return "", fmt.Errorf("token %s was created but its secret could not be stored (delete the token and apply again): %w", id, err)
	}
	res.Secrets = append(res.Secrets, StoredSecret{TokenID: id, Location: loc})
	return OutcomeApplied, nil
}

// addMembers adds pool members; when PVE answers that one is already a
// member, it reads the pool and sends only those still missing.
func (a *applier) addMembers(ctx context.Context, ch tenantplan.Change) (Outcome, error) {
	err := a.c.Put(ctx, "/pools", memberBody(ch), nil)
	if err == nil || !apiMessageHas(err, "already a pool member") {
		return applied(err)
	}
	var pools proxmox.Pools
	if err := a.c.Get(ctx, "/pools?"+url.Values{"poolid": {ch.Pool}}.Encode(), &pools); err != nil {
		return "", err
	}
	have := map[string]bool{}
	for _, p := range pools {
		for _, m := range p.Members {
			have[m.Type+"/"+strconv.FormatUint(m.VMID, 10)+"/"+m.Storage] = true
		}
	}
	rest := ch
	rest.VMs, rest.Storages = nil, nil
	for _, vm := range ch.VMs {
		if !have["qemu/"+strconv.Itoa(vm)+"/"] && !have["lxc/"+strconv.Itoa(vm)+"/"] {
			rest.VMs = append(rest.VMs, vm)
		}
	}
	for _, s := range ch.Storages {
		if !have["storage/0/"+s] {
			rest.Storages = append(rest.Storages, s)
		}
	}
	if len(rest.VMs)+len(rest.Storages) == 0 {
		return OutcomePresent, nil
	}
	return applied(a.c.Put(ctx, "/pools", memberBody(rest), nil))
}

func memberBody(ch tenantplan.Change) map[string]any {
	b := map[string]any{"poolid": ch.Pool}
	if len(ch.VMs) > 0 {
		ids := make([]string, len(ch.VMs))
		for i, vm := range ch.VMs {
			ids[i] = strconv.Itoa(vm)
		}
		b["vms"] = strings.Join(ids, ",")
	}
	if len(ch.Storages) > 0 {
		b["storage"] = strings.Join(ch.Storages, ",")
	}
	if ch.AllowMove {
		b["allow-move"] = 1
	}
	return b
}

func aclBody(ch tenantplan.Change) map[string]any {
	b := map[string]any{"path": ch.Path, "roles": strings.Join(ch.Roles, ","), string(ch.Kind) + "s": ch.Subject}
	if ch.Op == tenantplan.OpDeleteACL {
		b["delete"] = 1
	} else {
		b["propagate"] = 0
		if ch.Propagate {
			b["propagate"] = 1
		}
	}
	return b
}
