package lab

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
)

// startNodeLifecycle runs kube-controller-manager's node lifecycle
// controller against the tenant API server, as the tenant's control plane
// runs it: a Node whose kubelet posts no status for grace (its VM stopped,
// or its Proxmox node offline) gets Ready=Unknown, reason
// NodeStatusUnknown, which the pool's MachineHealthCheck remediates. grace
// 0 keeps the controller's own default (--node-monitor-grace-period).
// It returns once the controller runs.
func (l *Lab) startNodeLifecycle(grace time.Duration) error {
	bin, err := testenv.FindControllerManager()
	if err != nil {
		return err
	}
	args := []string{"--kubeconfig=" + filepath.Join(l.Dir, TenantKubeconfig), "--controllers=node-lifecycle-controller",
		"--leader-elect=false", "--secure-port=0"}
	if grace > 0 {
		args = append(args, "--node-monitor-grace-period="+grace.String(), "--node-monitor-period="+statusFrequency(grace).String())
	}
	m := capi.Process("kube-controller-manager", bin, args, nil, filepath.Join(l.Dir, "node-lifecycle.log"))
	m.Ready = m.Logged(nodeLifecycleStarted)
	if err := l.startProgram(m); err != nil {
		return err
	}
	l.log(fmt.Sprintf("node lifecycle controller: kube-controller-manager (pid %d), grace %s", m.Pid(), or(grace, "its default")))
	return nil
}

// nodeLifecycleStarted is the line kube-controller-manager logs once the
// node lifecycle controller runs.
const nodeLifecycleStarted = "Starting node controller"

// statusFrequency is how often a kubelet posts its Node's status for a
// node monitor grace period: a fifth of it, as the defaults are (the
// kubelet's 10s nodeStatusUpdateFrequency, the controller's 50s grace).
// 0 keeps the kubelet's default.
func statusFrequency(grace time.Duration) time.Duration { return grace / 5 }

func or(d time.Duration, def string) string {
	if d == 0 {
		return def
	}
	return d.String()
}
