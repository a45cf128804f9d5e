package pveacl

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// bigCluster is a converged cluster of n tenants with 10 VMs each, plus
// shared storages and VMs in no pool, as the plan builds it (8 ACL entries
// per tenant).
func bigCluster(n int) (*Tenants, *Config, error) {
	spec := &Tenants{Platform: Platform{PVEVersion: PVE9, SharedStorages: []string{"iso", "backup"},
		Capmox: &Credential{User: "capmox@pve", Token: "capi"}}}
	for i := 0; i < n; i++ {
		tn := Tenant{Name: fmt.Sprintf("t%04d", i), Storage: fmt.Sprintf("t%04d-disks", i)}
		for j := 0; j < 10; j++ {
			tn.VMs = append(tn.VMs, 1000+10*i+j)
		}
		spec.Tenants = append(spec.Tenants, tn)
	}
	spec.Default()
	changes, err := Plan(spec, NewConfig(PVE9))
	if err != nil {
		return nil, nil, err
	}
	cfg, err := Apply(NewConfig(PVE9), changes)
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
	spec *Tenants
	cfg  *Config
}

func big(b *testing.B) (*Tenants, *Config) {
	f, err := bigOnce()
	if err != nil {
		b.Fatal(err)
	}
	return f.spec, f.cfg
}

// rebuildEvaluator is the naive peer of the benchmarks: the same ACL walk,
// but the pool membership map is rebuilt from the pools for every question.
type rebuildEvaluator struct {
	ev  *Evaluator
	cfg *Config
}

func (r rebuildEvaluator) Permissions(authID, path string) PrivSet {
	poolsOf := map[string][]string{}
	for name, p := range r.cfg.Pools {
		for _, vm := range p.VMs {
			poolsOf[vmPath(vm)] = append(poolsOf[vmPath(vm)], poolPath(name))
		}
		for _, s := range p.Storages {
			poolsOf[storagePath(s)] = append(poolsOf[storagePath(s)], poolPath(name))
		}
	}
	ev := *r.ev
	ev.poolsOf = poolsOf
	return ev.Permissions(authID, path)
}

// queries are token/path pairs over the whole cluster, pool members mostly.
func queries(spec *Tenants) [][2]string {
	var qs [][2]string
	for i, tn := range spec.Tenants {
		csi, ccm := tn.TokenIDs()
		other := spec.Tenants[(i*7+3)%len(spec.Tenants)]
		qs = append(qs, [2]string{csi, vmPath(tn.VMs[i%10])}, [2]string{ccm, vmPath(other.VMs[0])},
			[2]string{tn.User, storagePath(tn.Storage)}, [2]string{csi, poolPath(other.Pool)})
	}
	return qs
}

// BenchmarkPermissions compares one question to the indexed Evaluator with
// the naive evaluator, which rebuilds the pool membership map for each
// question.
func BenchmarkPermissions(b *testing.B) {
	spec, cfg := big(b)
	qs := queries(spec)
	ev := NewEvaluator(cfg)
	naive := rebuildEvaluator{ev, cfg}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := qs[i%len(qs)]
		ev.Permissions(q[0], q[1])
	}
	indexed := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.StopTimer()
	const samples = 200
	start := time.Now()
	for i := 0; i < samples; i++ {
		q := qs[(i*131)%len(qs)]
		if naive.Permissions(q[0], q[1]) != ev.Permissions(q[0], q[1]) {
			b.Fatalf("the evaluators disagree on %v", q)
		}
	}
	slow := float64(time.Since(start).Nanoseconds()) / samples
	b.ReportMetric(indexed/1000, "µs/query")
	b.ReportMetric(slow/1000, "naive-µs/query")
	b.ReportMetric(slow/indexed, "naive/indexed")
}

// BenchmarkAudit audits 1,000 tenants (1,000 pools, 10,000 VMs, 8,000 ACL
// entries). The peer is the same audit answering its questions with the
// naive evaluator; it is run on a sample of the tenants and scaled to all
// of them, since the audit's work is per tenant.
func BenchmarkAudit(b *testing.B) {
	spec, cfg := big(b)
	if n := len(cfg.ACL); n < 8000 {
		b.Fatalf("only %d ACL entries", n)
	}
	b.ResetTimer()
	var rep Report
	for i := 0; i < b.N; i++ {
		var err error
		if rep, err = Audit(cfg, spec); err != nil {
			b.Fatal(err)
		}
	}
	fast := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.StopTimer()
	if rep.HasErrors() || rep.Tenants != 1000 {
		b.Fatalf("unexpected report: %d tenants, %d findings", rep.Tenants, len(rep.Findings))
	}
	const sample = 20
	start := time.Now()
	a := newAuditor(cfg, spec)
	a.perm = rebuildEvaluator{a.ev, cfg}
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

// BenchmarkBuild measures indexing the 1,000-tenant configuration, which
// the audit does once.
func BenchmarkBuild(b *testing.B) {
	_, cfg := big(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		NewEvaluator(cfg)
	}
	b.ReportMetric(float64(len(cfg.ACL)), "acl-entries")
}
