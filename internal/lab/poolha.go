package lab

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// PoolHASecret is the <namespace>/<name> of the pool HA token's Secret on
// the management API server (Options.PoolHA), and PoolHATokenID its token.
const (
	PoolHASecret  = "cozy-proxmox-network/pve-pool-ha"
	PoolHATokenID = "poolha@pve!ha"
)

// tokenKeep keeps the secrets an apply makes.
type tokenKeep map[string]string

func (tokenKeep) Check([]string) error { return nil }

func (k tokenKeep) Store(s liveacl.TokenSecret) (string, error) {
	k[s.TokenID] = s.Secret.Reveal()
	return "the lab's memory", nil
}

// poolHASecret makes the platform's pool HA user and token with pveacl's
// plan (platform.ha: CozyHA on / alone) and writes the Secret the
// controller reads, with the keys a zone's credentials Secret has.
func (l *Lab) poolHASecret(ctx context.Context) error {
	root, err := l.Root()
	if err != nil {
		return err
	}
	user, token, _ := strings.Cut(PoolHATokenID, "!")
	spec, err := tenantplan.LoadTenants(fmt.Appendf(nil, "platform:\n  ha: {user: %q, token: %q}\ntenants: []\n", user, token))
	if err != nil {
		return err
	}
	keep := tokenKeep{}
	if _, err := liveacl.Apply(ctx, root, spec, liveacl.WithSecretSink(keep)); err != nil {
		return fmt.Errorf("cannot make the pool HA token: %w", err)
	}
	ns, name, _ := strings.Cut(PoolHASecret, "/")
	if err := l.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{
		"url": []byte(l.Proxmox.URL), "token_id": []byte(PoolHATokenID), "token_secret": []byte(keep[PoolHATokenID]), "root_ca": l.Proxmox.CAPEM}}
	if err := l.Client.Create(ctx, sec); err != nil {
		return fmt.Errorf("cannot write the pool HA Secret %s: %w", PoolHASecret, err)
	}
	l.log("pool HA token " + PoolHATokenID + " in Secret " + PoolHASecret)
	return nil
}
