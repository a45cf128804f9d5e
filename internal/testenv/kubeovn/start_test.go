package kubeovn

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// TestKubeOVNStartNamesLogTail gives kube-ovn-controller a metrics port
// another listener holds: Start fails naming the controller and the end of
// its log, which says why.
func TestKubeOVNStartNamesLogTail(t *testing.T) {
	cfg, _ := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := func() (int, error) { return l.Addr().(*net.TCPAddr).Port, nil }
	k, err := Start(cfg, Options{ports: taken})
	if err == nil {
		t.Fatal(errors.Join(errors.New("kube-ovn-controller started on a taken metrics port"), k.Stop()))
	}
	if !strings.Contains(err.Error(), "kube-ovn-controller (pid ") || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("want an error naming kube-ovn-controller and its log line about the taken port, got %v", err)
	}
}

// TestKubeOVNMissingBinary names the missing binary and the script that
// builds it.
func TestKubeOVNMissingBinary(t *testing.T) {
	_, err := Start(nil, Options{assets: t.TempDir()})
	if !errors.Is(err, ErrMissingAssets) || !strings.Contains(err.Error(), ControllerBinary) || !strings.Contains(err.Error(), "hack/kubeovn-assets.sh") {
		t.Errorf("want ErrMissingAssets naming %s and hack/kubeovn-assets.sh, got %v", ControllerBinary, err)
	}
}

// TestKubeOVNStopRemovesEverything checks that Stop ends every process by
// its id and removes the folder.
func TestKubeOVNStopRemovesEverything(t *testing.T) {
	cfg, _ := testenv.StartAPIServer(t, testenv.APIServerOptions{})
	k, err := Start(cfg, Options{Webhook: true})
	if err != nil {
		t.Fatal(err)
	}
	procs := []interface{ Exited() bool }{k.Controller(), k.Webhook, k.NB.proc, k.SB.proc}
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	for i, p := range procs {
		if !p.Exited() {
			t.Errorf("process %d still runs after Stop", i)
		}
	}
	if _, err := os.Stat(k.dir); !os.IsNotExist(err) {
		t.Errorf("the folder %s is still there: %v", k.dir, err)
	}
}
