package charts

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	helmvalues "helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// guide is the operator guide whose install commands the package test runs.
const guide = "../docs/operator-guide.md"

// guideCommands returns the commands of the guide that start with prefix:
// the lines of its sh blocks (continuations joined) and its inline code
// spans, in the order they appear.
func guideCommands(t *testing.T, prefix string) [][]string {
	t.Helper()
	b, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	inBlock, pending := false, ""
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			inBlock = !inBlock && strings.TrimPrefix(line, "```") == "sh"
		case inBlock:
			pending += line
			if strings.HasSuffix(pending, "\\") {
				pending = strings.TrimSuffix(pending, "\\") + " "
				continue
			}
			if strings.HasPrefix(pending, prefix+" ") {
				out = append(out, strings.Fields(pending))
			}
			pending = ""
		default:
			parts := strings.Split(line, "`")
			for i := 1; i < len(parts); i += 2 {
				if strings.HasPrefix(parts[i], prefix+" ") {
					out = append(out, strings.Fields(parts[i]))
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s shows no %q command", guide, prefix)
	}
	return out
}

// helmCommand is one `helm install` or `helm uninstall` of the guide.
type helmCommand struct {
	verb, release, chart, namespace string
	createNamespace                 bool
	values                          helmvalues.Options
}

// parseHelm parses words as Helm's CLI would, for the flags the guide may
// use; any other flag fails the test, so the guide cannot show one the
// test does not run. files maps a values file the guide names (the
// operator's own, such as values.yaml) to the test's.
func parseHelm(t *testing.T, words []string, files map[string]string) helmCommand {
	t.Helper()
	if len(words) < 3 || words[0] != "helm" {
		t.Fatalf("not a helm command: %q", words)
	}
	c := helmCommand{verb: words[1]}
	fs := pflag.NewFlagSet("helm "+c.verb, pflag.ContinueOnError)
	fs.StringVarP(&c.namespace, "namespace", "n", "default", "")
	if c.verb == "install" {
		fs.BoolVar(&c.createNamespace, "create-namespace", false, "")
		fs.StringArrayVar(&c.values.Values, "set", nil, "")
		fs.StringSliceVarP(&c.values.ValueFiles, "values", "f", nil, "")
	}
	if err := fs.Parse(words[2:]); err != nil {
		t.Fatalf("%s: %q: %v", guide, strings.Join(words, " "), err)
	}
	args := fs.Args()
	want := map[string]int{"install": 2, "uninstall": 1}[c.verb]
	if len(args) != want {
		t.Fatalf("%s: %q: want %d arguments, got %q", guide, strings.Join(words, " "), want, args)
	}
	c.release = args[0]
	if c.verb == "install" {
		c.chart = filepath.Join("..", args[1])
	}
	for i, f := range c.values.ValueFiles {
		local, ok := files[f]
		if !ok {
			t.Fatalf("%s: %q names the values file %s, which the test does not provide", guide, strings.Join(words, " "), f)
		}
		c.values.ValueFiles[i] = local
	}
	return c
}

// run plays c with Helm's SDK on the API server of kubeconfig.
func (c helmCommand) run(t *testing.T, kubeconfig string) {
	t.Helper()
	cfg := helmConfig(t, kubeconfig, c.namespace)
	switch c.verb {
	case "install":
		vals, err := c.values.MergeValues(getter.Providers{})
		if err != nil {
			t.Fatalf("helm install %s: values: %v", c.release, err)
		}
		ch, err := loader.Load(c.chart)
		if err != nil {
			t.Fatal(err)
		}
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace, in.CreateNamespace = c.release, c.namespace, c.createNamespace
		if _, err := in.RunWithContext(context.Background(), ch, vals); err != nil {
			t.Fatalf("helm install %s %s: %v", c.release, c.chart, err)
		}
	case "uninstall":
		uninstall(t, cfg, c.release)
	default:
		t.Fatalf("the test does not run helm %s", c.verb)
	}
}

// buildController builds the controller binary into a temporary folder.
func buildController(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "proxmox-network-controller")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/pxsubstrate/pxsubstrate/cmd/proxmox-network-controller")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build the controller: %v\n%s", err, out)
	}
	return bin
}

