package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	proxmox "github.com/luthermonson/go-proxmox"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// liveFlags connect to the Proxmox VE API with an API token: the one set of
// Proxmox connection flags of every command. Bound without a prefix (acl,
// sdn, template) they are --url, --token-id, --token-secret,
// --token-secret-file, --ca-file, --insecure-skip-tls-verify and
// --allow-plain-http, and the variables capmox and clusterctl read fill
// the absent ones. Bound with a prefix, where Proxmox is an addition to a
// command about something else (verify's --proxmox-url, ...), they are
// the same flags under that prefix, the variables are not read, and the
// additions they make (need) are asked for only when one of them is given.
type liveFlags struct {
	// prefix starts every flag's name; need names what the prefixed
	// flags add, in the error that names the missing ones.
	prefix, need                                       string
	url, tokenID, tokenSecret, tokenSecretFile, caFile string
	insecure, plainHTTP                                bool
}

// flag is the command-line spelling of the flag name.
func (f *liveFlags) flag(name string) string { return "--" + f.prefix + name }

func (f *liveFlags) bind(fs *pflag.FlagSet) {
	url := "Proxmox VE API address, https://HOST:8006 (/api2/json is appended; a URL that has it is taken as is)"
	tokenID := "API token id, USER@REALM!TOKEN"
	secretFile := "file whose first line is the API token secret"
	if f.prefix == "" {
		url += "; default $" + envURL
		tokenID += "; default $" + envToken
		secretFile += "; without it and --token-secret, $" + envSecret
	}
	fs.StringVar(&f.url, f.prefix+"url", "", url)
	fs.StringVar(&f.tokenID, f.prefix+"token-id", "", tokenID)
	fs.StringVar(&f.tokenSecret, f.prefix+"token-secret", "", "API token secret (prefer "+f.flag("token-secret-file")+": arguments show in process lists)")
	fs.StringVar(&f.tokenSecretFile, f.prefix+"token-secret-file", "", secretFile)
	fs.StringVar(&f.caFile, f.prefix+"ca-file", "", "PEM file of CA certificates to trust for the API, besides the system roots")
	fs.BoolVar(&f.insecure, f.prefix+"insecure-skip-tls-verify", false, "do not verify the API's TLS certificate (anyone in the path can take the token)")
	fs.BoolVar(&f.plainHTTP, f.prefix+"allow-plain-http", false, "let an http:// "+f.flag("url")+" carry the API token unencrypted (a test API on this host only)")
}

// wanted says whether any flag of the set was given.
func (f *liveFlags) wanted() bool {
	return f.url != "" || f.tokenID != "" || f.tokenSecret != "" || f.tokenSecretFile != "" || f.caFile != "" || f.insecure || f.plainHTTP
}

// client builds the Proxmox VE client of the flags through pveapi.New
// (TLS, redirects, timeout and response cap as every client of the module
// has them) and returns it with the API base URL. It warns on errOut when
// TLS verification is off or the URL is plain HTTP; it never prints the
// secret, and shows a token id redacted.
func (f *liveFlags) client(app *App) (*proxmox.Client, string, error) {
	if err := f.complete(); err != nil {
		return nil, "", err
	}
	cfg := pveapi.Config{URL: f.url, TokenID: f.tokenID, InsecureSkipVerify: f.insecure, AllowPlainHTTP: f.plainHTTP,
		Names: pveapi.Names{URL: f.flag("url"), TokenID: f.flag("token-id"), CA: f.flag("ca-file"), Insecure: f.flag("insecure-skip-tls-verify")}}
	var err error
	if f.caFile != "" {
		if cfg.CAPEM, err = readInput(app, f.caFile); err != nil {
			return nil, "", fmt.Errorf("cannot read %s: %w", f.flag("ca-file"), err)
		}
	}
	if err := cfg.Check(); errors.Is(err, pveapi.ErrPlainHTTP) {
		return nil, "", usageError{fmt.Errorf("%w (%s only for a test API on this host)", err, f.flag("allow-plain-http"))}
	} else if err != nil {
		return nil, "", err
	}
	if cfg.Secret, cfg.Names.Secret, err = f.secret(app); err != nil {
		return nil, "", err
	}
	c, err := pveapi.New(cfg)
	if err != nil {
		return nil, "", err
	}
	base, _ := cfg.Endpoint()
	if f.plainHTTP && strings.HasPrefix(base, "http://") {
		fmt.Fprintln(app.ErrOut, "Warning: "+f.flag("allow-plain-http")+": the API token goes to "+base+" unencrypted")
	}
	if f.insecure {
		fmt.Fprintln(app.ErrOut, "Warning: TLS verification is off ("+f.flag("insecure-skip-tls-verify")+"): whoever answers at "+base+" receives the API token; use "+f.flag("ca-file")+" instead")
	}
	return c, base, nil
}

