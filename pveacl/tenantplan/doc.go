// Package tenantplan plans the isolation of a set of tenants on a Proxmox
// VE cluster: one resource pool, one dedicated storage, one user and
// privilege-separated CSI and CCM tokens per tenant, plus the platform's
// capmox credentials.
//
// LoadTenants reads the specification (YAML or JSON), fills its defaults
// and reports every problem at once, each with its field. Plan compares it
// with an observed pveacl.Config and returns the missing steps as ordered,
// idempotent Changes (roles, pools, users, tokens, pool members, the
// removal of stray entries, ACL entries); Prune lists the removal of owned
// objects the specification no longer names. RenderPveum writes the steps
// as a pveum shell program, and Simulate plays them on a Config in memory,
// refusing what the Proxmox VE API would refuse, so that a plan can be
// checked (with package audit) before anything touches a cluster. Package
// liveacl performs the steps through the API.
package tenantplan
