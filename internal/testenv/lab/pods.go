package lab

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// The management cluster runs a tenant's Proxmox CCM and CSI controller as
// the Deployments the render makes (<cluster>-pccm, <cluster>-pcsi-controller).
// The lab has no kubelet for them: it plays one. Every second it lists the
// Deployments of the management API server, and runs one whose every
// container is a program it has (Programs) as a Pod would run: its
// Secret volumes written to folders from the Secrets, its emptyDirs
// folders, its init containers to completion, then its containers, each
// restarted when it exits, until the Deployment goes or is scaled to zero.
//
// What a container runs is the render's: its command, arguments and
// environment, with only what the Pod's sandbox makes of them changed
// (Invocations): a volume's mount path becomes the volume's folder, a
// container port a free port of this machine, and the image's program a
// program of the cache (hack/ccmcsi-assets.sh). The environment gains the
// trust store (SSL_CERT_FILE, the Proxmox VE fake's CA, which a real
// image's CA bundle holds or insecure: true skips).

// Invocation is one container of a rendered Pod as the lab runs it.
type Invocation struct {
	Container string
	// Path is the program and Args its arguments: the container's
	// command and arguments, rewritten for this machine.
	Path string
	Args []string
	// Env are the variables the container's spec sets and the lab's
	// additions, KEY=value.
	Env []string
}

// PodHost says where a Pod's sandbox is on this machine.
type PodHost struct {
	// Volumes are the folders of the Pod's volumes, by name.
	Volumes map[string]string
	// Ports are the machine's ports of the containers' ports.
	Ports map[int32]int
	// Program finds the program of a container that names no command.
	Program func(container string) (string, error)
	// Env is added to every container's environment.
	Env []string
}

// Invocations returns how the lab runs the init containers and the
// containers of spec on host.
func Invocations(spec corev1.PodSpec, host PodHost) (init, containers []Invocation, err error) {
	for _, c := range spec.InitContainers {
		inv, err := invocation(c, host)
		if err != nil {
			return nil, nil, err
		}
		init = append(init, inv)
	}
	for _, c := range spec.Containers {
		inv, err := invocation(c, host)
		if err != nil {
			return nil, nil, err
		}
		containers = append(containers, inv)
	}
	return init, containers, nil
}

func invocation(c corev1.Container, host PodHost) (Invocation, error) {
	inv := Invocation{Container: c.Name}
	argv := slices.Concat(c.Command, c.Args)
	if len(c.Command) == 0 {
		path, err := host.Program(c.Name)
		if err != nil {
			return Invocation{}, err
		}
		argv = append([]string{path}, argv...)
	}
	mounts := slices.Clone(c.VolumeMounts)
	// the longest mount path first: /etc/proxmox-credentials before /etc/proxmox
	slices.SortFunc(mounts, func(a, b corev1.VolumeMount) int { return len(b.MountPath) - len(a.MountPath) })
	for i, a := range argv {
		for _, m := range mounts {
			dir, ok := host.Volumes[m.Name]
			if !ok {
				return Invocation{}, fmt.Errorf("container %s mounts volume %s, which the Pod does not have", c.Name, m.Name)
			}
			a = replacePath(a, m.MountPath, dir)
		}
		for _, p := range c.Ports {
			if port, ok := host.Ports[p.ContainerPort]; ok && strings.HasSuffix(a, "="+strconv.Itoa(int(p.ContainerPort))) {
				a = strings.TrimSuffix(a, strconv.Itoa(int(p.ContainerPort))) + strconv.Itoa(port)
			}
		}
		argv[i] = a
	}
	inv.Path, inv.Args = argv[0], argv[1:]
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return Invocation{}, fmt.Errorf("container %s: variable %s comes from %v, which the lab does not resolve", c.Name, e.Name, e.ValueFrom)
		}
		inv.Env = append(inv.Env, e.Name+"="+e.Value)
	}
	inv.Env = append(inv.Env, host.Env...)
	return inv, nil
}

