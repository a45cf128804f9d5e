package pveapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// TestGuestConfigCreated reads the ctime of qemu-server's meta property,
// wherever it stands in the list; a meta without one, or with a ctime that
// is not a positive number, is no time.
func TestGuestConfigCreated(t *testing.T) {
	for meta, want := range map[string]time.Time{
		"creation-qemu=9.2.0,ctime=1733480000": time.Unix(1733480000, 0),
		"ctime=1733480001,creation-qemu=9.2.0": time.Unix(1733480001, 0),
		"creation-qemu=9.2.0":                  {},
		"ctime=soon":                           {},
		"ctime=-5":                             {},
		"":                                     {},
	} {
		if got := (pveapi.GuestConfig{Meta: meta}).Created(); !got.Equal(want) {
			t.Errorf("meta %q: created %v, want %v", meta, got, want)
		}
	}
}

// TestReadGuestConfig reads the VM's configuration at its escaped path and
// names the VM and the path when the read fails.
func TestReadGuestConfig(t *testing.T) {
	var asked string
	conf, err := pveapi.ReadGuestConfig(context.Background(), answer{data: `{"lock":"clone","meta":"ctime=10","digest":"x"}`, path: &asked}, "pve 1", 101)
	if err != nil || asked != "/nodes/pve%201/qemu/101/config" || conf.Lock != "clone" || !conf.Created().Equal(time.Unix(10, 0)) {
		t.Errorf("read %+v, %v at %s", conf, err, asked)
	}
	_, err = pveapi.ReadGuestConfig(context.Background(), answer{err: errors.New("403 Forbidden"), path: &asked}, "pve1", 102)
	if err == nil || !strings.Contains(err.Error(), "VM 102 (GET /nodes/pve1/qemu/102/config): 403 Forbidden") {
		t.Errorf("error %v", err)
	}
}

// FuzzGuestConfigCreated: any meta string reads as a time after the epoch
// or none, without a panic.
func FuzzGuestConfigCreated(f *testing.F) {
	f.Add("creation-qemu=9.2.0,ctime=1733480000")
	f.Add("ctime=99999999999999999999")
	f.Fuzz(func(t *testing.T, meta string) {
		if c := (pveapi.GuestConfig{Meta: meta}).Created(); !c.IsZero() && c.Unix() <= 0 {
			t.Fatalf("meta %q: created %v", meta, c)
		}
	})
}
