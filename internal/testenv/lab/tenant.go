package lab

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/vpcrender"
)

// ReadTenant reads the Kubernetes and KubernetesNodes a user writes, from
// any number of files of any number of documents: exactly one Kubernetes,
// its pools, and any number of the tenant's VPCs as `pxsubstrate render
// vpc` reads them (a document without apiVersion and kind, read by
// vpcrender.ParseSpec). Anything else is refused by file and document
// before the lab creates anything.
func ReadTenant(paths ...string) (Tenant, error) {
	var t Tenant
	t.lookup = &capmoxrender.Objects{}
	clusters := 0
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return Tenant{}, err
		}
		docs, err := strictyaml.Documents(data)
		if err != nil {
			return Tenant{}, fmt.Errorf("%s: %w", path, err)
		}
		for _, d := range docs {
			where := fmt.Sprintf("%s: document %d (line %d)", path, d.Index, d.Line)
			if err := t.add(where, d.JSON, &clusters); err != nil {
				return Tenant{}, err
			}
		}
	}
	if clusters != 1 {
		return Tenant{}, fmt.Errorf("%s: %d Kubernetes objects; apply exactly one with its KubernetesNodes", paths, clusters)
	}
	return t, t.check()
}

func (t *Tenant) add(where string, doc []byte, clusters *int) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(doc, &head); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if head.APIVersion == "" && head.Kind == "" {
		spec, err := vpcrender.ParseSpec(doc)
		if err != nil {
			return fmt.Errorf("%s: %w (a document without apiVersion and kind is a VPC spec, as pxsubstrate render vpc reads it)", where, err)
		}
		t.VPCs = append(t.VPCs, VPC{Where: where, Spec: spec})
		return nil
	}
	if head.APIVersion != "apps.cozystack.io/v1alpha1" {
		return fmt.Errorf("%s: apiVersion %q is not apps.cozystack.io/v1alpha1: the lab applies Kubernetes and KubernetesNodes, and VPC specs (no apiVersion or kind)", where, head.APIVersion)
	}
	switch head.Kind {
	case "Kubernetes":
		k, err := capmoxrender.ParseKubernetes(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(doc); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		t.Cluster = k
		t.lookup.Add(u)
		*clusters++
	case "KubernetesNodes":
		n, err := capmoxrender.ParseKubernetesNodes(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		t.Pools = append(t.Pools, n)
	default:
		return fmt.Errorf("%s: kind %q is neither Kubernetes nor KubernetesNodes", where, head.Kind)
	}
	return nil
}