// replacePath replaces path in s wherever it ends at a path boundary
// (the end of s, a slash, or a character a file name does not use here):
// /etc/proxmox in /etc/proxmox/config.yaml and ${X:-/etc/proxmox}, not in
// /etc/proxmox-credentials.
func replacePath(s, path, dir string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, path)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(path)
		if end == len(s) || !isNameByte(s[end]) {
			b.WriteString(s[:i] + dir)
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// podRunner plays the management cluster's kubelet for the Deployments
// whose containers are all programs the lab has.
type podRunner struct {
	l        *Lab
	c        client.Client // the management API server, with the apps kinds
	programs func(container string) (string, error)
	env      []string
	// scratch holds the Pods' emptyDirs: a short folder of the temporary
	// folder, since a Unix socket's path (the CSI controller's csi.sock)
	// may not be longer than 107 bytes, which a lab's Dir may make it.
	scratch string
	mu      sync.Mutex
	pods    map[client.ObjectKey]*pod
	// skipped are the Deployments not run, with why, logged once.
	skipped map[client.ObjectKey]string
	// changed, when set, is called once a Pod has started or stopped.
	changed func()
	cancel  context.CancelFunc
	done    chan struct{}
}

// pod is one running Deployment's Pod.
type pod struct {
	key        client.ObjectKey
	uid        string
	containers []*testproc.Process
	invs       []Invocation
	init       []Invocation
	// volumes are the folders of its volumes, by name.
	volumes map[string]string
}

// PodPoll is how often the lab's kubelet of the management cluster looks
// at the Deployments.
const PodPoll = time.Second

func (r *podRunner) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		t := time.NewTicker(PodPoll)
		defer t.Stop()
		for {
			r.sync(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// stop ends the loop and every Pod's containers.
func (r *podRunner) stop() error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for k, p := range r.pods {
		errs = append(errs, p.stop())
		delete(r.pods, k)
	}
	return errors.Join(errs...)
}

func (p *pod) stop() error {
	var errs []error
	for _, c := range slices.Backward(p.containers) {
		if c.Running() {
			errs = append(errs, c.Stop())
		}
	}
	return errors.Join(errs...)
}

// sync starts the Pods of new Deployments, restarts containers that
// exited and stops the Pods of Deployments that are gone.
func (r *podRunner) sync(ctx context.Context) {
	var list appsv1.DeploymentList
	if err := r.c.List(ctx, &list); err != nil {
		if ctx.Err() == nil {
			r.l.log("pods: cannot list Deployments: " + err.Error())
		}
		return
	}
	seen := map[client.ObjectKey]bool{}
	for i := range list.Items {
		d := &list.Items[i]
		key := client.ObjectKeyFromObject(d)
		if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 {
			continue // scaled to zero: no Pod
		}
		seen[key] = true
		r.mu.Lock()
		p := r.pods[key]
		r.mu.Unlock()
		if p != nil && p.uid == string(d.UID) {
			r.restartExited(p)
			continue
		}
		if p != nil { // replaced under the same name
			_ = p.stop()
		}
		r.run(ctx, d)
	}
	r.mu.Lock()
	gone := 0
	for key, p := range r.pods {
		if !seen[key] {
			r.l.log(fmt.Sprintf("pods: Deployment %s is gone or scaled to zero; its containers stop", key))
			_ = p.stop()
			delete(r.pods, key)
			gone++
		}
	}
	changed := r.changed
	r.mu.Unlock()
	if gone > 0 && changed != nil {
		changed()
	}
}

func (r *podRunner) restartExited(p *pod) {
	for i, c := range p.containers {
		if c.Running() {
			continue
		}
		r.l.log(fmt.Sprintf("pods: %s container %s exited (%v); restarting it", p.key, p.invs[i].Container, c.Err()))
		if err := c.Start(); err != nil {
			r.l.log(fmt.Sprintf("pods: %s: %v", p.key, err))
		}
	}
}

// errNotYet is a Pod that cannot start yet: a Secret it mounts is
// missing, as a kubelet waits for it.
var errNotYet = errors.New("not yet")

func (r *podRunner) skip(key client.ObjectKey, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.skipped[key] != why {
		r.skipped[key] = why
		r.l.log(fmt.Sprintf("pods: Deployment %s does not run yet: %s", key, why))
	}
}

func (r *podRunner) run(ctx context.Context, d *appsv1.Deployment) {
	key := client.ObjectKeyFromObject(d)
	spec := d.Spec.Template.Spec
	for _, c := range spec.Containers {
		if _, err := r.programs(c.Name); err != nil {
			r.skip(key, err.Error())
			return
		}
	}
	p, err := r.prepare(ctx, d)
	if err != nil {
		r.skip(key, err.Error())
		return
	}
	for _, inv := range p.init {
		if err := r.runInit(ctx, key, inv); err != nil {
			r.skip(key, err.Error())
			return
		}
	}
	for i, inv := range p.invs {
		proc := capi.Process(key.Name+"/"+inv.Container, inv.Path, inv.Args, inv.Env, r.logFile(key, inv.Container))
		proc.Ready = r.ready(spec.Containers[i], inv, proc)
		proc.StartTimeout = programReadyTimeout
		if err := proc.Start(); err != nil {
			_ = p.stop()
			r.skip(key, err.Error())
			return
		}
		p.containers = append(p.containers, proc)
		r.l.log(fmt.Sprintf("pods: %s container %s runs (pid %d)", key, inv.Container, proc.Pid()))
	}
	r.mu.Lock()
	r.pods[key] = p
	delete(r.skipped, key)
	changed := r.changed
	r.mu.Unlock()
	if changed != nil {
		changed()
	}
}

// ready is when a container serves: the CSI controller once its socket
// exists (its sidecars start after it, as they wait for it in a Pod).
func (r *podRunner) ready(c corev1.Container, inv Invocation, proc *testproc.Process) func() error {
	for _, a := range inv.Args {
		if sock, ok := strings.CutPrefix(a, "--csi-address=unix://"); ok && c.Name == CSIControllerContainer {
			return func() error {
				_, err := os.Stat(sock)
				return err
			}
		}
	}
	return nil
}

// PodVolume is the folder of a running Pod's volume: a Secret's in the
// lab's Dir, an emptyDir in the lab's scratch folder; "" when the lab runs
// no such Pod or volume.
func (l *Lab) PodVolume(namespace, deployment, volume string) string {
	if l.pods == nil {
		return ""
	}
	l.pods.mu.Lock()
	defer l.pods.mu.Unlock()
	if p := l.pods.pods[client.ObjectKey{Namespace: namespace, Name: deployment}]; p != nil {
		return p.volumes[volume]
	}
	return ""
}

// LogFile is the file a Pod's container logs to, in the lab's Dir.
func (l *Lab) LogFile(namespace, deployment, container string) string {
	return filepath.Join(l.Dir, "pods", namespace+"."+deployment, container+".log")
}

func (r *podRunner) logFile(key client.ObjectKey, container string) string {
	return r.l.LogFile(key.Namespace, key.Name, container)
}

// emptyDir makes, empty, the folder of the Pod's emptyDir volume name
// under the scratch folder, named by a hash of the Pod's key.
func (r *podRunner) emptyDir(key client.ObjectKey, name string) (string, error) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key.String()))
	dir := filepath.Join(r.scratch, fmt.Sprintf("%08x", h.Sum32()), name)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o700)
}

