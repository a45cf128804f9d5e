package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/pxsubstrate/pxsubstrate/admission"
	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

func init() { register(newAdmissionCmd) }

func newAdmissionCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admission",
		Short: "Which NICs, network attachments and switch pins tenant objects may carry",
	}
	cmd.AddCommand(newAdmissionReviewCmd(app), newAdmissionPoliciesCmd(app))
	return cmd
}

// loadAdmissionConfig reads the package values named by --config, or
// returns the package defaults.
func loadAdmissionConfig(app *App, path string) (admission.Config, error) {
	if path == "" {
		return admission.DefaultConfig(), nil
	}
	data, err := readInput(app, path)
	if err != nil {
		return admission.Config{}, err
	}
	cfg, err := admission.ParseConfig(data)
	if err != nil {
		return admission.Config{}, fmt.Errorf("cannot load %s: %w", path, oneDocument(err, "merge the package values into one document"))
	}
	return cfg, nil
}

func newAdmissionReviewCmd(app *App) *cobra.Command {
	var file, nsFile, config string
	cmd := &cobra.Command{
		Use:     "review -f REVIEW.json [--namespace-file NS.yaml] [--config VALUES.yaml]",
		Example: "  pxsubstrate admission review -f review.json --namespace-file namespace.yaml --config values.yaml",
		Short:   "Answer an admission.k8s.io/v1 AdmissionReview as the webhook would",
		Long: `Reads an AdmissionReview (JSON or YAML; -f - reads stdin), decides it with the
policies of the proxmox-network package and prints the AdmissionReview with
its response. The namespace the request lands in is read from
--namespace-file (a Namespace object, e.g. kubectl get ns NAME -o yaml);
without it the namespace has no annotations. --config takes the package
values (zones and admission); without it every policy is on with no zones.

Exits 0 when the request is admitted and 1 when it is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadAdmissionConfig(app, config)
			if err != nil {
				return err
			}
			v, err := admission.New(cfg)
			if err != nil {
				return err
			}
			review, err := readReview(app, file)
			if err != nil {
				return err
			}
			namespaces, err := readNamespaceFile(app, nsFile, review)
			if err != nil {
				return err
			}
			out, err := v.Answer(cmd.Context(), review, namespaces)
			if err != nil {
				return fmt.Errorf("cannot answer %s: %w", file, err)
			}
			if err := app.Print(out, func(w io.Writer) { reviewTable(w, out, app.Wide()) }); err != nil {
				return err
			}
			if !out.Response.Allowed {
				return &ExitError{Code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the AdmissionReview (JSON or YAML; - for stdin)")
	cmd.Flags().StringVar(&nsFile, "namespace-file", "", "the request's Namespace object (YAML or JSON)")
	cmd.Flags().StringVar(&config, "config", "", "proxmox-network package values: zones and admission")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func readReview(app *App, file string) (*admissionv1.AdmissionReview, error) {
	data, err := readInput(app, file)
	if err != nil {
		return nil, err
	}
	var review admissionv1.AdmissionReview
	if err := strictyaml.UnmarshalOpen(data, &review); err != nil {
		return nil, fmt.Errorf("cannot parse %s as an AdmissionReview: %w", file, oneDocument(err, "give each AdmissionReview a file of its own"))
	}
	return &review, nil
}

// readNamespaceFile returns the namespaces the review may look up: the one
// in the file, or the request's namespace without annotations.
func readNamespaceFile(app *App, file string, review *admissionv1.AdmissionReview) (admission.NamespaceGetter, error) {
	if review.Request == nil {
		return admission.Namespaces{}, nil
	}
	name := review.Request.Namespace
	if file == "" {
		// The note is printed when a policy reads the namespace, not for
		// requests no policy needs it for.
		return admission.NamespaceFunc(func(context.Context, string) (*admission.Namespace, error) {
			fmt.Fprintf(app.ErrOut, "Note: no --namespace-file: namespace %s is taken to have no labels or annotations, so it holds no Proxmox network; pass --namespace-file (kubectl get namespace %s -o yaml) to judge against the real one\n", escapeControl(termsafe.Quote(name)), escapeControl(termsafe.Cut(name)))
			return &admission.Namespace{Name: name}, nil
		}), nil
	}
	data, err := readInput(app, file)
	if err != nil {
		return nil, err
	}
	var ns corev1.Namespace
	if err := strictyaml.UnmarshalOpen(data, &ns); err != nil {
		return nil, fmt.Errorf("cannot parse %s as a Namespace: %w", file, oneDocument(err, "give the request's Namespace alone"))
	}
	if ns.Kind != "" && ns.Kind != "Namespace" {
		return nil, fmt.Errorf("%s holds a %s, not a Namespace", file, termsafe.Cut(ns.Kind))
	}
	if ns.Name != name {
		return nil, errorf("%s describes namespace %q, but the request is in %q", file, ns.Name, name)
	}
	return admission.Namespaces{name: admission.FromCore(&ns)}, nil
}

func reviewTable(w io.Writer, out *admissionv1.AdmissionReview, wide bool) {
	r := out.Response
	code, msg := int32(200), ""
	if r.Result != nil {
		code, msg = r.Result.Code, r.Result.Message
	}
	t := texttable.New(texttable.Main("UID"), texttable.Main("ALLOWED"), texttable.Main("POLICY"), texttable.Main("CODE"), texttable.Note("MESSAGE"))
	t.Add(string(r.UID), strconv.FormatBool(r.Allowed), r.AuditAnnotations["policy"], strconv.Itoa(int(code)), msg)
	t.Write(w, wide)
}

// kubeList is a v1 List, which kubectl applies item by item.
type kubeList struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []any  `json:"items"`
}

func newKubeList(items []any) kubeList {
	return kubeList{APIVersion: "v1", Kind: "List", Items: items}
}

// objectNames names each item as kubectl's -o name does: kind.group/name
// (kind/name for the core group), the kind in lower case.
func (l kubeList) objectNames() []string {
	names := make([]string, 0, len(l.Items))
	for _, item := range l.Items {
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if b, err := json.Marshal(item); err == nil {
			_ = json.Unmarshal(b, &o)
		}
		kind := strings.ToLower(o.Kind)
		if group, _, ok := strings.Cut(o.APIVersion, "/"); ok {
			kind += "." + group
		}
		names = append(names, kind+"/"+o.Metadata.Name)
	}
	return names
}

func newAdmissionPoliciesCmd(app *App) *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:     "policies [--config VALUES.yaml]",
		Example: "  pxsubstrate admission policies --config values.yaml | kubectl apply -f -",
		Short:   "Print the ValidatingAdmissionPolicies and bindings for clusters without the webhook",
		Long: `Prints the four ValidatingAdmissionPolicies of the proxmox-network package
and one binding each (failurePolicy Fail), built from the package values in
--config (zones and admission). The default output is a YAML stream for
kubectl apply -f -; -o yaml and -o json print a v1 List.`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			cfg, err := loadAdmissionConfig(app, config)
			if err != nil {
				return err
			}
			set, err := admission.Policies(cfg)
			if err != nil {
				return err
			}
			stream, err := set.YAML()
			if err != nil {
				return err
			}
			return app.Print(newKubeList(set.Objects()), func(w io.Writer) { _, _ = w.Write(stream) })
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "proxmox-network package values: zones and admission")
	return cmd
}
