package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// oneDocumentInput is a command that reads one YAML document from a file:
// the command line around the file, the document, and what the refusal of
// a second document advises.
type oneDocumentInput struct {
	args   func(file string) []string
	doc    string
	code   int // of the control
	advice string
}

// oneDocumentInputs are the commands that read one document, each with a
// document it takes.
func oneDocumentInputs(t *testing.T) map[string]oneDocumentInput {
	t.Helper()
	_, _, converged := aclFiles(t)
	e, sdnArgs := sdnEnv(t, sdnZoneYAML)
	if err := e.srv.SetInterface("pve", pvefake.Interface{Name: "vmbr0", Type: "bridge", Ports: "eno1", VLANAware: true,
		VIDs: "2-4094", MTU: 9000}); err != nil {
		t.Fatal(err)
	}
	dir := admissionFiles(t, map[string]string{"lookup.yaml": vpcLookup, "own.json": strings.Replace(podReview, "NETWORKS", "subnet-a", 1)})
	tenants := tenantsAdvice
	pool := mustRead(t, filepath.Join(scenarios, "scenarios", "nodes-raw", "input.yaml"))
	return map[string]oneDocumentInput{
		"RenderNodes": {args: func(f string) []string { return []string{"render", "nodes", "-f", f} }, doc: pool,
			advice: "render each KubernetesNodes pool from a file of its own"},
		"RenderNodesTenants": {args: func(f string) []string {
			return []string{"render", "nodes", "-f", filepath.Join(scenarios, "scenarios", "nodes-raw", "input.yaml"), "--tenants", f}
		}, doc: aclTenantsYAML, advice: tenants},
		"RenderCluster": {args: func(f string) []string { return []string{"render", "cluster", "-f", f} },
			doc: mustRead(t, filepath.Join(scenarios, "scenarios", "cluster-ipv4", "input.yaml")), advice: "render each Kubernetes from a file of its own"},
		"RenderVPC": {args: func(f string) []string {
			return []string{"render", "vpc", "-f", f, "--lookup", filepath.Join(dir, "lookup.yaml")}
		},
			doc: vpcSpec, advice: "render each VPC from a file of its own"},
		"SDNPlan": {args: func(f string) []string {
			return append([]string{"sdn", "plan", "--zone", f}, slices.Delete(slices.Clone(sdnArgs), 0, 2)...)
		}, doc: sdnZoneYAML, advice: "give each ProxmoxNetworkZone a file of its own"},
		"ACLAudit": {args: func(f string) []string { return []string{"acl", "audit", "--user-cfg", converged, "--tenants", f} },
			doc: aclTenantsYAML, advice: tenants},
		"ACLPlan":         {args: func(f string) []string { return []string{"acl", "plan", "--tenants", f} }, doc: aclTenantsYAML, advice: tenants},
		"AdmissionReview": {args: func(f string) []string { return []string{"admission", "review", "-f", f} }, doc: mustRead(t, filepath.Join(dir, "own.json")) + "\n", advice: "give each AdmissionReview a file of its own"},
		"AdmissionNamespace": {args: func(f string) []string {
			return []string{"admission", "review", "-f", filepath.Join(dir, "own.json"), "--namespace-file", f}
		}, doc: "apiVersion: v1\nkind: Namespace\nmetadata: {name: tenant-a}\n", advice: "give the request's Namespace alone"},
		"AdmissionConfig": {args: func(f string) []string { return []string{"admission", "policies", "--config", f} },
			doc: "zones: [{name: default, bridge: vmbr70, uplinkVLAN: 70}]\n", advice: "merge the package values into one document"},
		"SchematicID": {args: func(f string) []string { return []string{"talos", "schematic-id", f} },
			doc: "customization:\n  systemExtensions:\n    officialExtensions: [siderolabs/qemu-guest-agent]\n", advice: schematicAdvice},
		"Sim": {args: func(f string) []string { return []string{"sim", "-f", f} },
			doc: "name: demo\nsteps:\n- converge: true\n", advice: "write each scenario to a file of its own"},
	}
}

