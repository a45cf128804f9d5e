package e2e

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

var networks = flag.Int("networks", 1000, "networks BenchmarkConverge creates")

// readyCount counts the tenant's networks that are Ready with their
// gateway assigned, with one list.
func readyCount(ctx context.Context, c client.Client, cl controllertest.Cluster) (int, error) {
	var list v1alpha1.ProxmoxNetworkList
	if err := c.List(ctx, &list, client.InNamespace(cl.Tenant)); err != nil {
		return 0, err
	}
	n := 0
	for _, item := range list.Items {
		gw := meta.FindStatusCondition(item.Status.Conditions, v1alpha1.ConditionGatewayReady)
		if meta.IsStatusConditionTrue(item.Status.Conditions, v1alpha1.ConditionReady) && gw != nil && gw.Reason == v1alpha1.ReasonChassisAssigned {
			n++
		}
	}
	return n, nil
}

// BenchmarkConverge times one controller process (the built binary)
// bringing -networks networks to Ready with their gateways on a real API
// server and ovsdb-server, from the first object written to the last
// network Ready, while the test plays Kube-OVN. The floor it is compared
// with, in the same run, is the time the API server takes to store the
// objects the test writes for those networks (Subnet, pool,
// ProxmoxNetwork): converge/create is how many times that the whole
// controller loop costs.
//
//	go test ./e2e -run '^$' -bench Converge -benchtime 1x [-networks 1000]   # test flags after the package
func BenchmarkConverge(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	var create, converge time.Duration
	for i := range b.N {
		cl := cluster(fmt.Sprintf("b%d", i), 0)
		cl.Setup(b, e.admin, fmt.Sprintf("b%d-node-1", i), fmt.Sprintf("b%d-node-2", i))
		nb := ovngatewaytest.StartReal(b)
		k := controllertest.NewKubeOVN(nb.Endpoint())
		p := e.start(b, fmt.Sprintf("bench-%d", i), append(append(nbArgs(nb), leaseFlags...),
			"--webhook-port=0", "--kube-api-qps=500", "--kube-api-burst=1000")...)
		waitLeader(b, e.admin, fmt.Sprintf("bench-%d", i))
		t0 := time.Now()
		for n := range *networks {
			cl.AddNetwork(b, e.admin, n)
		}
		create += time.Since(t0)
		controllertest.Eventually(b, 30*time.Minute, func() error { return k.React(ctx, e.admin) }, func() (bool, string) {
			n, err := readyCount(ctx, e.admin, cl)
			if err != nil {
				return false, err.Error()
			}
			return n == *networks, fmt.Sprintf("%d of %d networks ready", n, *networks)
		})
		converge += time.Since(t0)
		k.Close()
		if code := p.stop(b); code != 0 {
			b.Errorf("exit code after SIGTERM = %d", code)
		}
	}
	b.ReportMetric(converge.Seconds()/float64(b.N), "converge-s")
	b.ReportMetric(create.Seconds()/float64(b.N), "create-s")
	b.ReportMetric(converge.Seconds()/create.Seconds(), "converge/create")
	b.ReportMetric(float64(*networks)/(converge.Seconds()/float64(b.N)), "networks/s")
}
