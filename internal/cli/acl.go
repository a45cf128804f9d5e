package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

func init() { register(newACLCmd) }

func newACLCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Proxmox VE tenant isolation: effective permissions, plan, apply and audit",
		Long: `Users, tokens, roles, pools and ACL entries that isolate tenants on a Proxmox VE
cluster, with Proxmox VE's own permission semantics. See docs/pveacl.md.`,
	}
	cmd.AddCommand(newACLPermsCmd(app), newACLPlanCmd(app), newACLAuditCmd(app), newACLApplyCmd(app))
	return cmd
}

// aclVersion reads --pve-version: 0 when unset, else 8 or 9.
func aclVersion(v int) (pveacl.Version, error) {
	if v == 0 {
		return 0, nil
	}
	if err := pveacl.Version(v).Validate(); err != nil {
		return 0, fmt.Errorf("--pve-version: %w", err)
	}
	return pveacl.Version(v), nil
}

// readUserCfg parses a user.cfg file and reports PVE's warnings on errOut:
// the first usercfg.MaxWarnings, escaped, and a count of the rest. A file
// with text but no user.cfg line is refused by name.
func readUserCfg(app *App, name string, v pveacl.Version) (*pveacl.Config, error) {
	data, err := readInput(app, name)
	if err != nil {
		return nil, err
	}
	cfg, rep := usercfg.Parse(data, v)
	if err := rep.Err(name, data); err != nil {
		return nil, err
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(app.ErrOut, "Warning: %s: %s\n", escapeControl(name), escapeControl(w.String()))
	}
	if rep.More > 0 {
		fmt.Fprintf(app.ErrOut, "Warning: %s: %d more warnings not shown (%d in all)\n", escapeControl(name), rep.More, rep.Total())
	}
	return cfg, nil
}

// tenantsAdvice is what to do with a tenant file of several documents.
const tenantsAdvice = "put every tenant in the tenants list of one document"

// readTenants loads and validates the tenant specification of --tenants,
// the one reader of acl plan, acl audit and render nodes: an empty value
// names no file and is refused, whichever command it is given to.
func readTenants(app *App, name string) (*tenantplan.Tenants, error) {
	if name == "" {
		return nil, usageError{errors.New("--tenants is empty: name the tenant specification file (- for standard input), or leave the flag out where it is optional")}
	}
	data, err := readInput(app, name)
	if err != nil {
		return nil, err
	}
	spec, err := tenantplan.LoadTenants(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, oneDocument(err, tenantsAdvice))
	}
	return spec, nil
}

