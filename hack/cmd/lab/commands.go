package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
)

// upTimeout bounds how long up waits for the lab: two API servers, four
// managers, the fake and the controller start in well under a minute on
// two cores.
const upTimeout = 5 * time.Minute

// downTimeout bounds how long down waits for the supervisor to stop
// everything before it kills what is left.
const downTimeout = 2 * time.Minute

type upFlags struct {
	proxmox, controller, capmox string
}

func (f *upFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.proxmox, "proxmox-program", "", "the pvelab binary (required)")
	fs.StringVar(&f.controller, "controller", "", "the proxmox-network-controller binary (required)")
	fs.StringVar(&f.capmox, "capmox", string(capi.CapmoxV09), "capmox generation: v0.9 (v0.9.0, API v1alpha2) or v0.7 (v0.7.2, API v1alpha1)")
}

func (f *upFlags) check() error {
	switch {
	case f.proxmox == "" || f.controller == "":
		return errors.New("--proxmox-program and --controller are required")
	case f.capmox != string(capi.CapmoxV09) && f.capmox != string(capi.CapmoxV07):
		return fmt.Errorf("--capmox %q: give %s or %s", f.capmox, capi.CapmoxV09, capi.CapmoxV07)
	}
	return nil
}

func parse(name string, args []string, bind func(*flag.FlagSet)) (*flag.FlagSet, string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", "", "the lab's folder (required)")
	if bind != nil {
		bind(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, "", fmt.Errorf("%s: %w\n%s", name, err, usage)
	}
	if *dir == "" {
		return nil, "", fmt.Errorf("%s: --dir is required", name)
	}
	abs, err := filepath.Abs(*dir)
	return fs, abs, err
}

// up starts the supervisor and waits for it to write the session file.
func up(ctx context.Context, args []string, out, errOut io.Writer) error {
	var f upFlags
	fs, dir, err := parse("up", args, f.bind)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("up takes no arguments, got %q\n%s", fs.Args(), usage)
	}
	if err := f.check(); err != nil {
		return err
	}
	if s, err := lab.ReadSession(dir); err == nil {
		return fmt.Errorf("a lab runs already in %s (supervisor pid %d): see hack/lab.sh status, or stop it with hack/lab.sh down", dir, s.Pid)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(dir, lab.SessionFile))
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "lab.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(self, "serve", "--dir", dir, "--proxmox-program", f.proxmox, "--controller", f.controller, "--capmox", f.capmox)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A session of its own: the lab outlives this command and its
	// terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start the lab's supervisor: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fmt.Fprintf(errOut, "lab: starting in %s (supervisor pid %d, log %s)\n", dir, cmd.Process.Pid, logPath)
	deadline := time.After(upTimeout)
	for {
		if _, err := lab.ReadSession(dir); err == nil {
			break
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the lab's supervisor exited (%v); the last lines of %s:\n%s", err, logPath, tail(logPath, 20))
		case <-deadline:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			return fmt.Errorf("the lab did not come up within %s; the last lines of %s:\n%s", upTimeout, logPath, tail(logPath, 20))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := printEnv(dir, out); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "lab: tenant control plane: KUBECONFIG=%s; apply a tenant with hack/lab.sh apply FILE...\n",
		filepath.Join(dir, lab.TenantKubeconfig))
	return nil
}

// env prints where the running lab is, as up does.
func env(args []string, out io.Writer) error {
	fs, dir, err := parse("env", args, nil)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("env takes no arguments, got %q\n%s", fs.Args(), usage)
	}
	return printEnv(dir, out)
}

// printEnv prints, one KEY=value a line, the management API server's
// kubeconfig and the Proxmox VE fake's address, root token and CA.
func printEnv(dir string, out io.Writer) error {
	if _, err := lab.ReadSession(dir); err != nil {
		return err
	}
	st, err := pvelab.ReadState(filepath.Join(dir, lab.ProxmoxState))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "KUBECONFIG=%s\n", filepath.Join(dir, lab.MgmtKubeconfig))
	fmt.Fprintf(out, "PROXMOX_URL=%s\n", strings.TrimSuffix(st.URL, "/api2/json"))
	fmt.Fprintf(out, "PROXMOX_TOKEN_ID=%s\n", st.TokenID)
	fmt.Fprintf(out, "PROXMOX_TOKEN_SECRET_FILE=%s\n", st.TokenSecretFile)
	fmt.Fprintf(out, "PROXMOX_CA_FILE=%s\n", st.CAFile)
	return nil
}

