// Package usercfg reads and writes /etc/pve/user.cfg exactly as Proxmox VE
// does.
//
// Parse reads a file into a pveacl.Config the way PVE's parse_user_config
// does: it never fails, and whatever PVE would skip it skips too, with
// PVE's own warning text. Marshal writes the canonical file in the order
// PVE's write_user_config uses. Writing a parsed canonical file
// reproduces it byte for byte, which the fuzz target FuzzUserCfg checks.
package usercfg