// impersonating writes a kubeconfig for cfg's API server that acts as user.
func impersonating(t *testing.T, cfg *rest.Config, user string) string {
	t.Helper()
	return testenv.KubeconfigFile(t, cfg, user)
}

// deploymentArgs returns the installed Deployment's ServiceAccount and
// container args, with the listen addresses moved to free local ports.
func deploymentArgs(t *testing.T, c client.Client) (serviceAccount string, out []string) {
	t.Helper()
	d := &unstructured.Unstructured{}
	d.SetAPIVersion("apps/v1")
	d.SetKind("Deployment")
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "proxmox-network-controller"}, d); err != nil {
		t.Fatalf("the chart's Deployment: %v", err)
	}
	serviceAccount, _, _ = unstructured.NestedString(d.Object, "spec", "template", "spec", "serviceAccountName")
	for _, a := range args(t, []*unstructured.Unstructured{d}) {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=127.0.0.1:0"
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=127.0.0.1:0"
		}
		out = append(out, a)
	}
	return serviceAccount, out
}

// packageValues is the operator's values.yaml of the guide's install: a
// zone, the trunk, and OVN NB at endpoint without TLS.
func packageValues(t *testing.T, endpoint string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	doc := fmt.Sprintf(`providerNetwork: {create: true, name: pkgtrunk}
zones:
- {name: zone-pkg, bridge: vmbr7, vlanRanges: ["300-309"], uplinkVLAN: 70, uplinkBridges: [vmbr0]}
ovn: {nbAddress: %q, tlsSecret: ""}
`, endpoint)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFromPackage installs the package as the operator guide says, with
// the guide's own helm commands played through Helm's SDK on a real API
// server, then runs the controller binary with the installed Deployment's
// arguments as the Deployment's ServiceAccount (impersonated, so only the
// chart's RBAC applies): the zone and two networks converge against a real
// OVN NB, the chart's admission policy refuses a machine on a VLAN the
// tenant does not hold next to an admitted one on its own, and the
// guide's uninstall order leaves the VLANs of networks in use in place.
func TestFromPackage(t *testing.T) {
	ctx := context.Background()
	bin := buildController(t)
	cfg, admin := startAPIServer(t)
	controllertest.Create(t, admin, sim.Namespace("cozy-kubeovn", nil))
	nb := ovngatewaytest.StartReal(t)
	k := controllertest.NewKubeOVN(nb.Endpoint())
	t.Cleanup(k.Close)
	step := func() error { return k.React(ctx, admin) }
	kubeconfigPath := testenv.KubeconfigFile(t, cfg, "")

	files := map[string]string{"values.yaml": packageValues(t, nb.Endpoint())}
	installs := guideCommands(t, "helm install")
	if len(installs) != 2 {
		t.Fatalf("%s shows %d helm install commands, want the CRDs chart and the package", guide, len(installs))
	}
	for _, words := range installs {
		parseHelm(t, words, files).run(t, kubeconfigPath)
	}

	// Kube-OVN's part: the trunk is ready on one node.
	cl := controllertest.Cluster{Zone: "zone-pkg", Bridge: "vmbr7", ProviderNetwork: "pkgtrunk", VPC: "vpc-pkg", Tenant: "tenant-pkg", Net: 70}
	controllertest.Create(t, admin, sim.Namespace(cl.Tenant, nil))
	controllertest.Create(t, admin, cl.Node("pkg-node-1"))
	pn := &kubeovnv1.ProviderNetwork{}
	if err := admin.Get(ctx, client.ObjectKey{Name: cl.ProviderNetwork}, pn); err != nil {
		t.Fatalf("the chart's ProviderNetwork: %v", err)
	}
	pn.Status.Ready, pn.Status.ReadyNodes = true, []string{"pkg-node-1"}
	if err := admin.Status().Update(ctx, pn); err != nil {
		t.Fatal(err)
	}

	sa, args := deploymentArgs(t, admin)
	p := startController(t, bin, impersonating(t, cfg, "system:serviceaccount:"+namespace+":"+sa), args)

	names := []string{cl.AddNetwork(t, admin, 0), cl.AddNetwork(t, admin, 1)}
	controllertest.Eventually(t, 90*time.Second, step, func() (bool, string) {
		for _, n := range names {
			if ok, why := cl.Ready(ctx, admin, n); !ok {
				return false, why
			}
		}
		return zoneReady(ctx, admin, cl.Zone)
	})
	vlan := networkVLAN(t, admin, cl, names[0])

	// The chart's machine-binding policy, enforced by the API server.
	own := sim.Machine(cl.Tenant, "vm-own", "v1alpha1", cl.Bridge, vlan, names[0])
	if err := admin.Create(ctx, own); err != nil {
		t.Errorf("a machine on the tenant's own VLAN %d was refused: %v", vlan, err)
	}
	foreign := sim.Machine(cl.Tenant, "vm-foreign", "v1alpha1", cl.Bridge, 309, names[0])
	err := admin.Create(ctx, foreign)
	if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "proxmox-network-machine-binding") {
		t.Errorf("a machine on VLAN 309, which the tenant does not hold, was not refused by the chart's policy: %v", err)
	}

	uninstallAsGuide(t, kubeconfigPath, files, p)
	// The networks' VLANs stay while they are in use: their finalizers
	// hold the networks, and Kube-OVN's Vlans are not ours to drop.
	for _, n := range names {
		v := &kubeovnv1.Vlan{}
		if err := admin.Get(ctx, client.ObjectKey{Name: n}, v); err != nil {
			t.Errorf("the Vlan of network %s is gone after the uninstall: %v", n, err)
		}
	}
}