// serve is the supervisor: it starts the lab, writes the session file and
// keeps the lab until SIGTERM or SIGINT, then stops it.
func serve(args []string, errOut io.Writer) error {
	var f upFlags
	_, dir, err := parse("serve", args, f.bind)
	if err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logf := func(s string) { fmt.Fprintf(errOut, "%s %s\n", time.Now().Format(time.TimeOnly), s) }
	l, err := lab.Start(ctx, lab.Options{Capmox: capi.Capmox(f.capmox), Dir: dir, ProxmoxProgram: f.proxmox,
		Controller: f.controller, Log: logf})
	if err != nil {
		return err
	}
	if err := l.WriteSession(); err != nil {
		return errors.Join(err, l.Stop())
	}
	l.OnPodsChanged(func() {
		if err := l.WriteSession(); err != nil {
			logf("cannot write the session file: " + err.Error())
		}
	})
	logf("lab up")
	<-ctx.Done()
	logf("stopping")
	err = l.Stop()
	_ = os.Remove(filepath.Join(dir, lab.SessionFile))
	logf("stopped")
	return err
}

// apply reads the tenant, refusing bad input before anything is made,
// then applies it to the running lab.
func apply(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, dir, err := parse("apply", args, nil)
	if err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("apply needs the files of a Kubernetes and its KubernetesNodes (and of the tenant's VPCs)\n%s", usage)
	}
	t, err := lab.ReadTenant(fs.Args()...)
	if err != nil {
		return err
	}
	l, err := lab.Attach(dir)
	if err != nil {
		return fmt.Errorf("%w: start one with hack/lab.sh up", err)
	}
	l.SetLog(func(s string) { fmt.Fprintln(errOut, "lab:", s) })
	a, err := l.Apply(ctx, t)
	if err != nil {
		return err
	}
	for _, n := range a.Networks {
		fmt.Fprintf(out, "applied VPC %s/%s: subnet %s, ProxmoxNetwork %s Ready on VLAN %d of %s (zone %s)\n",
			n.Namespace, n.VPC, n.Subnet, n.Name, n.VLAN, n.Bridge, n.Zone)
	}
	fmt.Fprintf(out, "applied Kubernetes %s/%s: Cluster %s, %d objects, capmox token %s\n",
		t.Cluster.Namespace, t.Cluster.Name, a.ClusterName, len(a.Objects), a.TokenID)
	fmt.Fprintln(out, "the Machines come up on their own: hack/lab.sh status")
	return nil
}

// status lists the lab's processes and its Machines; with --wait it first
// waits, up to that long, for every Machine to run with its Node and the
// containers of every Deployment the lab runs to run.
func status(ctx context.Context, args []string, out io.Writer) error {
	var wait time.Duration
	_, dir, err := parse("status", args, func(fs *flag.FlagSet) {
		fs.DurationVar(&wait, "wait", 0, "wait up to this long for at least one Machine, as many Machines as the MachineDeployments ask for, every Machine Running with its Node, and every Deployment's containers running")
	})
	if err != nil {
		return err
	}
	l, err := lab.Attach(dir)
	if err != nil {
		return err
	}
	machines, running, want, err := listMachines(ctx, l)
	for deadline := time.Now().Add(wait); err == nil && wait > 0 && (len(machines) == 0 || running < want); {
		if time.Now().After(deadline) {
			err = fmt.Errorf("%d of %d Machines run after %s", running, want, wait)
			break
		}
		time.Sleep(2 * time.Second)
		machines, running, want, err = listMachines(ctx, l)
	}
	// The session is read after the wait: the supervisor rewrites it as
	// the Deployments' containers start, which --wait waits for too.
	s, err := waitPods(ctx, l, dir, wait, err)
	if s == nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tPROCESS\tSTATE")
	fmt.Fprintf(tw, "%d\t%s\t%s\n", s.Pid, "supervisor", state(s.Pid, ""))
	inPod := map[int]bool{}
	for _, p := range s.Pods {
		inPod[p.Pid] = true
	}
	for _, p := range s.Processes {
		if !inPod[p.Pid] {
			fmt.Fprintf(tw, "%d\t%s\t%s\n", p.Pid, p.Name, state(p.Pid, p.Name))
		}
	}
	for _, p := range s.Pods {
		fmt.Fprintf(tw, "%d\t%s/%s/%s\t%s\n", p.Pid, p.Namespace, p.Deployment, p.Container, state(p.Pid, ""))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NAMESPACE\tMACHINE\tPHASE\tNODE\tPROVIDER ID\tADDRESSES")
	for _, m := range machines {
		fmt.Fprintln(tw, strings.Join(m, "\t"))
	}
	return errors.Join(tw.Flush(), err)
}

// waitPods reads the session; with wait, and no error from the wait for
// the Machines (prior), it first waits until every Deployment of the
// management cluster that is not scaled to zero runs its containers.
func waitPods(ctx context.Context, l *lab.Lab, dir string, wait time.Duration, prior error) (*lab.Session, error) {
	deadline := time.Now().Add(wait)
	for {
		read, err := lab.ReadSession(dir)
		if err != nil {
			return nil, errors.Join(err, prior)
		}
		s := &read
		if prior != nil || wait <= 0 {
			return s, prior
		}
		missing, err := podsMissing(ctx, l, s)
		switch {
		case err != nil:
			return s, err
		case len(missing) == 0:
			return s, nil
		case time.Now().After(deadline):
			return s, fmt.Errorf("the containers of Deployments %s do not run after %s", strings.Join(missing, ", "), wait)
		}
		time.Sleep(2 * time.Second)
	}
}

// podsMissing lists the Deployments of the management cluster, not scaled
// to zero, of which the session holds no container.
func podsMissing(ctx context.Context, l *lab.Lab, s *lab.Session) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("apps/v1")
	list.SetKind("DeploymentList")
	if err := l.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("cannot list Deployments: %w", err)
	}
	running := map[string]bool{}
	for _, p := range s.Pods {
		running[p.Namespace+"/"+p.Deployment] = true
	}
	var missing []string
	for _, d := range list.Items {
		replicas, found, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		key := d.GetNamespace() + "/" + d.GetName()
		if (!found || replicas > 0) && !running[key] {
			missing = append(missing, key)
		}
	}
	return missing, nil
}

