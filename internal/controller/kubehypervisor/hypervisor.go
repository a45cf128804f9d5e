// Package kubehypervisor is the network.Hypervisor of the proxmox-network
// controller: it reads a zone's credentials Secret from the Kubernetes API
// and checks the zone's Proxmox nodes with pvesdn.Check. It is the only
// part of the controller that holds a Proxmox token, and it never logs or
// returns one.
package kubehypervisor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/pvesdn"
)

var _ network.Hypervisor = Hypervisor{}

// Hypervisor checks through the zone's credentials Secret: keys url
// (https://HOST:8006), token_id, token_secret and, for a certificate the
// system does not trust, root_ca (PEM), as `acl apply` writes them. TLS is
// always verified.
type Hypervisor struct {
	Reader client.Reader
	// Timeout bounds one check; 0 means 30 seconds.
	Timeout time.Duration
}

// Check reads the Secret and runs pvesdn.Check.
func (h Hypervisor) Check(ctx context.Context, obj *v1alpha1.ProxmoxNetworkZone) (*pvesdn.Report, error) {
	z, err := network.SDNZone(obj)
	if err != nil {
		return nil, err
	}
	ref := obj.Spec.SDN.CredentialsRef
	sec := &corev1.Secret{}
	if err := h.Reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, sec); err != nil {
		return nil, fmt.Errorf("cannot read credentials Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	c, err := secretClient(sec)
	if err != nil {
		return nil, fmt.Errorf("credentials Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	timeout := h.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return pvesdn.Check(ctx, c, z)
}

func secretClient(sec *corev1.Secret) (*proxmox.Client, error) {
	url, id, secret := strings.TrimSpace(string(sec.Data["url"])), strings.TrimSpace(string(sec.Data["token_id"])),
		strings.TrimSpace(string(sec.Data["token_secret"]))
	if url == "" || id == "" || secret == "" {
		return nil, errors.New("keys url, token_id and token_secret are required")
	}
	if !strings.HasPrefix(url, "https://") {
		return nil, fmt.Errorf("url %q is not https://HOST:8006: the token is never sent in the clear", url)
	}
	url = strings.TrimSuffix(strings.TrimSuffix(url, "/"), "/api2/json") + "/api2/json"
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if ca := sec.Data["root_ca"]; len(ca) > 0 && !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("root_ca holds no PEM certificate")
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return proxmox.NewClient(url, proxmox.WithHTTPClient(hc), proxmox.WithAPIToken(id, secret), proxmox.WithLogger(quietLog{})), nil
}

// quietLog drops go-proxmox's lines: at debug level they carry bodies.
type quietLog struct{}

func (quietLog) Debugf(string, ...any) {}
func (quietLog) Errorf(string, ...any) {}
func (quietLog) Infof(string, ...any)  {}
func (quietLog) Warnf(string, ...any)  {}