// The environment variables capmox and clusterctl read, taken when the
// matching flags are absent.
const (
	envURL    = "PROXMOX_URL"
	envToken  = "PROXMOX_TOKEN"
	envSecret = "PROXMOX_SECRET"
)

// complete fills --url and --token-id from PROXMOX_URL and PROXMOX_TOKEN
// when they were not given (a flag always wins), and refuses a set that
// still lacks the address or the token id; a prefixed set reads no
// variable, and also lacks its secret's file then.
func (f *liveFlags) complete() error {
	if f.prefix != "" {
		var missing []string
		for _, m := range []struct{ name, v string }{{"url", f.url}, {"token-id", f.tokenID}, {"token-secret-file", f.tokenSecretFile + f.tokenSecret}} {
			if m.v == "" {
				missing = append(missing, f.flag(m.name))
			}
		}
		if len(missing) > 0 {
			return usageError{fmt.Errorf("%s need %s too", f.need, strings.Join(missing, " and "))}
		}
		return nil
	}
	if f.url == "" {
		f.url = os.Getenv(envURL)
	}
	if f.tokenID == "" {
		f.tokenID = os.Getenv(envToken)
	}
	switch {
	case f.url == "":
		return usageError{errors.New("the API address is missing: pass --url https://HOST:8006 or set " + envURL)}
	case f.tokenID == "":
		return usageError{errors.New("the API token id is missing: pass --token-id USER@REALM!TOKEN or set " + envToken)}
	}
	return nil
}

// secret returns the token secret and how messages name where it came
// from: the token secret file flag (its first line, readSecretFile), the
// token secret flag or, without a prefix, PROXMOX_SECRET.
func (f *liveFlags) secret(app *App) (secret, from string, err error) {
	file, flag := f.flag("token-secret-file"), f.flag("token-secret")
	switch {
	case f.tokenSecret != "" && f.tokenSecretFile != "":
		return "", "", errors.New("pass the token secret once: " + flag + " or " + file)
	case f.tokenSecretFile != "":
		s, err := readSecretFile(app, file, f.tokenSecretFile)
		return s, file + " " + f.tokenSecretFile, err
	case f.tokenSecret != "":
		return f.tokenSecret, flag, nil
	case f.prefix == "" && os.Getenv(envSecret) != "":
		return strings.TrimSpace(os.Getenv(envSecret)), envSecret, nil
	}
	return "", "", errors.New("the token secret is missing: pass " + file + " (or " + flag + "), or set " + envSecret)
}

// readSecretFile reads a token secret file named by flag: the secret is
// its first line, without the spaces, tab or CR around it, as the flags'
// help says. Every secret file the commands read is read here. An empty
// first line is refused even when a later line holds text, saying so: the
// secret must be on the first line, and guessing which later line is the
// secret could send a comment as one.
func readSecretFile(app *App, flag, name string) (string, error) {
	b, err := readInput(app, name)
	if err != nil {
		return "", fmt.Errorf("cannot read the token secret: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	if s := strings.TrimSpace(lines[0]); s != "" {
		return s, nil
	}
	for i, l := range lines[1:] {
		if strings.TrimSpace(l) != "" {
			return "", fmt.Errorf("cannot read the token secret: the first line of %s %s is empty, and line %d holds text: the secret must be on the first line; remove the lines before it", flag, name, i+2)
		}
	}
	return "", fmt.Errorf("cannot read the token secret: %s %s is empty: write the token secret on its first line", flag, name)
}

// readConfig reads the live access-control state (acl audit --url).
func (f *liveFlags) readConfig(ctx context.Context, app *App) (*pveacl.Config, error) {
	c, _, err := f.client(app)
	if err != nil {
		return nil, err
	}
	cfg, err := liveacl.Read(ctx, c)
	return cfg, tlsHint(err)
}

// tlsHint adds what to do when the API's certificate is not trusted.
func tlsHint(err error) error {
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return fmt.Errorf("%w (pass the cluster's CA with --ca-file: /etc/pve/pve-root-ca.pem on any node)", err)
	}
	return err
}

