package lab_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
)

// TestReadTenantVPC: ReadTenant takes a tenant's VPC spec, as `pxsubstrate
// render vpc` reads it, beside its Kubernetes and KubernetesNodes (the
// control: testdata/vpc.yaml and vpc-web.yaml), and refuses, by file and
// document and before any lab is asked, each VPC that differs from the
// control in one thing: a misspelt key, another namespace, the VPC twice,
// a document with a kind and no apiVersion.
func TestReadTenantVPC(t *testing.T) {
	web := filepath.Join("testdata", "vpc-web.yaml")
	control, err := os.ReadFile(filepath.Join("testdata", "vpc.yaml"))
	must(t, err)
	tn, err := lab.ReadTenant(filepath.Join("testdata", "vpc.yaml"), web)
	must(t, err)
	if len(tn.VPCs) != 1 || tn.VPCs[0].Spec.Name != "net" || len(tn.VPCs[0].Spec.Subnets) != 1 ||
		tn.VPCs[0].Spec.Subnets[0].Proxmox == nil || tn.VPCs[0].Spec.Subnets[0].Proxmox.VMRange != "10.20.0.20-10.20.0.29" ||
		tn.VPCs[0].Where != filepath.Join("testdata", "vpc.yaml")+": document 1 (line 1)" {
		t.Fatalf("the control: %+v", tn.VPCs)
	}
	dir := t.TempDir()
	for _, tc := range []struct{ name, doc, want string }{
		{"a misspelt key", strings.Replace(string(control), "vmRange:", "vmrange:", 1),
			`vpc.yaml: document 1 (line 1): cannot parse VPC spec: not a VPC spec: unknown field "subnets[0].proxmox.vmrange"; did you mean "vmRange"?`},
		{"another namespace", strings.Replace(string(control), "namespace: tenant-vpc", "namespace: tenant-demo", 1),
			`vpc.yaml: document 1 (line 1): namespace is "tenant-demo", not tenant-vpc, the namespace of Kubernetes web: a tenant's VPC lives in the tenant's namespace`},
		{"the VPC twice", string(control) + "---\n" + string(control),
			`vpc.yaml: document 2 (line 11): name: VPC "net" is given twice (also at `},
		{"a kind without apiVersion", "kind: VirtualPrivateCloud\n" + string(control),
			`vpc.yaml: document 1 (line 1): apiVersion "" is not apps.cozystack.io/v1alpha1: the lab applies Kubernetes and KubernetesNodes, and VPC specs (no apiVersion or kind)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "vpc.yaml")
			must(t, os.WriteFile(path, []byte(tc.doc), 0o600))
			_, err := lab.ReadTenant(path, web)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
