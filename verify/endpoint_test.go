package verify

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestCheckEndpoint(t *testing.T) {
	const ns, cl = "tenant-a", "kubernetes-a"
	host := cl + "." + ns + ".svc"
	gvks := []schema.GroupVersionKind{
		{Version: "v1", Kind: "Service"},
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"},
		{Group: "bootstrap.cluster.x-k8s.io", Version: "v1alpha3", Kind: "TalosConfig"},
		{Group: "ipam.cluster.x-k8s.io", Version: "v1alpha2", Kind: "InClusterIPPool"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
	}
	s := runtime.NewScheme()
	for _, k := range gvks {
		s.AddKnownTypeWithName(k, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(k.GroupVersion().WithKind(k.Kind+"List"), &unstructured.UnstructuredList{})
	}
	obj := func(gvk schema.GroupVersionKind, name string, fields map[string]any) client.Object {
		u := &unstructured.Unstructured{Object: fields}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	service := func(ip string) client.Object {
		f := map[string]any{"spec": map[string]any{"type": "LoadBalancer"}}
		if ip != "" {
			f["status"] = map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": ip}}}}
		}
		return obj(gvks[0], cl, f)
	}
	machine := func(name, config string) client.Object {
		u := obj(gvks[1], name, map[string]any{"spec": map[string]any{"bootstrap": map[string]any{"configRef": map[string]any{"kind": "TalosConfig", "name": config}}}})
		u.SetLabels(map[string]string{LabelClusterName: cl})
		return u
	}
	talosConfig := func(name string, entries ...any) client.Object {
		return obj(gvks[2], name, map[string]any{"spec": map[string]any{"configPatches": []any{
			map[string]any{"op": "add", "path": "/machine/network/nameservers", "value": []any{"1.1.1.1"}},
			map[string]any{"op": "add", "path": hostEntriesPath, "value": entries},
		}}})
	}
	deployment := func(name string, replicas, available int64) client.Object {
		return obj(gvks[4], name, map[string]any{"spec": map[string]any{"replicas": replicas}, "status": map[string]any{"availableReplicas": available}})
	}
	pool := func(free int64) client.Object {
		return obj(gvks[3], cl+"-v4-icip", map[string]any{"status": map[string]any{"ipAddresses": map[string]any{"total": int64(6), "used": 6 - free, "free": free}}})
	}
	entry := func(ip, alias string) any { return map[string]any{"ip": ip, "aliases": []any{alias}} }
	cases := map[string]struct {
		reason string
		objs   []client.Object
		want   []string
	}{
		"Reachable": {reason: "an address and a matching entry give no finding",
			objs: []client.Object{service("192.0.2.10"), machine("m1", "tc1"), talosConfig("tc1", entry("192.0.2.10", host))}},
		"NoAddress": {reason: "a LoadBalancer without an address",
			objs: []client.Object{service(""), machine("m1", "tc1"), talosConfig("tc1", entry("192.0.2.10", host))},
			want: []string{CodeLoadBalancerNoAddress}},
		"NoEntry": {reason: "a worker created before the Job filled the template",
			objs: []client.Object{service("192.0.2.10"), machine("m1", "tc1"), talosConfig("tc1")},
			want: []string{CodeNoHostEntry}},
		"OtherName": {reason: "an entry for another name does not count",
			objs: []client.Object{service("192.0.2.10"), machine("m1", "tc1"), talosConfig("tc1", entry("192.0.2.10", "kubernetes-b."+ns+".svc"))},
			want: []string{CodeNoHostEntry}},
		"Stale": {reason: "an entry naming an old address",
			objs: []client.Object{service("192.0.2.11"), machine("m1", "tc1"), talosConfig("tc1", entry("192.0.2.10", host))},
			want: []string{CodeStaleHostEntry}},
		"Both": {reason: "no address and no entry",
			objs: []client.Object{service(""), machine("m1", "tc1"), talosConfig("tc1"), machine("m2", "tc2"), talosConfig("tc2", entry("192.0.2.10", host))},
			want: []string{CodeLoadBalancerNoAddress, CodeNoHostEntry}},
		"ControllersReady": {reason: "running CCM and CSI controllers and free addresses",
			objs: []client.Object{deployment(cl+"-pccm", 1, 1), deployment(cl+"-pcsi-controller", 1, 1), pool(2)}},
		"CCMNotReady": {reason: "a CCM without an available replica",
			objs: []client.Object{deployment(cl+"-pccm", 1, 0), deployment(cl+"-pcsi-controller", 1, 1), pool(2)},
			want: []string{CodeControllerNotReady}},
		"CSINotReady": {reason: "a CSI controller without an available replica",
			objs: []client.Object{deployment(cl+"-pccm", 1, 1), deployment(cl+"-pcsi-controller", 1, 0)},
			want: []string{CodeControllerNotReady}},
		"PoolExhausted": {reason: "no free address for the next Machine",
			objs: []client.Object{pool(0)},
			want: []string{CodeIPPoolExhausted}},
		"NoServiceYet": {reason: "before Kamaji made the Service there is nothing to judge",
			objs: []client.Object{machine("m1", "tc1"), talosConfig("tc1", entry("192.0.2.10", host))}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkManagementCodes(t, s, tc.objs, tc.reason, tc.want)
		})
	}
}
