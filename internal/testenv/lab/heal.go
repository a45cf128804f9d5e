package lab

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
)

// TenantControllers are the controllers of kube-controller-manager the lab
// runs against the tenant API server, as the tenant's control plane (a
// Kamaji control plane) runs them: the node lifecycle, the persistent
// volume binder, the attach-detach controller, the claim and volume
// protection controllers, the service account controller (every
// namespace's default ServiceAccount, which a Pod runs as) and the taint
// eviction controller (a Pod leaves a Node tainted unreachable once its
// toleration runs out).
var TenantControllers = []string{"node-lifecycle-controller", "persistentvolume-binder-controller",
	"persistentvolume-attach-detach-controller", "persistentvolumeclaim-protection-controller", "persistentvolume-protection-controller",
	"serviceaccount-controller", "taint-eviction-controller"}

// startNodeLifecycle runs kube-controller-manager's TenantControllers
// against the tenant API server. The node lifecycle controller: a Node
// whose kubelet posts no status for grace (its VM stopped, or its Proxmox
// node offline) gets Ready=Unknown, reason NodeStatusUnknown, which the
// pool's MachineHealthCheck remediates; grace 0 keeps the controller's own
// default (--node-monitor-grace-period). The volume controllers bind a
// claim to the volume the CSI provisioner made and attach it to the Node
// of the Pod that uses it (a VolumeAttachment, which the CSI attacher
// serves). It returns once the controllers run.
func (l *Lab) startNodeLifecycle(grace time.Duration) error {
	bin, err := testenv.FindControllerManager()
	if err != nil {
		return err
	}
	args := []string{"--kubeconfig=" + filepath.Join(l.Dir, TenantKubeconfig), "--controllers=" + strings.Join(TenantControllers, ","),
		"--leader-elect=false", "--secure-port=0"}
	if grace > 0 {
		args = append(args, "--node-monitor-grace-period="+grace.String(), "--node-monitor-period="+statusFrequency(grace).String())
	}
	m := capi.Process("kube-controller-manager", bin, args, nil, filepath.Join(l.Dir, "node-lifecycle.log"))
	m.Ready = m.Logged(nodeLifecycleStarted)
	if err := l.startProgram(m); err != nil {
		return err
	}
	l.log(fmt.Sprintf("tenant controllers: kube-controller-manager (pid %d), node monitor grace %s", m.Pid(), or(grace, "its default")))
	return l.startScheduler()
}

// startScheduler runs kube-scheduler against the tenant API server, as the
// tenant's control plane does: it places Pods, and for a claim of a
// WaitForFirstConsumer StorageClass names the Node whose topology the CSI
// provisioner creates the volume in.
func (l *Lab) startScheduler() error {
	bin, err := testenv.FindScheduler()
	if err != nil {
		return err
	}
	m := capi.Process("kube-scheduler", bin, []string{"--kubeconfig=" + filepath.Join(l.Dir, TenantKubeconfig),
		"--leader-elect=false", "--secure-port=0"}, nil, filepath.Join(l.Dir, "kube-scheduler.log"))
	m.Ready = m.Logged(schedulerStarted)
	if err := l.startProgram(m); err != nil {
		return err
	}
	l.log(fmt.Sprintf("tenant scheduler: kube-scheduler (pid %d)", m.Pid()))
	return nil
}

// schedulerStarted is the line kube-scheduler logs once it schedules.
const schedulerStarted = "Starting Kubernetes Scheduler"

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