type applyFlags struct {
	live                                                   liveFlags
	tenants, secretsDir, secretManifests, secretNS, region string
	prune, adopt                                           []string
	pruneSet, dryRun                                       bool
}

func newACLApplyCmd(app *App) *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use: "apply --tenants F --url https://HOST:8006 --token-id ID (--token-secret-file F | --token-secret S) [--secrets-dir D | --secret-manifests F] [--prune TENANT,...] [--confirm-removals PRINCIPAL,...]",
		Example: "  pxsubstrate acl apply --tenants tenants.yaml --dry-run --url https://pve1:8006 \\\n    --token-id 'root@pam!admin' --token-secret-file admin.secret\n" +
			"  pxsubstrate acl apply --tenants tenants.yaml --url https://pve1:8006 \\\n    --token-id 'root@pam!admin' --token-secret-file admin.secret --secrets-dir ./secrets",
		Short: "Apply the tenants' users, tokens, roles, pools and ACLs through the API, idempotently",
		Long: `Reads the live access-control state, plans what the tenants need for the
Proxmox VE version the cluster runs, and performs only the missing changes; a
second run changes nothing. Objects it does not own are never touched. An
empty, blank or unparsable --tenants file is an error, never "no tenants".
--prune names the tenants whose objects go, for example --prune beta,gamma:
the users, tokens and empty pools it created for them (their comment reads
"pxsubstrate tenant beta...") are removed; they must be gone from --tenants.
Owned objects of tenants not named stay, and the output lists them. A user
or token that exists without that comment and holds ACL entries outside its
tenant is taken over only when --confirm-removals names it; otherwise apply
stops before any change and lists the entries it would remove.

--url is the bare node address, https://HOST:8006; /api2/json is appended. TLS
is verified against the system roots and --ca-file.

New token secrets are shown by Proxmox VE once. They go to --secrets-dir (one
0600 JSON file per token) or --secret-manifests (Kubernetes Secret manifests in
one 0600 YAML file), with the keys url, token_id, token_secret and region; they
are never printed.

--dry-run reads the cluster and plans exactly as apply does, then prints the
changes with outcome "planned" and stops: no request that changes the
cluster is sent and no secret file is written. What apply would refuse, a
dry run refuses too. The token needs administrator rights (root@pam's token, or
one with Administrator on /).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.pruneSet = cmd.Flags().Changed("prune")
			return runACLApply(cmd.Context(), app, &f)
		},
	}
	fs := cmd.Flags()
	f.live.bind(fs)
	fs.StringVar(&f.tenants, "tenants", "", "tenant specification YAML (see docs/pveacl.md)")
	fs.StringVar(&f.secretsDir, "secrets-dir", "", "directory for new token secrets, one <name>.json per token (0600)")
	fs.StringVar(&f.secretManifests, "secret-manifests", "", "YAML file collecting new token secrets as Kubernetes Secret manifests (0600)")
	fs.StringVar(&f.secretNS, "secret-namespace", "", "namespace written into the Secret manifests")
	fs.StringVar(&f.region, "region", "", "region written next to each secret (default: the cluster's name, or the node's on a standalone node)")
	fs.StringSliceVar(&f.adopt, "confirm-removals", nil, confirmRemovalsUsage)
	fs.BoolVar(&f.dryRun, "dry-run", false, "read the cluster and print the changes apply would make, with outcome planned; nothing is changed or written")
	fs.StringSliceVar(&f.prune, "prune", nil, "also remove the owned users, tokens and empty pools of these tenants, gone from --tenants (comma-separated names)")
	for _, name := range []string{"tenants"} {
		_ = cmd.MarkFlagRequired(name)
	}
	cmd.MarkFlagsMutuallyExclusive("secrets-dir", "secret-manifests")
	return cmd
}

func runACLApply(ctx context.Context, app *App, f *applyFlags) error {
	data, err := readInput(app, f.tenants)
	if err != nil {
		return err
	}
	spec, err := tenantplan.LoadTenants(data)
	if err != nil {
		return fmt.Errorf("%s: %w", f.tenants, oneDocument(err, tenantsAdvice))
	}
	c, base, err := f.live.client(app)
	if err != nil {
		return err
	}
	opts := []liveacl.Option{liveacl.WithProgress(progress(app)), liveacl.WithConfirmedRemovals(f.adopt...)}
	if f.dryRun {
		opts = append(opts, liveacl.WithDryRun())
	}
	if f.pruneSet {
		if len(f.prune) == 0 {
			return errors.New("--prune names the tenants whose objects go (--prune beta,gamma); none given")
		}
		opts = append(opts, liveacl.WithPrune(f.prune...))
	}
	if sink := f.sink(); sink != nil {
		region := f.region
		if region == "" {
			if region, err = liveacl.ClusterRegion(ctx, c); err != nil {
				return tlsHint(err)
			}
		}
		opts = append(opts, liveacl.WithSecretSink(sink), liveacl.WithSecretContext(base, region))
	}
	res, err := liveacl.Apply(ctx, c, spec, opts...)
	err = tlsHint(err)
	if perr := app.Print(res, func(w io.Writer) { applyTable(w, res, f.dryRun, app.Wide()) }); perr != nil && err == nil {
		err = perr
	}
	return err
}

func (f *applyFlags) sink() liveacl.SecretSink {
	switch {
	case f.secretsDir != "":
		return liveacl.DirSink{Dir: f.secretsDir}
	case f.secretManifests != "":
		return liveacl.ManifestSink{Path: f.secretManifests, Namespace: f.secretNS}
	}
	return nil
}

// progress reports each change on standard error as it is made, one line
// each, whether or not standard error is a terminal (a CI log shows how
// far an apply got); the result goes to standard output at the end.
func progress(app *App) func(liveacl.Progress) {
	return func(p liveacl.Progress) {
		if p.Outcome != "" && p.Outcome != liveacl.OutcomePlanned {
			fmt.Fprintf(app.ErrOut, "[%d/%d] %s %s: %s\n", p.Index, p.Total, p.Change.Op, escapeControl(changeTarget(p.Change)), p.Outcome)
		}
	}
}

func applyTable(w io.Writer, res liveacl.Result, dryRun, wide bool) {
	if dryRun {
		fmt.Fprintf(w, "Proxmox VE %d: %d change(s) planned; dry run, nothing was changed\n", int(res.Version), len(res.Applied))
	} else {
		fmt.Fprintf(w, "Proxmox VE %d: %d change(s)\n", int(res.Version), len(res.Applied))
	}
	t := texttable.New(texttable.Main("STEP"), texttable.Main("OPERATION"), texttable.Main("TARGET"), texttable.Main("OUTCOME"))
	for i, a := range res.Applied {
		t.Add(strconv.Itoa(i+1), string(a.Change.Op), changeTarget(a.Change), string(a.Outcome))
	}
	t.Write(w, wide)
	for _, k := range res.Kept {
		fmt.Fprintf(w, "kept %s: %s\n", k.Object, k.Reason)
	}
	for _, s := range res.Secrets {
		fmt.Fprintf(w, "secret of %s stored in %s\n", s.TokenID, s.Location)
	}
}

// changeTarget names what a change acts on.
func changeTarget(c tenantplan.Change) string {
	switch c.Op {
	case tenantplan.OpCreateRole, tenantplan.OpUpdateRole:
		return c.Role + " [" + strings.Join(c.Privs, ",") + "]"
	case tenantplan.OpCreatePool, tenantplan.OpDeletePool:
		return c.Pool
	case tenantplan.OpAddPoolMembers, tenantplan.OpRemovePoolMembers:
		members := append([]string{}, c.Storages...)
		for _, vm := range c.VMs {
			members = append(members, strconv.Itoa(vm))
		}
		return c.Pool + " " + strings.Join(members, ",")
	case tenantplan.OpCreateToken, tenantplan.OpUpdateToken, tenantplan.OpDeleteToken:
		return pveacl.TokenID(c.User, c.Token)
	case tenantplan.OpSetACL, tenantplan.OpDeleteACL:
		prop := ""
		if c.Op == tenantplan.OpSetACL {
			prop = fmt.Sprintf(" propagate=%d", map[bool]int{false: 0, true: 1}[c.Propagate])
		}
		return fmt.Sprintf("%s %s %s %s%s", c.Path, c.Kind, c.Subject, strings.Join(c.Roles, ","), prop)
	}
	return c.User
}
