package verify

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

func TestCheckManagement(t *testing.T) {
	cases := map[string]struct {
		reason         string
		noIPAM         bool
		proxmoxCluster *ProxmoxCluster
		want           []string
	}{
		"Healthy": {
			reason:         "an IPAM provider and a plain ProxmoxCluster give no finding",
			proxmoxCluster: &ProxmoxCluster{Annotations: map[string]string{"other": "x"}},
		},
		"NoClusterYet": {
			reason: "a missing ProxmoxCluster is not a management problem",
		},
		"IPAMMissing": {
			reason:         "no InClusterIPPool kind means the IPAM provider is missing",
			noIPAM:         true,
			proxmoxCluster: &ProxmoxCluster{},
			want:           []string{CodeIPAMProviderMissing},
		},
		"ManagedBy": {
			reason:         "the managed-by annotation blocks the ownerRef",
			proxmoxCluster: &ProxmoxCluster{Annotations: map[string]string{capmox.AnnotationManagedBy: "cozystack"}},
			want:           []string{CodeManagedByAnnotation},
		},
		"Both": {
			reason:         "both problems are reported at once",
			noIPAM:         true,
			proxmoxCluster: &ProxmoxCluster{Annotations: map[string]string{capmox.AnnotationManagedBy: ""}},
			want:           []string{CodeIPAMProviderMissing, CodeManagedByAnnotation},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := snapshotOf()
			s.Management.IPAMServed, s.Management.ProxmoxCluster = !tc.noIPAM, tc.proxmoxCluster
			if diff := cmp.Diff(tc.want, codesOf(t, Judge(s).Findings)); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCheckEndpoint(t *testing.T) {
	const host = "kubernetes-a.tenant-a.svc"
	service := func(ip string) *Service { return &Service{Type: "LoadBalancer", LoadBalancerIP: ip} }
	machine := func(name, config string) Machine {
		m := machineOf(name)
		m.BootstrapKind, m.BootstrapName = "TalosConfig", config
		return m
	}
	entry := func(ip, alias string) HostEntry { return HostEntry{IP: ip, Aliases: []string{alias}} }
	deployment := func(replicas, available int64) *Deployment {
		return &Deployment{Replicas: replicas, Available: available}
	}
	pool := func(free int64) *IPPool { return &IPPool{Name: "kubernetes-a-v4-icip", Free: free, FreeKnown: true} }
	cases := map[string]struct {
		reason   string
		svc      *Service
		machines []Machine
		configs  map[string][]HostEntry
		ccm, csi *Deployment
		pool     *IPPool
		want     []string
	}{
		"Reachable": {reason: "an address and a matching entry give no finding",
			svc: service("192.0.2.10"), machines: []Machine{machine("m1", "tc1")}, configs: map[string][]HostEntry{"tc1": {entry("192.0.2.10", host)}}},
		"NoAddress": {reason: "a LoadBalancer without an address",
			svc: service(""), machines: []Machine{machine("m1", "tc1")}, configs: map[string][]HostEntry{"tc1": {entry("192.0.2.10", host)}},
			want: []string{CodeLoadBalancerNoAddress}},
		"NoEntry": {reason: "a worker created before the Job filled the template",
			svc: service("192.0.2.10"), machines: []Machine{machine("m1", "tc1")}, configs: map[string][]HostEntry{"tc1": nil},
			want: []string{CodeNoHostEntry}},
		"OtherName": {reason: "an entry for another name does not count",
			svc: service("192.0.2.10"), machines: []Machine{machine("m1", "tc1")}, configs: map[string][]HostEntry{"tc1": {entry("192.0.2.10", "kubernetes-b.tenant-a.svc")}},
			want: []string{CodeNoHostEntry}},
		"Stale": {reason: "an entry naming an old address",
			svc: service("192.0.2.11"), machines: []Machine{machine("m1", "tc1")}, configs: map[string][]HostEntry{"tc1": {entry("192.0.2.10", host)}},
			want: []string{CodeStaleHostEntry}},
		"Both": {reason: "no address and no entry",
			svc: service(""), machines: []Machine{machine("m1", "tc1"), machine("m2", "tc2")}, configs: map[string][]HostEntry{"tc1": nil, "tc2": {entry("192.0.2.10", host)}},
			want: []string{CodeLoadBalancerNoAddress, CodeNoHostEntry}},
		"ConfigMissing": {reason: "a Machine whose TalosConfig is not there (yet) is not judged",
			svc: service("192.0.2.10"), machines: []Machine{machine("m1", "tc1")}, configs: map[string][]HostEntry{}},
		"ControllersReady": {reason: "running CCM and CSI controllers and free addresses",
			ccm: deployment(1, 1), csi: deployment(1, 1), pool: pool(2)},
		"CCMNotReady": {reason: "a CCM without an available replica",
			ccm: deployment(1, 0), csi: deployment(1, 1), pool: pool(2),
			want: []string{CodeControllerNotReady}},
		"CSINotReady": {reason: "a CSI controller without an available replica",
			ccm: deployment(1, 1), csi: deployment(1, 0),
			want: []string{CodeControllerNotReady}},
		"ScaledDown": {reason: "a controller scaled to zero asks for nothing",
			ccm: deployment(0, 0)},
		"PoolExhausted": {reason: "no free address for the next Machine",
			pool: pool(0), want: []string{CodeIPPoolExhausted}},
		"PoolNotCounted": {reason: "a pool that reports no count is not judged",
			pool: &IPPool{Name: "kubernetes-a-v4-icip"}},
		"NoServiceYet": {reason: "before Kamaji made the Service there is nothing to judge",
			machines: []Machine{machine("m1", "tc1")}, configs: map[string][]HostEntry{"tc1": {entry("192.0.2.10", host)}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := snapshotOf()
			m := &s.Management
			m.Service, m.Machines, m.TalosConfigs, m.CCM, m.CSIController, m.IPPool = tc.svc, tc.machines, tc.configs, tc.ccm, tc.csi, tc.pool
			// The tenant's Nodes do not matter here.
			if diff := cmp.Diff(tc.want, codesOf(t, Judge(s).Findings)); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
