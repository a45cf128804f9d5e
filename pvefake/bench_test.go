package pvefake

import (
	"fmt"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// bigServer holds tenants pools of ten guests each, with a user and a
// privilege-separated token per tenant granted on its pool and storage.
func bigServer(b *testing.B, tenants int) *Server {
	b.Helper()
	srv, err := New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	check := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < tenants; i++ {
		pool, user := fmt.Sprintf("t%d", i), fmt.Sprintf("t%d@pve", i)
		check(srv.AddPool(pool, "", nil, nil))
		check(srv.AddUser(user, UserSpec{}))
		_, err := srv.AddToken(user, "csi", TokenSpec{Privsep: true})
		check(err)
		for _, kind := range []pveacl.SubjectKind{pveacl.KindUser, pveacl.KindToken} {
			subject := user
			if kind == pveacl.KindToken {
				subject += "!csi"
			}
			check(srv.SetACL("/pool/"+pool, kind, subject, false, "PVEVMUser", "PVEAuditor"))
			check(srv.SetACL("/storage/s"+pool, kind, subject, false, "PVEDatastoreUser"))
		}
		for j := 0; j < 10; j++ {
			check(srv.AddVM(VMSpec{VMID: 1000 + i*10 + j, Pool: pool}))
		}
	}
	return srv
}

// naiveVMResources lists guests like vmResources but asks a freshly built
// evaluator for each permission, as a fake without an index would.
func naiveVMResources(c *call) int {
	n := 0
	for _, id := range c.s.vmIDs() {
		if pveacl.NewEvaluator(c.s.cfg).Permissions(c.auth, vmPath(id)).Has("VM.Audit") {
			n++
		}
	}
	return n
}

// BenchmarkClusterResources measures GET /cluster/resources?type=vm for a
// tenant token on 1,000 guests with the server's cached evaluator, and the
// same listing with an evaluator rebuilt per check in the same run; the
// ratio metric is naive time / cached time.
func BenchmarkClusterResources(b *testing.B) {
	srv := bigServer(b, 100)
	c := &call{srv: srv, s: srv.st, auth: "t7@pve!csi", p: params{"type": "vm"}}
	start := time.Now()
	const naiveRuns = 1
	for i := 0; i < naiveRuns; i++ {
		if n := naiveVMResources(c); n != 10 {
			b.Fatalf("the naive listing sees %d guests, want 10", n)
		}
	}
	naive := time.Since(start) / naiveRuns
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := clusterResources(c)
		if err != nil || len(out.([]map[string]any)) != 10 {
			b.Fatalf("the listing sees %v guests (%v), want 10", out, err)
		}
	}
	b.StopTimer()
	perOp := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(naive)/float64(perOp), "naive/cached")
}
