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

	"github.com/pxsubstrate/pxsubstrate/capmoxrender/credlint"
	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
)

func init() { register(newLintCmd) }

func newLintCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lint",
		Short: "Check configuration that the Proxmox substrate depends on",
	}
	cmd.AddCommand(newLintCredentialsCmd(app))
	return cmd
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
				p, err := prober(caFile)
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

func prober(caFile string) (credlint.Prober, error) {
	if caFile == "" {
		return credlint.Prober{}, nil
	}
	pem, err := readSmallFile(caFile)
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
