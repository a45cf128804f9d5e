package audit

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// bigCluster is a converged cluster of n tenants with 10 VMs each, plus
// shared storages and VMs in no pool, as the plan builds it (8 ACL entries
// per tenant).
func bigCluster(n int) (*tenantplan.Tenants, *pveacl.Config, error) {
	spec := &tenantplan.Tenants{Platform: tenantplan.Platform{PVEVersion: pveacl.PVE9, SharedStorages: []string{"iso", "backup"},
		Capmox: &tenantplan.Credential{User: "capmox@pve", Token: "capi"}}}
	for i := 0; i < n; i++ {
		tn := tenantplan.Tenant{Name: fmt.Sprintf("t%04d", i), Storage: fmt.Sprintf("t%04d-disks", i)}
		for j := 0; j < 10; j++ {
			tn.VMs = append(tn.VMs, 1000+10*i+j)
		}
		spec.Tenants = append(spec.Tenants, tn)
	}
	spec = spec.Defaulted()
	changes, err := tenantplan.Plan(spec, pveacl.NewConfig(pveacl.PVE9))
	if err != nil {
		return nil, nil, err
	}
	cfg, err := tenantplan.Simulate(pveacl.NewConfig(pveacl.PVE9), changes)
	if err != nil {
		return nil, nil, err
	}
	cfg.Resources.VMs = []int{9000, 9001, 9002}
	cfg.Resources.Storages = []string{"iso", "backup", "local"}
	return spec, cfg, nil
}

var bigOnce = sync.OnceValues(func() (bigFixture, error) {
	spec, cfg, err := bigCluster(1000)
	return bigFixture{spec, cfg}, err
})

type bigFixture struct {
	spec *tenantplan.Tenants
	cfg  *pveacl.Config
}

// unindexed is the naive peer: it indexes the configuration again for
// every question instead of once per audit.
type unindexed struct{ cfg *pveacl.Config }

func (u unindexed) Permissions(authID, path string) pveacl.PrivSet {
	return pveacl.NewEvaluator(u.cfg).Permissions(authID, path)
}

// BenchmarkAudit audits 1,000 tenants (1,000 pools, 10,000 VMs, 8,000 ACL
// entries). The peer is the same audit indexing the configuration anew
// for each question; it runs on a sample of the tenants and is scaled to
// all of them, since the audit's work is per tenant.
func BenchmarkAudit(b *testing.B) {
	f, err := bigOnce()
	if err != nil {
		b.Fatal(err)
	}
	spec, cfg := f.spec, f.cfg
	if n := len(cfg.ACL); n < 8000 {
		b.Fatalf("only %d ACL entries", n)
	}
	b.ResetTimer()
	var rep Report
	for i := 0; i < b.N; i++ {
		if rep, err = Run(cfg, spec); err != nil {
			b.Fatal(err)
		}
	}
	fast := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.StopTimer()
	if rep.HasErrors() || rep.Tenants != 1000 {
		b.Fatalf("unexpected report: %d tenants, %d findings", rep.Tenants, len(rep.Findings))
	}
	const sample = 3
	start := time.Now()
	a := newAuditor(cfg, spec)
	a.perm = unindexed{cfg}
	a.sharedStorages()
	a.platformToken()
	global := time.Since(start)
	start = time.Now()
	for i := 0; i < sample; i++ {
		a.auditTenant(i)
	}
	perTenant := time.Since(start) / sample
	slow := float64((global + perTenant*time.Duration(len(spec.Tenants))).Nanoseconds())
	b.ReportMetric(fast/1e6, "ms/audit")
	b.ReportMetric(slow/1e6, "naive-ms/audit")
	b.ReportMetric(slow/fast, "naive/indexed")
}
