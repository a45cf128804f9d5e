// Package tenantplan plans the isolation of a set of tenants on a Proxmox
// VE cluster: one resource pool, one dedicated storage, one user and
// privilege-separated CSI and CCM tokens per tenant, plus the platform's
// capmox credentials. The capmox token that clones a tenant's VMs gets
// SDN.Use on the tenant's networks and Mapping.Use on the PCI resource
// mappings (GPUs) the tenant lists; a tenant's own capmox token gets
// nothing of another tenant's, and a mapping belongs to one tenant.
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
