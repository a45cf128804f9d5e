package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// Main runs the controller with the command-line args (without the program
// name) until SIGTERM or SIGINT, logging to stderr, and returns the exit
// code: 0 after a graceful stop, 1 when the controller failed (e.g. it lost
// its Lease), 2 for bad flags.
func Main(args []string, stderr io.Writer) int {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("proxmox-network-controller", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "proxmox-network-controller: %v\n", err)
		return 2
	}
	log, err := NewLogger(stderr, o.LogLevel)
	if err != nil {
		fmt.Fprintf(stderr, "proxmox-network-controller: %v\n", err)
		return 2
	}
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	cfg, err := RESTConfig(o.Kubeconfig)
	if err != nil {
		log.Error(err, "cannot start")
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	p, err := New(cfg, o, Deps{Log: log})
	if err != nil {
		log.Error(err, "cannot start")
		return 1
	}
	if err := p.Start(ctx); err != nil {
		log.Error(err, "stopped")
		return 1
	}
	log.Info("stopped gracefully")
	return 0
}

// RESTConfig loads the kubeconfig file at path, or, when path is empty,
// the in-cluster config, $KUBECONFIG or ~/.kube/config.
func RESTConfig(path string) (*rest.Config, error) {
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("cannot load --kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot find a Kubernetes config (pass --kubeconfig outside a cluster): %w", err)
	}
	return cfg, nil
}