// prepare makes the Pod's volumes and ports and its invocations.
func (r *podRunner) prepare(ctx context.Context, d *appsv1.Deployment) (*pod, error) {
	key := client.ObjectKeyFromObject(d)
	spec := d.Spec.Template.Spec
	root := filepath.Join(r.l.Dir, "pods", key.Namespace+"."+key.Name)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	host := PodHost{Volumes: map[string]string{}, Ports: map[int32]int{}, Program: r.programs, Env: r.env}
	for _, v := range spec.Volumes {
		dir := filepath.Join(root, v.Name)
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		switch {
		case v.Secret != nil:
			if err := r.secretVolume(ctx, key.Namespace, v.Secret, dir); err != nil {
				return nil, err
			}
		case v.EmptyDir != nil:
			var err error
			if dir, err = r.emptyDir(key, v.Name); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("volume %s is neither a Secret nor an emptyDir", v.Name)
		}
		host.Volumes[v.Name] = dir
	}
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			port, err := testproc.FreePort()
			if err != nil {
				return nil, err
			}
			host.Ports[p.ContainerPort] = port
		}
	}
	init, invs, err := Invocations(spec, host)
	if err != nil {
		return nil, err
	}
	return &pod{key: key, uid: string(d.UID), init: init, invs: invs, volumes: host.Volumes}, nil
}

// secretVolume writes a Secret's keys (or its items) into dir, as the
// kubelet projects a Secret volume; a missing Secret is errNotYet.
func (r *podRunner) secretVolume(ctx context.Context, ns string, v *corev1.SecretVolumeSource, dir string) error {
	var sec corev1.Secret
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: v.SecretName}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: Secret %s/%s is missing", errNotYet, ns, v.SecretName)
		}
		return err
	}
	files := map[string][]byte{}
	if len(v.Items) == 0 {
		for k, val := range sec.Data {
			files[k] = val
		}
	}
	for _, it := range v.Items {
		val, ok := sec.Data[it.Key]
		if !ok {
			return fmt.Errorf("%w: Secret %s/%s has no key %s", errNotYet, ns, v.SecretName, it.Key)
		}
		files[it.Path] = val
	}
	for name, val := range files {
		if err := os.WriteFile(filepath.Join(dir, name), val, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// runInit runs an init container to completion.
func (r *podRunner) runInit(ctx context.Context, key client.ObjectKey, inv Invocation) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, inv.Path, inv.Args...)
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, inv.Env...)
	out, err := cmd.CombinedOutput()
	if werr := os.WriteFile(r.logFile(key, inv.Container), out, 0o600); werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("init container %s failed: %v: %s", inv.Container, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// OnPodsChanged has f called whenever the lab starts or stops a Pod (the
// lab's supervisor rewrites its session file).
func (l *Lab) OnPodsChanged(f func()) {
	if l.pods == nil {
		return
	}
	l.pods.mu.Lock()
	defer l.pods.mu.Unlock()
	l.pods.changed = f
}

// Pod is a running Deployment's containers, for tests and status.
type Pod struct {
	Namespace, Deployment string
	Containers            []Invocation
	// Pids are the containers' process ids, in Containers' order.
	Pids []int
}

// Pods returns the Deployments the lab runs.
func (l *Lab) Pods() []Pod {
	if l.pods == nil {
		return nil
	}
	r := l.pods
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Pod
	for _, p := range r.pods {
		pd := Pod{Namespace: p.key.Namespace, Deployment: p.key.Name, Containers: p.invs}
		for _, c := range p.containers {
			pd.Pids = append(pd.Pids, c.Pid())
		}
		out = append(out, pd)
	}
	slices.SortFunc(out, func(a, b Pod) int { return strings.Compare(a.Namespace+"/"+a.Deployment, b.Namespace+"/"+b.Deployment) })
	return out
}
