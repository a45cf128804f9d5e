package capmoxrender_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// crdVersion validates objects of one served CRD version the way the API
// server does: prune (any unknown field is an error here, because the
// server would drop it silently), default, OpenAPI validation, list sets
// and maps, CEL rules.
type crdVersion struct {
	structural *structuralschema.Structural
	openapi    validation.SchemaValidator
	cel        *cel.Validator
}

func (v *crdVersion) validate(obj map[string]any) error {
	o := runtime.DeepCopyJSON(obj)
	unknown := pruning.PruneWithOptions(o, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	if len(unknown) > 0 {
		return fmt.Errorf("unknown fields the API server would drop: %v", unknown)
	}
	defaulting.Default(o, v.structural)
	errs := validation.ValidateCustomResource(nil, o, v.openapi)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, o)...)
	if v.cel != nil {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, o, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs.ToAggregate()
}

// renderedKinds are the kinds whose schemas are compiled: the others (such
// as the large ClusterClass) would only cost time.
var renderedKinds = map[string]bool{
	"ProxmoxCluster": true, "ProxmoxMachineTemplate": true, "ProxmoxMachine": true,
	"Cluster": true, "MachineDeployment": true, "MachineHealthCheck": true,
}

// schemaSet holds the CRD versions of one capmox generation and its CAPI core.
type schemaSet map[schema.GroupVersionKind]*crdVersion

func (s schemaSet) validate(u *unstructured.Unstructured) (bool, error) {
	v, ok := s[u.GroupVersionKind()]
	if !ok {
		return false, nil
	}
	return true, v.validate(u.Object)
}

var (
	schemasOnce sync.Once
	schemas     map[capmoxrender.Capmox]schemaSet
	schemasErr  error
)

// crdDirs lists the CRD folders of each generation: capmox v0.7.7 with CAPI
// v1.10.4 (what Cozystack ships), capmox v0.9.0 with CAPI v1.14.2.
func crdDirs() (map[capmoxrender.Capmox][]string, error) {
	v07, err := testenv.UpstreamCRDDir("capmox-v0.7.7")
	if err != nil {
		return nil, err
	}
	v09, err := testenv.UpstreamCRDDir("capmox-v0.9.0")
	if err != nil {
		return nil, err
	}
	ipam, err := testenv.ModuleCRDDir(testenv.CAPIIPAMModule)
	if err != nil {
		return nil, err
	}
	capi110, err := testenv.ModuleCRDDir(capiV110)
	if err != nil {
		return nil, err
	}
	capi114, err := testenv.ModuleCRDDir(testenv.CAPIModule)
	if err != nil {
		return nil, err
	}
	return map[capmoxrender.Capmox][]string{
		capmoxrender.CapmoxV07: {v07, capi110, ipam},
		capmoxrender.CapmoxV08: {v09, capi114, ipam},
	}, nil
}

// capiV110 is the Cluster API release Cozystack ships with capmox v0.7.7.
const capiV110 = "sigs.k8s.io/cluster-api@v1.10.4"

// fataler is what both *testing.T and *rapid.T offer.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func loadSchemas(t fataler) map[capmoxrender.Capmox]schemaSet {
	t.Helper()
	schemasOnce.Do(func() {
		dirs, err := crdDirs()
		if err != nil {
			schemasErr = err
			return
		}
		schemas = map[capmoxrender.Capmox]schemaSet{}
		for gen, ds := range dirs {
			set := schemaSet{}
			for _, d := range ds {
				if err := loadCRDDir(d, set); err != nil {
					schemasErr = err
					return
				}
			}
			schemas[gen] = set
		}
	})
	if schemasErr != nil {
		t.Fatalf("cannot load the upstream CRDs (third_party/crds and the CAPI modules): %v", schemasErr)
	}
	return schemas
}

func loadCRDDir(dir string, set schemaSet) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s: %v", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, doc := range strings.Split(string(b), "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			if err := loadCRD([]byte(doc), set); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
	}
	return nil
}

func loadCRD(doc []byte, set schemaSet) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(doc, &crd); err != nil {
		return err
	}
	if crd.Kind != "CustomResourceDefinition" || !renderedKinds[crd.Spec.Names.Kind] {
		return nil
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema == nil {
			continue
		}
		var in apiextensionsinternal.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &in, nil); err != nil {
			return err
		}
		s, err := structuralschema.NewStructural(&in)
		if err != nil {
			return err
		}
		sv, _, err := validation.NewSchemaValidator(&in)
		if err != nil {
			return err
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		set[gvk] = &crdVersion{structural: s, openapi: sv, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
	}
	return nil
}

// mustValidateSchema checks every rendered object that has an upstream CRD
// and fails when a capmox or CAPI object has none.
func mustValidateSchema(t fataler, gen capmoxrender.Capmox, objs []*unstructured.Unstructured) {
	t.Helper()
	set := loadSchemas(t)[gen]
	for _, o := range objs {
		checked, err := set.validate(o)
		if err != nil {
			t.Fatalf("capmox %s: %s %s is rejected by its CRD schema: %v", gen, o.GetKind(), o.GetName(), err)
		}
		g := o.GroupVersionKind().Group
		if !checked && (g == "infrastructure.cluster.x-k8s.io" || g == "cluster.x-k8s.io") {
			t.Fatalf("capmox %s: no CRD serves %s", gen, o.GroupVersionKind())
		}
	}
}