// uninstallAsGuide plays the guide's helm uninstall commands; when the
// package's release goes, its Deployment's Pod stops, which p stands for.
func uninstallAsGuide(t *testing.T, kubeconfigPath string, files map[string]string, p *controllerProc) {
	t.Helper()
	uninstalls := guideCommands(t, "helm uninstall")
	releases := make([]string, 0, len(uninstalls))
	for _, words := range uninstalls {
		releases = append(releases, parseHelm(t, words, files).release)
	}
	if !slices.Equal(releases, []string{"proxmox-network", "proxmox-network-crds"}) {
		t.Fatalf("%s uninstalls %v; the package goes before its CRDs", guide, releases)
	}
	for _, words := range uninstalls {
		c := parseHelm(t, words, files)
		c.run(t, kubeconfigPath)
		if c.release == "proxmox-network" {
			if code := p.stop(); code != 0 {
				t.Errorf("the controller exited with %d on SIGTERM, want 0", code)
			}
		}
	}
}

// zoneReady reports whether zone is Ready.
func zoneReady(ctx context.Context, c client.Client, zone string) (bool, string) {
	z := &v1alpha1.ProxmoxNetworkZone{}
	if err := c.Get(ctx, client.ObjectKey{Name: zone}, z); err != nil {
		return false, err.Error()
	}
	for _, cond := range z.Status.Conditions {
		if cond.Type == v1alpha1.ConditionReady && cond.Status == "True" {
			return true, ""
		}
	}
	return false, fmt.Sprintf("zone %s: %+v", zone, z.Status.Conditions)
}

// networkVLAN returns the VLAN network name holds.
func networkVLAN(t *testing.T, c client.Client, cl controllertest.Cluster, name string) int {
	t.Helper()
	n := &v1alpha1.ProxmoxNetwork{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: cl.Tenant, Name: name}, n); err != nil {
		t.Fatal(err)
	}
	if n.Status.VLAN == 0 {
		t.Fatalf("network %s holds no VLAN", name)
	}
	return int(n.Status.VLAN)
}

// controllerProc is the controller process of the package test.
type controllerProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// startController runs bin with args as the Deployment's Pod would,
// stopping it when the test ends and printing its log when the test fails.
func startController(t *testing.T, bin, kubeconfigPath string, args []string) *controllerProc {
	t.Helper()
	p := &controllerProc{done: make(chan struct{}), log: filepath.Join(t.TempDir(), "controller.log")}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, append([]string{"--kubeconfig=" + kubeconfigPath}, args...)...)
	p.cmd.Env = append(os.Environ(), "POD_NAME=proxmox-network-controller-0", "POD_NAMESPACE="+namespace)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("controller log:\n%s", b)
		}
	})
	return p
}

// stop sends SIGTERM, as the kubelet does, and returns the exit code.
func (p *controllerProc) stop() int {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return p.cmd.ProcessState.ExitCode()
}
