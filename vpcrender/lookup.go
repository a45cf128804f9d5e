package vpcrender

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Lookup is what a render reads from the cluster: the ProxmoxNetworkZones and
// the ProxmoxNetworks of the VPC's namespace.
type Lookup struct {
	Zones    []Zone
	Networks []Network
}

// LookupOf reads ProxmoxNetworkZone and ProxmoxNetwork objects as a
// cluster's list answers them (the Object of each unstructured item), as
// ParseLookup reads a List of them: what --from-cluster and the lab read
// from an API server.
func LookupOf(objects []map[string]any) (Lookup, error) {
	if objects == nil {
		objects = []map[string]any{} // an empty List, not "items: null"
	}
	doc, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": objects})
	if err != nil {
		return Lookup{}, err
	}
	return ParseLookup(doc)
}

// ParseLookup reads ProxmoxNetworkZone and ProxmoxNetwork objects from YAML
// or JSON: several documents, a List (as `kubectl get pxzone,pxnet -o yaml`
// prints), or both. Any other kind is refused, so a wrong file is noticed,
// and so is a syntax error in any document.
func ParseLookup(data []byte) (Lookup, error) {
	var l Lookup
	docs, err := strictyaml.Documents(data)
	if err != nil {
		return Lookup{}, fmt.Errorf("cannot parse the lookup: %w: %w", ErrParse, err)
	}
	for _, d := range docs {
		var obj map[string]any
		if err := strictyaml.UnmarshalJSON(d.JSON, &obj); err != nil {
			return Lookup{}, fmt.Errorf("cannot parse lookup document %d: %w: %w", d.Index, ErrParse, err)
		}
		if err := l.add(&unstructured.Unstructured{Object: obj}); err != nil {
			return Lookup{}, fmt.Errorf("cannot read lookup document %d: %w", d.Index, err)
		}
	}
	return l, nil
}

func (l *Lookup) add(u *unstructured.Unstructured) error {
	switch u.GetKind() {
	case "List":
		items, _, err := unstructured.NestedSlice(u.Object, "items")
		if err != nil {
			return fmt.Errorf("%w: items: %w", ErrParse, err)
		}
		for i, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return fmt.Errorf("%w: items[%d] is not an object", ErrParse, i)
			}
			if err := l.add(&unstructured.Unstructured{Object: m}); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
		}
		return nil
	case "ProxmoxNetworkZone":
		z, err := zoneFrom(u)
		if err != nil {
			return err
		}
		l.Zones = append(l.Zones, z)
		return nil
	case "ProxmoxNetwork":
		n, err := networkFrom(u)
		if err != nil {
			return err
		}
		l.Networks = append(l.Networks, n)
		return nil
	}
	return fmt.Errorf("%w: kind %s is neither ProxmoxNetworkZone nor ProxmoxNetwork", ErrParse, termsafe.Quote(u.GetKind()))
}

func zoneFrom(u *unstructured.Unstructured) (Zone, error) {
	z := Zone{Name: u.GetName()}
	if z.Name == "" {
		return Zone{}, fmt.Errorf("%w: a ProxmoxNetworkZone has no metadata.name", ErrParse)
	}
	var err error
	if z.ProviderNetwork, _, err = unstructured.NestedString(u.Object, "spec", "providerNetwork"); err != nil {
		return Zone{}, fmt.Errorf("%w: zone %s: %w", ErrParse, termsafe.Cut(z.Name), err)
	}
	mtu, err := intField(u.Object, "spec", "mtu")
	if err != nil {
		return Zone{}, fmt.Errorf("%w: zone %s: spec.mtu: %w", ErrParse, termsafe.Cut(z.Name), err)
	}
	if mtu < 0 || mtu > math.MaxUint32 {
		return Zone{}, fmt.Errorf("%w: zone %s: spec.mtu: %d is not an MTU", ErrParse, termsafe.Cut(z.Name), mtu)
	}
	z.MTU = uint32(mtu)
	ext, _, err1 := unstructured.NestedString(u.Object, "spec", "egress", "externalSubnet")
	gns, _, err2 := unstructured.NestedString(u.Object, "spec", "egress", "gatewayNamespace")
	if err := errors.Join(err1, err2); err != nil {
		return Zone{}, fmt.Errorf("%w: zone %s: spec.egress: %w", ErrParse, termsafe.Cut(z.Name), err)
	}
	if ext != "" || gns != "" {
		z.Egress = &ZoneEgress{ExternalSubnet: ext, GatewayNamespace: gns}
	}
	return z, nil
}

func networkFrom(u *unstructured.Unstructured) (Network, error) {
	n := Network{Name: u.GetName(), VPCID: u.GetLabels()[LabelVPCID], SubnetName: u.GetLabels()[LabelSubnetName]}
	if n.Name == "" {
		return Network{}, fmt.Errorf("%w: a ProxmoxNetwork has no metadata.name", ErrParse)
	}
	used, err := intField(u.Object, "status", "ipPool", "used")
	if err != nil {
		return Network{}, fmt.Errorf("%w: network %s: status.ipPool.used: %w", ErrParse, termsafe.Cut(n.Name), err)
	}
	n.UsedAddresses = int(used)
	return n, nil
}

// intField reads an integer that may be written as a number or a numeric
// string; a missing field is 0.
func intField(obj map[string]any, path ...string) (int64, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !found || v == nil {
		return 0, err
	}
	switch t := v.(type) {
	case int64:
		return t, nil
	case float64:
		if t != float64(int64(t)) {
			return 0, fmt.Errorf("%v is not a whole number", t)
		}
		return int64(t), nil
	case string:
		return strconv.ParseInt(t, 10, 32)
	}
	return 0, fmt.Errorf("%v is not a number", v)
}
