package pveacl

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// bigCluster is n tenants as their plan leaves them (see docs/pveacl.md):
// per tenant a user with privilege-separated csi and ccm tokens, a pool of
// 10 VMs and a dedicated storage, and the plan's 8 ACL entries; plus the
// capmox user and token with CozyCapmox on / and guests and storages in
// no pool.
func bigCluster(n int) *Config {
	cfg := NewConfig(PVE9)
	cfg.Roles["CozyCSI"] = Role{Privs: []string{"VM.Audit", "VM.Config.Disk"}}
	cfg.Roles["CozyCSIStorage"] = Role{Privs: []string{"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.Audit"}}
	cfg.Roles["CozyCCM"] = Role{Privs: []string{"VM.Audit", "VM.GuestAgent.Audit"}}
	cfg.Roles["CozyCapmox"] = Role{Privs: []string{"Datastore.AllocateSpace", "Pool.Audit", "VM.Allocate", "VM.Audit", "VM.Clone"}}
	grant := func(path string, kind SubjectKind, subject string, propagate bool, roles ...string) {
		for _, r := range roles {
			cfg.ACL[ACLKey{Path: path, Kind: kind, Subject: subject, Role: r}] = propagate
		}
	}
	cfg.Users["capmox@pve"] = User{Enable: true, Tokens: map[string]Token{"capi": {Privsep: true}}}
	grant("/", KindUser, "capmox@pve", true, "CozyCapmox")
	grant("/", KindToken, "capmox@pve!capi", true, "CozyCapmox")
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("t%04d", i)
		user, storage := name+"@pve", name+"-disks"
		csi, ccm := TokenID(user, "csi"), TokenID(user, "ccm")
		cfg.Users[user] = User{Enable: true, Tokens: map[string]Token{"csi": {Privsep: true}, "ccm": {Privsep: true}}}
		pool := Pool{Storages: []string{storage}}
		for j := 0; j < 10; j++ {
			pool.AddVM(1000 + 10*i + j)
		}
		cfg.Pools[name] = pool
		grant(PoolPath(name), KindUser, user, false, "CozyCSI", "CozyCCM")
		grant(PoolPath(name), KindToken, csi, false, "CozyCSI")
		grant(PoolPath(name), KindToken, ccm, false, "CozyCCM")
		grant(StoragePath(storage), KindUser, user, false, "CozyCSIStorage")
		grant(StoragePath(storage), KindToken, csi, false, "CozyCSIStorage")
		grant("/", KindUser, user, false, RoleAuditor)
		grant("/", KindToken, ccm, false, RoleAuditor)
	}
	cfg.Resources.VMs = []int{9000, 9001, 9002}
	cfg.Resources.Storages = []string{"backup", "iso", "local"}
	return cfg
}

const bigTenants = 1000

var bigOnce = sync.OnceValue(func() *Config { return bigCluster(bigTenants) })

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
			poolsOf[VMPath(vm)] = append(poolsOf[VMPath(vm)], PoolPath(name))
		}
		for _, s := range p.Storages {
			poolsOf[StoragePath(s)] = append(poolsOf[StoragePath(s)], PoolPath(name))
		}
	}
	ev := *r.ev
	ev.poolsOf = poolsOf
	return ev.Permissions(authID, path)
}

// queries are token/path pairs over the whole cluster, pool members mostly.
func queries(n int) [][2]string {
	var qs [][2]string
	for i := 0; i < n; i++ {
		user, other := fmt.Sprintf("t%04d@pve", i), (i*7+3)%n
		qs = append(qs, [2]string{user + "!csi", VMPath(1000 + 10*i + i%10)}, [2]string{user + "!ccm", VMPath(1000 + 10*other)},
			[2]string{user, StoragePath(fmt.Sprintf("t%04d-disks", i))}, [2]string{user + "!csi", PoolPath(fmt.Sprintf("t%04d", other))})
	}
	return qs
}

// BenchmarkPermissions compares one question to the indexed Evaluator with
// the naive evaluator, which rebuilds the pool membership map for each
// question.
func BenchmarkPermissions(b *testing.B) {
	cfg := bigOnce()
	qs := queries(bigTenants)
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

// BenchmarkBuild measures indexing the 1,000-tenant configuration, which
// the audit does once.
func BenchmarkBuild(b *testing.B) {
	cfg := bigOnce()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		NewEvaluator(cfg)
	}
	b.ReportMetric(float64(len(cfg.ACL)), "acl-entries")
}
