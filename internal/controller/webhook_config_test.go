package controller_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/capread"
	"github.com/pxsubstrate/pxsubstrate/internal/controller"
)

// TestAdmissionConfigBounded: --admission-config naming an endless file
// (/dev/zero) or one larger than MaxAdmissionConfigBytes is refused by
// name instead of being read into memory; the control, a package values
// file of one zone, is read.
func TestAdmissionConfigBounded(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(good, []byte("zones:\n  - {name: default, bridge: vmbr70, uplinkVLAN: 70, uplinkBridges: [vmbr0]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := controller.AdmissionConfig(good); err != nil || len(cfg.Zones) != 1 {
		t.Fatalf("the control: %+v, %v", cfg, err)
	}
	big := filepath.Join(dir, "big.yaml")
	body := "zones: []\n#" + strings.Repeat("x", controller.MaxAdmissionConfigBytes) + "\n"
	if err := os.WriteFile(big, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{big, "/dev/zero"} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		_, err := controller.AdmissionConfig(path)
		if !errors.Is(err, capread.ErrTooLarge) || !strings.Contains(err.Error(), path+" is larger than 8 MiB") {
			t.Errorf("%s: %v", path, err)
		}
	}
}
