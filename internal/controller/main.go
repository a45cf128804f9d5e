package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// Version is the controller's version, set at build time with
// -ldflags "-X github.com/pxsubstrate/pxsubstrate/internal/controller.Version=v1.2.3";
// unset, it is the main module's version from the build information.
var Version = ""

// version is Version, or the module version the binary was built from.
func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// VersionLine is what --version prints.
func VersionLine() string {
	return fmt.Sprintf("proxmox-network-controller %s %s %s/%s", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

const usageHead = `Usage: proxmox-network-controller [flags]

Runs the ProxmoxNetwork and ProxmoxNetworkZone reconcilers, the OVN gateway
of each network and the admission webhook. Flags:
`

// usage writes the usage text with every flag of fs to w.
func usage(w io.Writer, fs *pflag.FlagSet) {
	fmt.Fprint(w, usageHead)
	fmt.Fprint(w, fs.FlagUsages())
}

// Main runs the controller with the command-line args (without the program
// name) until SIGTERM or SIGINT, logging to stderr, and returns the exit
// code: 0 after a graceful stop, 1 when the controller failed (e.g. it lost
// its Lease), 2 for bad flags. --help prints the usage and --version the
// version on stdout, and return 0; a bad flag prints the error and the
// usage on stderr.
func Main(args []string, stdout, stderr io.Writer) int {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("proxmox-network-controller", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	o.BindFlags(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	flagError := func(err error) int {
		fmt.Fprintf(stderr, "proxmox-network-controller: %v\n\n", err)
		usage(stderr, fs)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			usage(stdout, fs)
			return 0
		}
		return flagError(err)
	}
	if *showVersion {
		fmt.Fprintln(stdout, VersionLine())
		return 0
	}
	if fs.NArg() > 0 {
		return flagError(fmt.Errorf("%w: unexpected arguments %q: every setting is a --flag", ErrFlags, fs.Args()))
	}
	if err := o.Validate(); err != nil {
		return flagError(err)
	}
	log, err := NewLogger(stderr, o.LogLevel, o.LogFormat)
	if err != nil {
		return flagError(err)
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
