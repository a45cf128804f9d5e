package pveacl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

func TestIdentifiers(t *testing.T) {
	cases := map[string]struct {
		reason string
		check  func() error
		want   string // "" for success
	}{
		"User":          {"a plain user id", func() error { _, _, err := pveacl.ParseUserID("kubernetes-csi@pve"); return err }, ""},
		"UserWithAt":    {"the user part may hold '@'; the realm is what follows the last one", func() error { _, _, err := pveacl.ParseUserID("a@b@pve"); return err }, ""},
		"UserShort":     {"PVE's length rule", func() error { _, _, err := pveacl.ParseUserID("a@"); return err }, "user name 'a@' is too short"},
		"UserLong":      {"64 characters at most", func() error { _, _, err := pveacl.ParseUserID(string(make([]byte, 62)) + "@pve"); return err }, "is too long (66 > 64)"},
		"UserNoRealm":   {"a realm is required", func() error { _, _, err := pveacl.ParseUserID("kubernetes"); return err }, "value 'kubernetes' does not look like a valid user name"},
		"UserOneLetter": {"realms have two characters at least", func() error { _, _, err := pveacl.ParseUserID("ab@p"); return err }, "does not look like a valid user name"},
		"UserSlash":     {"no slash in the user part", func() error { _, _, err := pveacl.ParseUserID("a/b@pve"); return err }, "does not look like a valid user name"},
		"Token":         {"a full token id", func() error { _, _, err := pveacl.ParseTokenID("u@pve!csi"); return err }, ""},
		"TokenOneChar":  {"token names have two characters at least", func() error { _, _, err := pveacl.ParseTokenID("u@pve!t"); return err }, "'u@pve!t' is not a valid token ID - not able to split into user and token parts"},
		"TokenDigit":    {"token names start with a letter", func() error { _, _, err := pveacl.ParseTokenID("u@pve!1a"); return err }, "not a valid token ID"},
		"Group":         {"groups", func() error { return pveacl.ValidGroupID("tenants-1.a_b") }, ""},
		"GroupColon":    {"no colon in a group id (#7102)", func() error { return pveacl.ValidGroupID("a:b") }, "group name 'a:b' contains invalid characters"},
		"RolePVE":       {"custom roles cannot use the PVE namespace", func() error { return pveacl.ValidNewRoleID("pveCustom") }, "cannot use role ID starting with the (case-insensitive) 'PVE' namespace"},
		"RoleCozy":      {"a custom role", func() error { return pveacl.ValidNewRoleID("CozyCSI") }, ""},
		"PoolNested":    {"three levels are allowed", func() error { return pveacl.ValidPoolID("a/b/c") }, ""},
		"PoolDeep":      {"four are not", func() error { return pveacl.ValidPoolID("a/b/c/d") }, "pool name 'a/b/c/d' nested too deeply (max levels = 3)"},
		"PoolChars":     {"pool characters", func() error { return pveacl.ValidPoolID("a b") }, "pool name 'a b' contains invalid characters"},
		"PoolLetter":    {"created pools start with a letter", func() error { return pveacl.ValidNewPoolID("a/1b") }, "pool name must start with a letter"},
		"Storage":       {"storage ids", func() error { return pveacl.ValidStorageID("Local-LVM.2") }, ""},
		"StorageEnd":    {"storage ids end with a letter or digit", func() error { return pveacl.ValidStorageID("disks-") }, "storage ID 'disks-' is invalid"},
		"Realm":         {"realms are 32 characters at most", func() error { return pveacl.ValidRealm("r" + string(make([]byte, 32))) }, "does not look like a valid realm"},
		"PrivilegeListOK": {"lists split on commas, semicolons and spaces", func() error {
			_, err := pveacl.ParsePrivileges(pveacl.PVE9, "VM.Audit; Sys.Audit,,VM.Audit")
			return err
		}, ""},
		"PrivilegeMonitor": {"PVE 9 has no VM.Monitor", func() error { _, err := pveacl.ParsePrivileges(pveacl.PVE9, "VM.Monitor"); return err },
			"invalid privilege 'VM.Monitor' for PVE 9 (PVE 9 replaced VM.Monitor with VM.GuestAgent.Audit and Sys.Audit)"},
		"PrivilegeAgent8": {"PVE 8 has no guest-agent privileges", func() error { _, err := pveacl.ParsePrivileges(pveacl.PVE8, "VM.GuestAgent.Audit"); return err },
			"the VM.GuestAgent.* privileges exist from PVE 9 on"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s: unexpected error %v", tc.reason, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s: error %v, want one containing %q", tc.reason, err, tc.want)
			case err != nil && !errors.Is(err, pveacl.ErrInvalidID) && !errors.Is(err, pveacl.ErrInvalidPrivilege):
				t.Errorf("%s: error %v wraps no sentinel", tc.reason, err)
			}
		})
	}
}

func TestNormalizePath(t *testing.T) {
	cases := map[string]struct {
		in, want string
		ok       bool
	}{
		"Root":       {"/", "/", true},
		"Slashes":    {"//vms///100//", "/vms/100", true},
		"NoLeading":  {"vms/100", "/vms/100", true},
		"ZeroSlash":  {"0/", "/", true},
		"Empty":      {"", "", false},
		"Zero":       {"0", "", false},
		"Space":      {"/vms/1 0", "", false},
		"Unicode":    {"/pool/ü", "", false},
		"SDNVLANTag": {"/sdn/zones/localnetwork/vmbr1/100", "/sdn/zones/localnetwork/vmbr1/100", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := pveacl.NormalizePath(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("NormalizePath(%q) = %q, %v; want %q ok=%v", tc.in, got, err, tc.want, tc.ok)
			}
			if err != nil && !errors.Is(err, pveacl.ErrInvalidPath) {
				t.Errorf("error %v does not wrap ErrInvalidPath", err)
			}
		})
	}
}

func TestCheckPath(t *testing.T) {
	good := []string{"/", "/access/realm/pve", "/pool/a/b/c", "/vms/100", "/storage/local-lvm", "/nodes/pve1",
		"/sdn/zones/localnetwork/vmbr1/4094", "/mapping/pci/gpu1", "/sdn/prefix-lists/pl1"}
	bad := []string{"/vms/99", "/vms/0100", "/pool/a/b/c/d", "/users", "/kvm/vms", "/sdn/zones/z/b/10000", "/access/realms/pve"}
	for _, p := range good {
		if !pveacl.CheckPath(p) {
			t.Errorf("CheckPath(%q) = false, PVE accepts it", p)
		}
	}
	for _, p := range bad {
		if pveacl.CheckPath(p) {
			t.Errorf("CheckPath(%q) = true, PVE refuses it", p)
		}
	}
}
