package cli

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
	"github.com/pxsubstrate/pxsubstrate/verify/credlint"
)

func init() { register(newLintCmd) }

func newLintCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lint",
		Short: "Check configuration that the Proxmox substrate depends on",
	}
	cmd.AddCommand(newLintCredentialsCmd(app), newLintImagesCmd(app))
	return cmd
}

func newLintImagesCmd(app *App) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use: "images -f MANIFESTS.yaml [-f ...]",
		Example: "  pxsubstrate lint images -f rendered.yaml\n" +
			"  kubectl -n tenant-alpha get deployments,jobs -o yaml | pxsubstrate lint images -f -",
		Short: "List the container images of rendered objects and report those not pinned by digest",
		Long: `Reads objects (a YAML stream or a List, such as render's output) and
prints one row per container and init container of every Pod, workload
with a Pod template and CronJob: its image and whether it is pinned by
digest (name@sha256:<64 hex> or name:tag@sha256:<64 hex>). A tag can be
moved to other content; an unpinned image's row names the command that
resolves its digest. Exits 1 when an image is not pinned or not an image
reference.`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			var found []capmoxrender.ImageFinding
			for _, f := range files {
				data, err := readInput(app, f)
				if err != nil {
					return err
				}
				objs, err := capmoxrender.ReadObjectsBytes(data)
				if err != nil {
					return fmt.Errorf("cannot read %s: %w", f, err)
				}
				found = append(found, capmoxrender.LintImages(objs.Items())...)
			}
			if len(found) == 0 {
				return &ExitError{Code: 1, Err: fmt.Errorf("no container in %s: nothing was checked", strings.Join(files, ", "))}
			}
			if err := app.Print(found, func(w io.Writer) { imagesTable(w, found, app.Wide()) }); err != nil {
				return err
			}
			unpinned, notRef := 0, 0
			for _, f := range found {
				switch {
				case f.Pinned:
				case f.NotReference:
					notRef++
				default:
					unpinned++
				}
			}
			switch {
			case notRef > 0:
				return &ExitError{Code: 1, Err: fmt.Errorf("%d of %d containers have no image reference and %d are not pinned by digest: see each row", notRef, len(found), unpinned)}
			case unpinned > 0:
				return &ExitError{Code: 1, Err: fmt.Errorf("%d of %d images are not pinned by digest: see each row", unpinned, len(found))}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "manifests, YAML or JSON (repeatable; - for stdin)")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func imagesTable(w io.Writer, fs []capmoxrender.ImageFinding, wide bool) {
	t := texttable.New(texttable.Main("OBJECT"), texttable.Main("CONTAINER"), texttable.Main("PINNED"), texttable.Note("IMAGE"), texttable.Note("PROBLEM"))
	for _, f := range fs {
		t.Add(f.Object, f.Container, map[bool]string{true: "yes", false: "no"}[f.Pinned], f.Image, f.Problem)
	}
	t.Write(w, wide)
}

func newLintCredentialsCmd(app *App) *cobra.Command {
	var (
		files  []string
		probe  bool
		caFile string
	)
	cmd := &cobra.Command{
		Use: "credentials -f SECRET.yaml [-f ...] [--probe [--ca-file CA.pem]]",
		Example: "  pxsubstrate lint credentials -f capmox-credentials.yaml\n" +
			"  kubectl -n cozy-cluster-api get secret capmox-credentials -o yaml | pxsubstrate lint credentials -f - --probe",
		Short: "Check capmox and Proxmox CCM/CSI credentials Secrets for the known pitfalls",
		Long: `Reads v1 Secrets and checks each by its keys: a capmox Secret
(PROXMOX_URL as a bare https://host:8006, PROXMOX_TOKEN as user@realm!tokenid,
PROXMOX_SECRET), a ProxmoxCluster credentialsRef Secret (url, token, secret)
or a CCM/CSI Secret (url ending in /api2/json, token_id, token_secret,
region). --probe asks GET /version with the token, verifying TLS against the
system roots or --ca-file. Secret values are never printed. Exits 1 when a
finding is an error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var secrets []credlint.Secret
			for _, f := range files {
				data, err := readInput(app, f)
				if err != nil {
					return err
				}
				s, err := credlint.ReadSecrets(bytes.NewReader(data))
				if err != nil {
					return fmt.Errorf("cannot read %s: %w", f, err)
				}
				secrets = append(secrets, s...)
			}
			if len(secrets) == 0 {
				return &ExitError{Code: 1, Err: fmt.Errorf("no Secret in %s: nothing was checked", strings.Join(files, ", "))}
			}
			findings := credlint.Lint(secrets)
			if probe {
				p, err := prober(app, caFile)
				if err != nil {
					return err
				}
				for _, s := range secrets {
					findings = append(findings, p.Probe(cmd.Context(), s))
				}
			}
			if err := app.Print(findings, func(w io.Writer) { findingsTable(w, findings, app.Wide()) }); err != nil {
				return err
			}
			if credlint.HasErrors(findings) {
				return &ExitError{Code: 1, Err: errors.New("the credentials have errors: fix each error row above")}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "Secret YAML or JSON (repeatable; - for stdin)")
	cmd.Flags().BoolVar(&probe, "probe", false, "also GET /version from the Proxmox API with each token")
	cmd.Flags().StringVar(&caFile, "ca-file", "", "PEM CA bundle that signs the Proxmox API certificate (added to the system roots)")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func prober(app *App, caFile string) (credlint.Prober, error) {
	if caFile == "" {
		return credlint.Prober{}, nil
	}
	pem, err := readInput(app, caFile)
	if err != nil {
		return credlint.Prober{}, fmt.Errorf("cannot read %s: %w", caFile, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return credlint.Prober{}, fmt.Errorf("cannot use %s: it holds no PEM certificate", caFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return credlint.Prober{Client: &http.Client{Transport: tr}}, nil
}

func findingsTable(w io.Writer, fs []credlint.Finding, wide bool) {
	t := texttable.New(texttable.Main("SECRET"), texttable.Main("KEY"), texttable.Main("SEVERITY"), texttable.Main("CODE"), texttable.Note("FINDING"), texttable.Note("FIX"))
	for _, f := range fs {
		t.Add(f.Secret, f.Key, string(f.Severity), string(f.Code), f.Message, f.Fix)
	}
	t.Write(w, wide)
}
