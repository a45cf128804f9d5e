#!/bin/sh
# Proxmox VE 9 access control for the tenants: 39 step(s).
set -eu

# create role: the role does not exist
pveum role add CozyCCM --privs VM.Audit,VM.GuestAgent.Audit

# create role: the role does not exist
pveum role add CozyCSI --privs VM.Audit,VM.Config.Disk

# create role: the role does not exist
pveum role add CozyCSIStorage --privs Datastore.Allocate,Datastore.AllocateSpace,Datastore.Audit

# create role: the role does not exist
pveum role add CozyCapmox --privs Datastore.Allocate,Datastore.AllocateSpace,Datastore.AllocateTemplate,Datastore.Audit,Pool.Audit,Sys.Audit,VM.Allocate,VM.Audit,VM.Clone,VM.Config.CDROM,VM.Config.CPU,VM.Config.Cloudinit,VM.Config.Disk,VM.Config.HWType,VM.Config.Memory,VM.Config.Network,VM.Config.Options,VM.GuestAgent.Audit,VM.Migrate,VM.PowerMgmt

# create role: the role does not exist
pveum role add CozyMapping --privs Mapping.Use

# create pool: the pool does not exist
pveum pool add alpha --comment 'pxsubstrate tenant alpha'

# create pool: the pool does not exist
pveum pool add tenant-beta --comment 'pxsubstrate tenant beta'

# create user: the user does not exist
pveum user add alpha@pve --enable 1 --comment 'pxsubstrate tenant alpha'

# create user: the user does not exist
pveum user add capmox@pve --enable 1 --comment 'pxsubstrate platform: cluster-api provider'

# create user: the user does not exist
pveum user add k8s-beta@pve --enable 1 --comment 'pxsubstrate tenant beta'

# create token: the token does not exist
pveum user token add alpha@pve ccm --privsep 1 --comment 'pxsubstrate tenant alpha: cloud-controller-manager'

# create token: the token does not exist
pveum user token add alpha@pve csi --privsep 1 --comment 'pxsubstrate tenant alpha: CSI controller'

# create token: the token does not exist
pveum user token add capmox@pve capi --privsep 1 --comment 'pxsubstrate platform: cluster-api provider'

# create token: the token does not exist
pveum user token add k8s-beta@pve ccm-beta --privsep 1 --comment 'pxsubstrate tenant beta: cloud-controller-manager'

# create token: the token does not exist
pveum user token add k8s-beta@pve csi-beta --privsep 1 --comment 'pxsubstrate tenant beta: CSI controller'

# add pool members: the pool lacks these members
pveum pool modify alpha --vms 1001 --storage alpha-disks

# add pool members: the pool lacks these members
pveum pool modify tenant-beta --storage beta-backup,beta-disks

# set ACL entries: the entry does not exist
pveum acl modify / --tokens 'alpha@pve!ccm' --roles PVEAuditor --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify / --tokens 'capmox@pve!capi' --roles CozyCapmox --propagate 1

# set ACL entries: the entry does not exist
pveum acl modify / --tokens 'k8s-beta@pve!ccm-beta' --roles PVEAuditor --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify / --users alpha@pve --roles PVEAuditor --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify / --users capmox@pve --roles CozyCapmox --propagate 1

# set ACL entries: the entry does not exist
pveum acl modify / --users k8s-beta@pve --roles PVEAuditor --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /mapping/pci/gpu-alpha --tokens 'capmox@pve!capi' --roles CozyMapping --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /mapping/pci/gpu-alpha --users capmox@pve --roles CozyMapping --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /pool/alpha --tokens 'alpha@pve!ccm' --roles CozyCCM --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /pool/alpha --tokens 'alpha@pve!csi' --roles CozyCSI --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /pool/alpha --users alpha@pve --roles CozyCCM,CozyCSI --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /pool/tenant-beta --tokens 'k8s-beta@pve!ccm-beta' --roles CozyCCM --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /pool/tenant-beta --tokens 'k8s-beta@pve!csi-beta' --roles CozyCSI --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /pool/tenant-beta --users k8s-beta@pve --roles CozyCCM,CozyCSI --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /sdn/zones/localnetwork/vmbr1/100 --tokens 'capmox@pve!capi' --roles PVESDNUser --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /sdn/zones/localnetwork/vmbr1/100 --users capmox@pve --roles PVESDNUser --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /storage/alpha-disks --tokens 'alpha@pve!csi' --roles CozyCSIStorage --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /storage/alpha-disks --users alpha@pve --roles CozyCSIStorage --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /storage/beta-backup --tokens 'k8s-beta@pve!csi-beta' --roles CozyCSIStorage --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /storage/beta-backup --users k8s-beta@pve --roles CozyCSIStorage --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /storage/beta-disks --tokens 'k8s-beta@pve!csi-beta' --roles CozyCSIStorage --propagate 0

# set ACL entries: the entry does not exist
pveum acl modify /storage/beta-disks --users k8s-beta@pve --roles CozyCSIStorage --propagate 0
