// Package kubehypervisor is the network.Hypervisor of the proxmox-network
// controller: it reads a zone's credentials Secret from the Kubernetes API
// and checks the zone's Proxmox nodes with pvesdn.Check. It is the only
// part of the controller that holds a Proxmox token, and it never logs or
// returns one.
package kubehypervisor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pvesdn"
)

var _ network.Hypervisor = Hypervisor{}

// Hypervisor checks through the zone's credentials Secret: keys url
// (https://HOST:8006), token_id, token_secret and, for a certificate the
// system does not trust, root_ca (PEM), as `acl apply` writes them (its
// region key is allowed). Any other key is refused by name. TLS is always
// verified, and the client is pveapi.New's.
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
	c, err := SecretClient(ctx, h.Reader, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	timeout := h.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return pvesdn.Check(ctx, c, z)
}

// The keys of a zone's credentials Secret, as acl apply writes them
// (region, which it writes for the CCM, is allowed and not read here).
const (
	keyURL    = "url"
	keyID     = "token_id"
	keySecret = "token_secret"
	keyCA     = "root_ca"
	keyRegion = "region"
)

var secretKeys = []string{keyURL, keyID, keySecret, keyCA, keyRegion}

// SecretClient reads a credentials Secret by name and builds its client,
// with the same keys and refusals as a zone's (the pool HA token's Secret
// has the same shape).
func SecretClient(ctx context.Context, r client.Reader, namespace, name string) (*proxmox.Client, error) {
	sec := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sec); err != nil {
		return nil, fmt.Errorf("cannot read credentials Secret %s/%s: %w", namespace, name, err)
	}
	c, err := secretClient(sec)
	if err != nil {
		return nil, fmt.Errorf("credentials Secret %s/%s: %w", namespace, name, err)
	}
	return c, nil
}

// secretClient builds the client of a credentials Secret through
// pveapi.New. A key the check does not read is refused by name, so that a
// CA under another key (ca.crt, as Kubernetes TLS Secrets spell it) is not
// ignored and the zone stuck with an unexplained TLS error.
func secretClient(sec *corev1.Secret) (*proxmox.Client, error) {
	for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
		switch {
		case k == "ca.crt" || k == "tls.crt":
			return nil, fmt.Errorf("key %s is not read: the CA certificate of the Proxmox VE API goes in key %s; rename the key", k, keyCA)
		case !slices.Contains(secretKeys, k):
			return nil, fmt.Errorf("key %q is not read: remove it (the keys are %s)", k, strings.Join(secretKeys, ", "))
		}
	}
	cfg := pveapi.Config{URL: strings.TrimSpace(string(sec.Data[keyURL])), TokenID: strings.TrimSpace(string(sec.Data[keyID])),
		Secret: strings.TrimSpace(string(sec.Data[keySecret])), CAPEM: sec.Data[keyCA],
		Names: pveapi.Names{URL: keyURL, TokenID: keyID, CA: keyCA, Secret: "key " + keySecret}}
	if cfg.URL == "" || cfg.TokenID == "" || cfg.Secret == "" {
		return nil, fmt.Errorf("keys %s, %s and %s are required", keyURL, keyID, keySecret)
	}
	return pveapi.New(cfg)
}