func newACLPermsCmd(app *App) *cobra.Command {
	var userCfg, authID, path string
	var version int
	cmd := &cobra.Command{
		Use: "perms --user-cfg F --authid ID [--path P] [--pve-version 8|9]",
		Example: "  pxsubstrate acl perms --user-cfg user.cfg --authid 'alpha@pve!ccm'\n" +
			"  pxsubstrate acl perms --user-cfg user.cfg --authid 'alpha@pve!ccm' --path /pool/alpha",
		Short: "Effective permissions of a user or token, as GET /access/permissions answers",
		Long: `Prints what Proxmox VE's GET /access/permissions?userid=ID&path=P returns for the
cluster whose /etc/pve/user.cfg is F: {"P":{"Priv":1,...}}, where 1 means the
privilege propagates. Without --path it prints the permissions on every path
PVE reports (the fixed top-level paths, every ACL path and every pool member).
-o yaml prints the same map as YAML.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := aclVersion(version)
			if err != nil {
				return err
			}
			if v == 0 {
				v = pveacl.DefaultVersion
			}
			if !pveacl.ValidAuthID(authID) {
				return errorf("--authid %q is neither a user id (user@realm) nor a token id (user@realm!token)", authID)
			}
			cfg, err := readUserCfg(app, userCfg, v)
			if err != nil {
				return err
			}
			ev := pveacl.NewEvaluator(cfg)
			body := map[string]map[string]int{}
			if cmd.Flags().Changed("path") && path != "" {
				body[path] = ev.Permissions(authID, path).Map()
			} else {
				for p, s := range ev.EffectivePermissions(authID) {
					body[p] = s.Map()
				}
			}
			return printBody(app, body)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&userCfg, "user-cfg", "", "the cluster's /etc/pve/user.cfg (- for standard input)")
	fs.StringVar(&authID, "authid", "", "user id (user@realm) or token id (user@realm!token)")
	fs.StringVar(&path, "path", "", "ACL path, e.g. /vms/100 (taken as given, as PVE does)")
	fs.IntVar(&version, "pve-version", 0, "Proxmox VE major version, 8 or 9 (default 9)")
	_ = cmd.MarkFlagRequired("user-cfg")
	_ = cmd.MarkFlagRequired("authid")
	return cmd
}

// printBody writes the permissions map as PVE's compact JSON (keys sorted),
// or as YAML with -o yaml.
func printBody(app *App, body map[string]map[string]int) error {
	if app.Format == "yaml" {
		return app.Print(body, nil)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return fmt.Errorf("cannot render the permissions: %w", err)
	}
	_, err := app.Out.Write(b.Bytes())
	return err
}

// planOutput is the JSON and YAML form of a plan.
type planOutput struct {
	PVEVersion pveacl.Version      `json:"pveVersion"`
	Changes    []tenantplan.Change `json:"changes"`
}

func newACLPlanCmd(app *App) *cobra.Command {
	var tenants, userCfg string
	var version int
	var adopt []string
	cmd := &cobra.Command{
		Use: "plan --tenants F [--pve-version 8|9] [--user-cfg F] [--confirm-removals PRINCIPAL,...] [-o pveum|table|json|yaml]",
		Example: "  pxsubstrate acl plan --tenants tenants.yaml\n" +
			"  pxsubstrate acl plan --tenants tenants.yaml --user-cfg user.cfg -o table",
		Short: "The ordered steps that isolate the tenants, as a pveum program or JSON",
		Long: `Plans the roles, pools, users, tokens, pool members and ACL entries the tenants
need, in an order the API accepts (roles before ACL entries, tokens before
their entries, pools before their members). Without --user-cfg the plan starts
from an empty cluster; with it, only the missing steps are listed.
The default output (-o pveum) is a shell program of pveum commands; -o table
lists the steps.
--pve-version overrides platform.pveVersion of the specification.`,
		Args: cobra.NoArgs,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if app.Format == "pveum" {
				return nil
			}
			if err := checkFormat(app.Format); err != nil {
				return usageError{errorf("unknown output format %q for acl plan: use -o pveum (the default), -o table, -o wide, -o json, -o yaml or -o jsonpath=TEMPLATE", app.Format)}
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error { return runACLPlan(app, tenants, userCfg, version, adopt) },
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&adopt, "confirm-removals", nil, confirmRemovalsUsage)
	fs.StringVar(&tenants, "tenants", "", "tenant specification YAML (see docs/pveacl.md; - for standard input)")
	fs.StringVar(&userCfg, "user-cfg", "", "plan against this /etc/pve/user.cfg instead of an empty cluster")
	fs.IntVar(&version, "pve-version", 0, "Proxmox VE major version, 8 or 9 (default: the specification's, else 9)")
	_ = cmd.MarkFlagRequired("tenants")
	return cmd
}

// confirmRemovalsUsage describes --confirm-removals of acl plan and apply.
const confirmRemovalsUsage = "existing users and tokens (USER@REALM, USER@REALM!TOKEN) the tenants may take over although they were not created for them: their ACL entries outside the tenant are removed"

func runACLPlan(app *App, tenants, userCfg string, version int, adopt []string) error {
	v, err := aclVersion(version)
	if err != nil {
		return err
	}
	spec, err := readTenants(app, tenants)
	if err != nil {
		return err
	}
	if v == 0 {
		v = spec.Platform.PVEVersion
	}
	observed := pveacl.NewConfig(v)
	if userCfg != "" {
		if observed, err = readUserCfg(app, userCfg, v); err != nil {
			return err
		}
	}
	changes, err := tenantplan.Plan(spec, observed, tenantplan.WithVersion(v), tenantplan.WithConfirmedRemovals(adopt...))
	if err != nil {
		return err
	}
	if app.Format == "" || app.Format == "pveum" {
		return tenantplan.RenderPveum(app.Out, changes, v)
	}
	if changes == nil {
		changes = []tenantplan.Change{}
	}
	return app.Print(planOutput{PVEVersion: v, Changes: changes}, func(w io.Writer) {
		fmt.Fprintf(w, "Proxmox VE %d: %d change(s)\n", v, len(changes))
		t := texttable.New(texttable.Main("STEP"), texttable.Main("OPERATION"), texttable.Main("TARGET"))
		for i, c := range changes {
			t.Add(strconv.Itoa(i+1), string(c.Op), changeTarget(c))
		}
		t.Write(w, app.Wide())
	})
}

type auditFlags struct {
	live                       liveFlags
	userCfg, tenants, clusters string
	version                    int
}

func newACLAuditCmd(app *App) *cobra.Command {
	var f auditFlags
	cmd := &cobra.Command{
		Use: "audit (--user-cfg F | --url https://HOST:8006 --token-id ID --token-secret-file F) --tenants F [-o json]",
		Example: "  pxsubstrate acl audit --tenants tenants.yaml --user-cfg user.cfg\n" +
			"  PROXMOX_URL=https://pve1:8006 PROXMOX_TOKEN='root@pam!audit' PROXMOX_SECRET=... \\\n    pxsubstrate acl audit --tenants tenants.yaml -o wide",
		Short: "Prove that no tenant reaches another tenant's objects; exit 1 on an error-level finding",
		Long: `Computes, with Proxmox VE's permission semantics, the privileges of every tenant
user and token on every object foreign to its tenant (other pools, their VMs
and storages, VMs and storages in no pool, shared storages) and reports any,
together with configurations one step from a leak. Each finding has a
severity, a stable code and what to do. The state comes from a user.cfg file
or from the live API (the token must see everything: PVEAuditor on /).
Exits 1 when an error-level finding exists.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runACLAudit(cmd, app, &f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.userCfg, "user-cfg", "", "the cluster's /etc/pve/user.cfg (- for standard input)")
	fs.StringVar(&f.tenants, "tenants", "", "tenant specification YAML (see docs/pveacl.md)")
	fs.IntVar(&f.version, "pve-version", 0, "Proxmox VE major version of the user.cfg, 8 or 9 (default: the specification's)")
	fs.StringVar(&f.clusters, "clusters", "", "the tenant clusters that exist (kubectl get clusters.cluster.x-k8s.io -A -o yaml): CSI volumes of any other cluster are LeftoverVolume findings")
	f.live.bind(fs)
	_ = cmd.MarkFlagRequired("tenants")
	return cmd
}

func runACLAudit(cmd *cobra.Command, app *App, f *auditFlags) error {
	if f.userCfg == "" && f.live.url == "" {
		f.live.url = os.Getenv(envURL)
	}
	if (f.userCfg == "") == (f.live.url == "") {
		return usageError{fmt.Errorf("give the state to audit once: --user-cfg FILE or --url https://HOST:8006 (or PROXMOX_URL) with --token-id")}
	}
	v, err := aclVersion(f.version)
	if err != nil {
		return err
	}
	spec, err := readTenants(app, f.tenants)
	if err != nil {
		return err
	}
	var cfg *pveacl.Config
	if f.userCfg != "" {
		if v == 0 {
			v = spec.Platform.PVEVersion
		}
		cfg, err = readUserCfg(app, f.userCfg, v)
	} else {
		cfg, err = f.live.readConfig(cmd.Context(), app)
	}
	if err != nil {
		return err
	}
	var opts audit.Options
	if f.clusters != "" {
		if opts.Clusters, err = readClusters(app, f.clusters); err != nil {
			return err
		}
	}
	rep, err := audit.RunWith(cfg, spec, opts)
	if err != nil {
		return err
	}
	if rep.Findings == nil {
		rep.Findings = []audit.Finding{}
	}
	if err := app.Print(rep, func(w io.Writer) { auditTable(w, rep, app.Wide()) }); err != nil {
		return err
	}
	if n := rep.Count(audit.SeverityError); n > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("the audit found %d error-level finding(s): the tenants are not isolated", n)}
	}
	return nil
}

