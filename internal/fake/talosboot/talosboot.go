// Package talosboot reads what a Proxmox VM that capmox created boots with,
// as a Talos VM would: the NoCloud ISO capmox uploads and mounts as its
// CD-ROM (volume label cidata; files user-data, meta-data and, when
// addresses are static, network-config), and in user-data the Talos machine
// configuration, loaded and validated with Talos's own machinery. A
// configuration Talos would refuse to boot with is an error that names
// what Talos says.
//
// The Proxmox VE fake calls it when a VM starts, so that a worker "boots"
// only with the configuration the Talos bootstrap provider rendered.
package talosboot

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"time"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"sigs.k8s.io/yaml"
)

// ISO block size, as capmox's go-proxmox builds the image.
const blockSize = 2048

// Boot is what a VM read from its NoCloud ISO.
type Boot struct {
	// UserData is the Talos machine configuration, as uploaded.
	UserData []byte
	// Config is UserData loaded by Talos's machinery.
	Config config.Provider
	// Endpoint is the cluster's control-plane endpoint the configuration
	// names (cluster.controlPlane.endpoint): where the kubelet registers.
	Endpoint *url.URL
	// Meta is meta-data: instance-id (the VM's SMBIOS UUID), hostname,
	// local-hostname and, when capmox injects it, provider-id.
	Meta Meta
	// NetworkConfig is the netplan document of static addresses, nil
	// without one.
	NetworkConfig []byte
}

// Meta is cloud-init's NoCloud meta-data as capmox writes it.
type Meta struct {
	InstanceID        string `json:"instance-id"`
	Hostname          string `json:"hostname"`
	LocalHostname     string `json:"local-hostname"`
	ProviderID        string `json:"provider-id,omitempty"`
	KubernetesVersion string `json:"kubernetes-version,omitempty"`
}

// ErrNotNoCloud is an image that is not a NoCloud ISO with user-data.
var ErrNotNoCloud = errors.New("not a NoCloud ISO 9660 image with user-data")

// ErrInvalidConfig is a user-data Talos does not boot with.
var ErrInvalidConfig = errors.New("the Talos machine configuration is invalid")

// Read reads the NoCloud files of iso and loads and validates the Talos
// machine configuration in user-data, as Talos does when it boots in a
// cloud runtime (the nocloud platform Talos images for Proxmox run on).
func Read(iso []byte) (*Boot, error) {
	files, err := readISO(iso)
	if err != nil {
		return nil, err
	}
	b := &Boot{UserData: files["user-data"], NetworkConfig: files["network-config"]}
	if b.UserData == nil {
		return nil, fmt.Errorf("%w: the image holds no user-data file (it holds %s)", ErrNotNoCloud, names(files))
	}
	if md := files["meta-data"]; md != nil {
		if err := yaml.Unmarshal(md, &b.Meta); err != nil {
			return nil, fmt.Errorf("%w: meta-data: %w", ErrNotNoCloud, err)
		}
	}
	if b.Config, err = configloader.NewFromBytes(b.UserData); err != nil {
		return nil, fmt.Errorf("%w: Talos cannot load user-data: %w", ErrInvalidConfig, err)
	}
	if _, err := b.Config.Validate(cloudMode{}); err != nil {
		return nil, fmt.Errorf("%w: Talos refuses user-data: %w", ErrInvalidConfig, err)
	}
	if b.Config.Machine() == nil || b.Config.Cluster() == nil || b.Config.Cluster().Endpoint() == nil {
		return nil, fmt.Errorf("%w: user-data is not a machine configuration with a cluster endpoint", ErrInvalidConfig)
	}
	b.Endpoint = b.Config.Cluster().Endpoint()
	return b, nil
}

// Hostname is the name the node registers with: the configuration's
// machine.network.hostname, else meta-data's local-hostname.
func (b *Boot) Hostname() string {
	if b.Config != nil && b.Config.Machine() != nil {
		if n := b.Config.Machine().Network().Hostname(); n != "" {
			return n
		}
	}
	return b.Meta.LocalHostname
}

// readISO returns the files of the image's root folder by name. A
// malformed image that makes the ISO reader panic is ErrNotNoCloud too:
// a guest's disk never brings the hypervisor down.
func readISO(iso []byte) (files map[string][]byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			files, err = nil, fmt.Errorf("%w: the ISO 9660 reader failed: %v", ErrNotNoCloud, r)
		}
	}()
	if len(iso) < 17*blockSize {
		return nil, fmt.Errorf("%w: %d bytes is too short for a volume descriptor", ErrNotNoCloud, len(iso))
	}
	fsys, err := iso9660.Read(file.New(&memFile{Reader: bytes.NewReader(iso)}, true), int64(len(iso)), 0, blockSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotNoCloud, err)
	}
	entries, err := fsys.ReadDir(".")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotNoCloud, err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := fsys.ReadFile(e.Name())
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrNotNoCloud, e.Name(), err)
		}
		out[strings.ToLower(e.Name())] = data
	}
	return out, nil
}

func names(files map[string][]byte) string {
	if len(files) == 0 {
		return "no file"
	}
	var out []string
	for n := range files {
		out = append(out, n)
	}
	return strings.Join(out, ", ")
}

// cloudMode is Talos's cloud runtime mode: not in a container, and no
// install step (the image is the installed system), as for nocloud.
type cloudMode struct{}

func (cloudMode) String() string        { return "cloud" }
func (cloudMode) RequiresInstall() bool { return false }
func (cloudMode) InContainer() bool     { return false }

// memFile is an image held in memory as the read-only file go-diskfs reads.
type memFile struct {
	*bytes.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{size: f.Size()}, nil }
func (f *memFile) Close() error               { return nil }

type memInfo struct{ size int64 }

func (i memInfo) Name() string       { return "cidata.iso" }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
