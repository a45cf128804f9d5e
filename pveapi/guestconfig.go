package pveapi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// GuestConfig is the part of a VM's configuration (GET
// /nodes/{node}/qemu/{vmid}/config) that says whether a task holds it and
// when it was made; PVE sends more, which is left out.
type GuestConfig struct {
	// Lock is the VM's configuration lock (clone, migrate, backup, ...),
	// "" for none; unlike /cluster/resources it is current.
	Lock string `json:"lock"`
	// Meta is qemu-server's meta property:
	// "creation-qemu=9.2.0,ctime=1733480000".
	Meta string `json:"meta"`
	Name string `json:"name"`
}

// Created is the ctime of the VM's meta property, zero when absent (a VM
// made before PVE 7 or by hand without it).
func (c GuestConfig) Created() time.Time {
	for kv := range strings.SplitSeq(c.Meta, ",") {
		if v, ok := strings.CutPrefix(kv, "ctime="); ok {
			if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
				return time.Unix(s, 0)
			}
		}
	}
	return time.Time{}
}

// ReadGuestConfig reads the configuration of qemu VM vmid on node.
func ReadGuestConfig(ctx context.Context, c Getter, node string, vmid int) (GuestConfig, error) {
	var conf GuestConfig
	path := Path("nodes", node, "qemu", strconv.Itoa(vmid), "config")
	if err := c.Get(ctx, path, &conf); err != nil {
		return conf, fmt.Errorf("cannot read the configuration of VM %d (GET %s): %w", vmid, termsafe.Cut(path), err)
	}
	return conf, nil
}