// listMachines lists every Machine of the lab as a row of namespace, name,
// phase, node, provider ID and IP addresses, counts those Running with a
// Node, and says how many Machines there are to run: as many as there
// are, and at least as many as the MachineDeployments' replicas (a pool
// just applied has none yet).
func listMachines(ctx context.Context, l *lab.Lab) ([][]string, int, int, error) {
	deployments := &unstructured.UnstructuredList{}
	deployments.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	deployments.SetKind("MachineDeploymentList")
	if err := l.Client.List(ctx, deployments); err != nil {
		return nil, 0, 0, fmt.Errorf("cannot list MachineDeployments: %w", err)
	}
	want := 0
	for _, d := range deployments.Items {
		replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		want += int(replicas)
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	list.SetKind("MachineList")
	if err := l.Client.List(ctx, list); err != nil {
		return nil, 0, 0, fmt.Errorf("cannot list Machines: %w", err)
	}
	var rows [][]string
	running := 0
	for _, m := range list.Items {
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
		if phase == "Running" && node != "" {
			running++
		}
		rows = append(rows, []string{m.GetNamespace(), m.GetName(), dash(phase), dash(node), dash(id), dash(addresses(m))})
	}
	return rows, running, max(want, len(rows)), nil
}

// addresses is the comma-separated IP addresses of Machine m
// (status.addresses of types InternalIP and ExternalIP, which Cluster API
// copies from the ProxmoxMachine), each once.
func addresses(m unstructured.Unstructured) string {
	list, _, _ := unstructured.NestedSlice(m.Object, "status", "addresses")
	var out []string
	for _, a := range list {
		e, _ := a.(map[string]any)
		addr, _ := e["address"].(string)
		if (e["type"] == "InternalIP" || e["type"] == "ExternalIP") && addr != "" && !slices.Contains(out, addr) {
			out = append(out, addr)
		}
	}
	return strings.Join(out, ",")
}

// down stops the supervisor with SIGTERM (it stops what it started),
// then kills by pid any process of the lab still alive.
func down(args []string, out io.Writer) error {
	_, dir, err := parse("down", args, nil)
	if err != nil {
		return err
	}
	s, err := lab.ReadSession(dir)
	if errors.Is(err, lab.ErrNoLab) && s.Pid == 0 {
		fmt.Fprintf(out, "no lab runs in %s\n", dir)
		return nil
	}
	if s.Pid != 0 && lab.Alive(s.Pid) {
		if err := syscall.Kill(s.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("cannot stop the supervisor (pid %d): %w", s.Pid, err)
		}
		deadline := time.Now().Add(downTimeout)
		for lab.Alive(s.Pid) && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
	}
	// The supervisor has stopped its processes; give the kernel a moment
	// to let them go before killing what is left.
	for deadline := time.Now().Add(5 * time.Second); anyAlive(s.Processes) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	var killed []string
	for _, p := range append([]lab.Process{{Pid: s.Pid}}, s.Processes...) {
		if p.Pid == 0 || !lab.Alive(p.Pid) || (p.Name != "" && lab.Comm(p.Pid) != p.Name) {
			continue
		}
		if err := syscall.Kill(p.Pid, syscall.SIGKILL); err == nil {
			killed = append(killed, fmt.Sprintf("%s (pid %d)", dash(p.Name), p.Pid))
		}
	}
	_ = os.Remove(filepath.Join(dir, lab.SessionFile))
	if len(killed) > 0 {
		fmt.Fprintf(out, "lab stopped; killed what did not stop: %s\n", strings.Join(killed, ", "))
		return nil
	}
	fmt.Fprintf(out, "lab stopped: %d processes\n", len(s.Processes)+1)
	return nil
}

func anyAlive(ps []lab.Process) bool {
	for _, p := range ps {
		if state(p.Pid, p.Name) == "running" {
			return true
		}
	}
	return false
}

// state is "running", or "gone" when pid has ended or now names another
// program than name.
func state(pid int, name string) string {
	if !lab.Alive(pid) || (name != "" && lab.Comm(pid) != name) {
		return "gone"
	}
	return "running"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
