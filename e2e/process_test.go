package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/controller"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
)

// serviceAccount is the user the processes run as.
const serviceAccount = "system:serviceaccount:cozy-proxmox-network:proxmox-network-controller"

// Lease timings short enough for a test, long enough for a loaded machine.
var leaseFlags = []string{"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}

// proc is one controller process.
type proc struct {
	name, metrics, probes string
	// token authenticates the metrics scrapes (--metrics-secure).
	token   string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	exit    int
}

// start runs the controller as replica name with e's kubeconfig and args,
// metrics and probes on free ports; it is killed on cleanup, and its log
// is printed when the test failed.
func (e *env) start(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	kubeconfig := e.kubeconfig
	p := &proc{name: name, metrics: controllertest.FreeAddr(t), probes: controllertest.FreeAddr(t), token: e.scrapeToken, done: make(chan struct{}),
		logPath: filepath.Join(t.TempDir(), name+".log")}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"--kubeconfig=" + kubeconfig, "--metrics-bind-address=" + p.metrics,
		"--health-probe-bind-address=" + p.probes, "--log-level=debug"}, args...)
	p.cmd = exec.Command(binary, all...)
	p.cmd.Env = append(os.Environ(), "POD_NAME="+name, "POD_NAMESPACE=cozy-proxmox-network")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("cannot start %s: %v", name, err)
	}
	go func() {
		err := p.cmd.Wait()
		logFile.Close()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			p.exit = ee.ExitCode()
		case err != nil:
			p.exit = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, tail(p.logPath, 40))
		}
	})
	return p
}

func (p *proc) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// stop sends SIGTERM and returns the exit code.
func (p *proc) stop(t testing.TB) int {
	t.Helper()
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.exit
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not stop within 60s of SIGTERM", p.name)
		return -1
	}
}

// kill sends SIGKILL, as a crashed node would, and waits for the end.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// get fetches path from the metrics (metrics=true, over HTTPS with the
// scrape token) or probe server.
func (p *proc) get(path string, metrics bool) (int, string, error) {
	url := "http://" + p.probes + path
	c := http.DefaultClient
	if metrics {
		url = "https://" + p.metrics + path
		// The metrics certificate is self-signed without --metrics-cert-dir.
		c = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if metrics {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// metric returns the value of the series whose line starts with series.
func (p *proc) metric(series string) (float64, error) {
	_, body, err := p.get("/metrics", true)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, series+" ") {
			return strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, series)), 64)
		}
	}
	return 0, fmt.Errorf("no series %s", series)
}

// holder returns the replica named in the Lease ("" when none holds it).
func holder(ctx context.Context, c client.Client) string {
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "cozy-proxmox-network", Name: controller.LeaseName}, l); err != nil {
		return ""
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	name, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return name
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logs returns the whole log of p.
func (p *proc) logs() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}
