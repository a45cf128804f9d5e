// Package credlint checks the Proxmox API credentials Secrets of the
// Proxmox substrate: the capmox Secret (PROXMOX_URL, PROXMOX_TOKEN,
// PROXMOX_SECRET, or the per-cluster url, token, secret) and the CCM/CSI
// Secret (url, token_id, token_secret, region). It names the known pitfalls
// (a doubled /api2/json, a token id without its user, a secret in the wrong
// key...) with what to do, and can probe GET /version with the token.
//
// It never prints or returns a secret value, and the probe always verifies
// TLS.
package credlint