// readClusters reads the Cluster API Clusters that exist and gives each
// the CSI controllerVmID render cluster writes for it.
func readClusters(app *App, file string) ([]audit.Cluster, error) {
	data, err := readInput(app, file)
	if err != nil {
		return nil, err
	}
	objs, err := capmoxrender.ReadObjectsBytes(data)
	if err != nil {
		return nil, usageError{fmt.Errorf("--clusters %s: %w", file, err)}
	}
	out := []audit.Cluster{}
	for _, u := range objs.Items() {
		gvk := u.GroupVersionKind()
		if gvk.Group != "cluster.x-k8s.io" || gvk.Kind != "Cluster" || u.GetNamespace() == "" {
			return nil, usageError{fmt.Errorf("--clusters %s: %s %s is not a namespaced cluster.x-k8s.io Cluster: give the output of kubectl get clusters.cluster.x-k8s.io -A -o yaml", file, termsafe.Cut(gvk.Kind), termsafe.Cut(u.GetNamespace()+"/"+u.GetName()))}
		}
		out = append(out, audit.Cluster{Name: u.GetNamespace() + "/" + u.GetName(), ControllerVMID: capmoxrender.ControllerVMID(u.GetNamespace(), u.GetName())})
	}
	return out, nil
}

func auditTable(w io.Writer, rep audit.Report, wide bool) {
	t := texttable.New(texttable.Main("SEVERITY"), texttable.Main("CODE"), texttable.Main("TENANT"), texttable.Main("SUBJECT"), texttable.Main("PATH"),
		texttable.Note("FINDING"), texttable.Note("WHAT TO DO"))
	for _, f := range rep.Findings {
		t.Add(string(f.Severity), string(f.Code), f.Tenant, f.Subject, f.Path, f.Message, f.Remedy)
	}
	t.Write(w, wide)
	fmt.Fprintf(w, "%d error(s), %d warning(s), %d info: checked %d tenant(s), %d user(s) and token(s), %d object(s)\n",
		rep.Count(audit.SeverityError), rep.Count(audit.SeverityWarning), rep.Count(audit.SeverityInfo),
		rep.Tenants, rep.Subjects, rep.Objects)
}