// TestOneDocumentInputs: every command that reads one YAML document from a
// file refuses a file holding two (exit 1), naming the file, the line the
// second begins on and what to do, and refuses a syntax error in a second
// document naming the file and the document; a leading "---\n---\n"
// changes nothing. Each runs next to its control, the single document.
func TestOneDocumentInputs(t *testing.T) {
	for name, c := range oneDocumentInputs(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(base, content string) string {
				p := filepath.Join(dir, base)
				if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
				return p
			}
			control := write("one.yaml", c.doc)
			want, wantErr, code := run(t, c.args(control)...)
			if code != c.code {
				t.Fatalf("control: exit %d, want %d\n%s", code, c.code, wantErr)
			}
			out, errOut, code := run(t, c.args(write("lead.yaml", "---\n---\n"+c.doc))...)
			if code != c.code || out != want {
				t.Errorf("the document after two --- lines: exit %d (stderr %q), output differs from the control: %t", code, errOut, out != want)
			}

			two := write("two.yaml", c.doc+"---\n"+c.doc)
			_, errOut, code = run(t, c.args(two)...)
			line := strings.Count(c.doc, "\n") + 1
			msg := fmt.Sprintf("holds 2 YAML documents (the second begins on line %d); this command reads one: %s", line, c.advice)
			if code != 1 || !strings.Contains(errOut, two) || !strings.Contains(errOut, msg) {
				t.Errorf("two documents: exit %d, stderr %q; want exit 1 naming %s and %q", code, errOut, two, msg)
			}
			bad := write("syntax.yaml", c.doc+"---\nkind: [\n")
			_, errOut, code = run(t, c.args(bad)...)
			msg = fmt.Sprintf("document 2: yaml: line %d", line+1)
			if code != 1 || !strings.Contains(errOut, bad) || !strings.Contains(errOut, msg) {
				t.Errorf("a syntax error in document 2: exit %d, stderr %q; want exit 1 naming %s and %q", code, errOut, bad, msg)
			}
		})
	}
}

// TestStreamInputs: a command that reads many objects from one file reads
// every document: the control, two documents, gives both objects; an
// object after a document end marker, or a syntax error in document 2, is
// refused (exit 1) naming the file, the document and its line.
func TestStreamInputs(t *testing.T) {
	secret := func(name string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata: {name: " + name + "}\nstringData: {url: \"https://pve:8006/api2/json\", token_id: \"ccm@pve!ccm\", token_secret: 01234567-89ab-cdef-0123-456789abcdef, region: eu}\n"
	}
	network := func(name string) string {
		return "apiVersion: proxmox.cozystack.io/v1alpha1\nkind: ProxmoxNetworkZone\nmetadata: {name: " + name + "}\nspec: {bridge: vmbr70, providerNetwork: pxtenant, vlanRanges: [\"101-199\"], mtu: 8996}\n"
	}
	cases := map[string]struct {
		args   func(file string) []string
		doc    func(name string) string
		object string // what the control prints of its second object
	}{
		"LintCredentials": {args: func(f string) []string { return []string{"lint", "credentials", "-f", f, "-o", "json"} }, doc: secret, object: `"secret": "second"`},
		"RenderVPCLookup": {args: func(f string) []string {
			dir := admissionFiles(t, map[string]string{"vpc.yaml": strings.Replace(vpcSpec, "proxmox: {}", "proxmox: {zone: second}", 1)})
			return []string{"render", "vpc", "-f", filepath.Join(dir, "vpc.yaml"), "--lookup", f}
		}, doc: network, object: "zone: second"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(base, content string) string {
				p := filepath.Join(dir, base)
				if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
				return p
			}
			out, errOut, code := run(t, c.args(write("two.yaml", "---\n"+c.doc("first")+"---\n---\n"+c.doc("second")))...)
			if code != 0 || !strings.Contains(out, c.object) {
				t.Fatalf("control, two documents: exit %d, stderr %q; want %q in\n%s", code, errOut, c.object, out)
			}
			line := strings.Count(c.doc("first"), "\n") + 2
			for base, in := range map[string]string{
				"after-end.yaml": c.doc("first") + "...\n" + c.doc("second"),
				"syntax.yaml":    c.doc("first") + "---\n" + c.doc("second") + " x: [\n",
			} {
				p := write(base, in)
				_, errOut, code := run(t, c.args(p)...)
				if code != 1 || !strings.Contains(errOut, p) || !strings.Contains(errOut, "document 2: yaml: line ") {
					t.Errorf("%s: exit %d, stderr %q; want exit 1 naming the file and document 2", base, code, errOut)
				}
				if base == "after-end.yaml" && !strings.Contains(errOut, fmt.Sprintf("document 2: yaml: line %d: did not find expected <document start>", line-1)) {
					t.Errorf("%s: stderr %q does not name the line of the document end marker, %d", base, errOut, line-1)
				}
			}
		})
	}
}
