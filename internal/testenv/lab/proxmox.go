package lab

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// programReadyTimeout bounds how long a program the lab starts (pvelab,
// the controller) may take to serve.
const programReadyTimeout = 2 * time.Minute

// startProxmox starts the lab's Proxmox VE: in the lab's process when
// program is empty, else as that program (hack/cmd/pvelab), whose state file
// says where it serves. Its VMs' kubelets post their Nodes' status every
// statusEvery (0: the kubelet's default).
func (l *Lab) startProxmox(ctx context.Context, program string, statusEvery, fenceDelay time.Duration) error {
	if program == "" {
		p, err := pvelab.Start(ctx, pvelab.Options{Tenant: l.Tenant, Log: l.log, NodeStatusUpdateFrequency: statusEvery, HAFenceDelay: fenceDelay})
		if err != nil {
			return err
		}
		l.proxmox, l.PVE, l.Template = p, p.Server, p.Template
		l.stops = append(l.stops, func() error { p.Close(); return nil })
		l.Proxmox = pveapi.Config{URL: p.Server.URL, TokenID: p.Server.RootTokenID, Secret: p.Server.RootSecret,
			CAPEM: p.Server.CertificatePEM()}
		return nil
	}
	state := filepath.Join(l.Dir, ProxmoxState)
	_ = os.Remove(state)
	args := []string{"--tenant-kubeconfig", filepath.Join(l.Dir, TenantKubeconfig), "--state", state}
	if statusEvery > 0 {
		args = append(args, "--node-status-update-frequency", statusEvery.String())
	}
	m := capi.Process("pvelab", program, args, nil, filepath.Join(l.Dir, "pvelab.log"))
	m.Ready = func() error {
		_, err := pvelab.ReadState(state)
		return err
	}
	if err := l.startProgram(m); err != nil {
		return err
	}
	st, err := pvelab.ReadState(state)
	if err != nil {
		return err
	}
	return l.useProxmoxState(st)
}

// startProgram starts p, a program the lab runs, waits up to
// programReadyTimeout until it is ready, and keeps it for status and stop.
func (l *Lab) startProgram(p *testproc.Process) error {
	p.StartTimeout = programReadyTimeout
	if err := p.Start(); err != nil {
		return err
	}
	l.Processes = append(l.Processes, p)
	l.stops = append(l.stops, p.Stop)
	return nil
}

// useProxmoxState points the lab at a fake that runs as a program.
func (l *Lab) useProxmoxState(st pvelab.State) error {
	ca, err := os.ReadFile(st.CAFile)
	if err != nil {
		return err
	}
	secret, err := os.ReadFile(st.TokenSecretFile)
	if err != nil {
		return err
	}
	l.Proxmox = pveapi.Config{URL: st.URL, TokenID: st.TokenID, Secret: strings.TrimSpace(string(secret)), CAPEM: ca}
	l.Template = st.Template
	return nil
}

// Root is a client of the lab's Proxmox VE as root@pam.
func (l *Lab) Root() (*proxmox.Client, error) { return pveapi.New(l.Proxmox) }

// Boots returns every boot so far, in order, when the fake runs in the
// lab's process; nil when it runs as a program (its log has them).
func (l *Lab) Boots() []pvelab.Boot {
	if l.proxmox == nil {
		return nil
	}
	return l.proxmox.Boots()
}

// startController runs the proxmox-network controller against the
// management API server: no OVN (the lab has no OVN gateway to manage), no
// webhook (its port would be the machine's, and labs run side by side), no leader election (one replica), its
// health probes on a free port it must answer on before the lab goes on.
func (l *Lab) startController(ctx context.Context, bin, kubeconfig string, extra ...string) error {
	port, err := testproc.FreePort()
	if err != nil {
		return err
	}
	probes := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	m := capi.Process("proxmox-network-controller", bin, append([]string{
		"--kubeconfig=" + kubeconfig, "--manage-gateway-chassis=false", "--webhook-port=0",
		"--metrics-bind-address=0", "--health-probe-bind-address=" + probes, "--leader-elect=false", "--log-format=text"}, extra...),
		[]string{"POD_NAMESPACE=cozy-proxmox-network", "POD_NAME=proxmox-network-controller"}, filepath.Join(l.Dir, "controller.log"))
	m.Ready = func() error {
		if !ready(ctx, "http://"+probes+"/readyz") {
			return fmt.Errorf("no /readyz on %s", probes)
		}
		return nil
	}
	if err := l.startProgram(m); err != nil {
		return err
	}
	l.log(fmt.Sprintf("proxmox-network-controller (pid %d) ready", m.Pid()))
	return nil
}

func ready(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// startGarbageCollector runs kube-controller-manager's garbage collector
// against the management API server, which envtest does not run: what
// capmox and Cluster API leave to owner references (a ProxmoxMachine's
// IPAddressClaims, a Machine's bootstrap Secret) goes with its owner as in
// a cluster. It returns once the collector has synced its monitors.
func (l *Lab) startGarbageCollector() error {
	bin, err := testenv.FindControllerManager()
	if err != nil {
		return err
	}
	m := capi.Process("kube-controller-manager", bin, []string{
		"--kubeconfig=" + filepath.Join(l.Dir, MgmtKubeconfig), "--controllers=garbagecollector",
		"--leader-elect=false", "--secure-port=0"}, nil, filepath.Join(l.Dir, "kube-controller-manager.log"))
	m.Ready = m.Logged(gcSynced)
	if err := l.startProgram(m); err != nil {
		return err
	}
	l.log(fmt.Sprintf("garbage collector: kube-controller-manager (pid %d)", m.Pid()))
	return nil
}

// gcSynced is the line kube-controller-manager logs once its garbage
// collector watches every resource.
const gcSynced = "Proceeding to collect garbage"
