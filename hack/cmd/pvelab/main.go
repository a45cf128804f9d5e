// Command pvelab runs the lab's Proxmox VE (internal/testenv/pvelab) as a
// program of its own: the API fake on a free port of 127.0.0.1 with three
// nodes, the VLAN-aware bridge and the Talos template, its started VMs
// registering their Nodes at the tenant control plane of
// --tenant-kubeconfig. Once it serves, it writes --state (JSON: the API
// URL, the CA file, the root token id and the file of its secret, the
// template) and runs until SIGTERM or SIGINT.
//
// hack/lab.sh starts it through hack/cmd/lab; it is not a product
// binary and serves nothing but the fake.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
)

func main() {
	tenant := flag.String("tenant-kubeconfig", "", "kubeconfig of the tenant control plane booted VMs register their Nodes at (required)")
	state := flag.String("state", "", "file the fake writes its address, CA and root token to once it serves (required; its folder takes the CA and secret files)")
	every := flag.Duration("node-status-update-frequency", pvelab.DefaultNodeStatusUpdateFrequency, "how often a running VM's kubelet posts its Node's status")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmsgprefix)
	log.SetPrefix("pvelab: ")
	if err := run(*tenant, *state, *every); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(tenantKubeconfig, state string, every time.Duration) error {
	if tenantKubeconfig == "" || state == "" {
		return errors.New("--tenant-kubeconfig and --state are required")
	}
	if every <= 0 {
		return fmt.Errorf("--node-status-update-frequency %s must be positive", every)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", tenantKubeconfig)
	if err != nil {
		return fmt.Errorf("--tenant-kubeconfig %s: %w", tenantKubeconfig, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	p, err := pvelab.Start(ctx, pvelab.Options{Tenant: cfg, Log: func(s string) { log.Print(s) }, NodeStatusUpdateFrequency: every})
	if err != nil {
		return err
	}
	defer p.Close()
	dir := filepath.Dir(state)
	st := pvelab.State{URL: p.Server.URL, CAFile: filepath.Join(dir, "proxmox-ca.pem"),
		TokenID: p.Server.RootTokenID, TokenSecretFile: filepath.Join(dir, "proxmox-token-secret"),
		Template: p.Template, Pid: os.Getpid()}
	if err := os.WriteFile(st.CAFile, p.Server.CertificatePEM(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(st.TokenSecretFile, []byte(p.Server.RootSecret+"\n"), 0o600); err != nil {
		return err
	}
	if err := pvelab.WriteState(state, st); err != nil {
		return err
	}
	log.Printf("serving at %s", p.Server.URL)
	<-ctx.Done()
	log.Print("stopping")
	return nil
}
