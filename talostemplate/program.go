package talostemplate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Program renders the root shell program that builds the template on a
// Proxmox VE node: it checks it runs on a node, that the VMID is free and
// that no template carries the tag set yet, downloads and unpacks the
// nocloud image, creates the VM (OVMF with an EFI disk without pre-enrolled
// keys, virtio-scsi, the image imported as scsi0, serial console, guest
// agent, no NIC; with PCI mappings, which it checks exist, a q35 machine and
// a hostpciN per device), grows the disk, converts the VM into a template and
// shows its configuration. Every value is checked by Validate and single-quoted.
// The program is meant to be read before it is run.
func Program(s Spec) (string, error) {
	return program([]Spec{s})
}

// PerNodeProgram is the one program that builds each node's template (the
// specs PerNode returns): run on a node of the list, it builds that node's
// template with its VMID and tags, and on any other host it stops before
// doing anything. Run it as root on each node in turn.
func PerNodeProgram(specs []Spec) (string, error) {
	if len(specs) == 0 {
		return "", errors.New("cannot render the template program: no node's template is given")
	}
	for _, t := range specs {
		if t.Node == "" {
			return "", fmt.Errorf("cannot render the per-node template program: template %d names no node; make the specs with PerNode", t.VMID)
		}
	}
	return program(specs)
}

// program renders the program of specs[0], or with nodes the program of
// each node's template, told apart by the host's name.
func program(specs []Spec) (string, error) {
	for _, t := range specs {
		if err := t.Validate(); err != nil {
			return "", fmt.Errorf("cannot render the template program: %w", err)
		}
	}
	s := specs[0]
	var b strings.Builder
	w := func(lines ...string) {
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	b.WriteString(programHead(specs))
	b.WriteString(programChecks)
	if m, _ := s.GPUs(); m != "" {
		w("",
			"# qm create takes the PCI mapping without reading it: make sure it exists.",
			"if ! pvesh get /cluster/mapping/pci/"+shQuote(m)+" >/dev/null; then",
			`  echo "PCI mapping `+m+` does not exist: create it first (Datacenter, Resource Mappings)" >&2`,
			"  exit 1",
			"fi")
	}
	if s.FactoryCA == "" {
		w(`curl -fL --retry 3 -o "$work/disk.raw.xz" "$URL"`)
	} else {
		w("# The factory's CA certificates are trusted next to the system bundle,",
			"# for this download only; the node's trust store stays as it is.",
			`{ cat /etc/ssl/certs/ca-certificates.crt; echo; cat; } > "$work/factory-ca.pem" <<'FACTORY_CA_PEM'`)
		b.WriteString(s.FactoryCA)
		w("FACTORY_CA_PEM",
			`curl -fL --retry 3 --cacert "$work/factory-ca.pem" -o "$work/disk.raw.xz" "$URL"`)
	}
	agent := "enabled=1"
	if s.DisableAgent {
		agent = "enabled=0"
	}
	create := strings.Replace(programCreate, "@AGENT@", agent, 1)
	if m, n := s.GPUs(); n > 0 {
		gpus := " \\\n  --machine " + GPUMachine
		for _, p := range s.hostPCI() {
			gpus += " --" + p.Key + " " + shQuote(p.Value)
		}
		create = strings.Replace(create, "--agent "+agent+"\n", "--agent "+agent+gpus+"\n", 1)
		create = strings.Replace(create, "\nqm create", fmt.Sprintf("\n# %d PCI Express device(s) of the PCI mapping %s, on a q35 machine: each clone\n# takes free ones on its node when it starts.\nqm create", n, m), 1)
	}
	b.WriteString(create)
	return b.String(), nil
}

// programHead is the program's first lines: what it builds and its
// values, the VMID and tags picked by the node for each node's template.
func programHead(specs []Spec) string {
	s := specs[0]
	lines := []string{"#!/bin/sh",
		"# Builds the Talos VM template " + s.Name() + " as VM " + strconv.Itoa(s.VMID) + ".",
		"# Run it as root on a Proxmox VE node of the target cluster: sh -s < this-file",
		"set -eu",
		"VMID=" + strconv.Itoa(s.VMID)}
	head := ""
	if s.Node != "" {
		head, lines = nodeCase(specs), nil
	}
	lines = append(lines, "STORAGE="+shQuote(s.Storage), "URL="+shQuote(s.ImageURL()), "NAME="+shQuote(s.Name()))
	if s.Node == "" {
		lines = append(lines, "TAGS="+shQuote(PVETags(s.Tags)))
	}
	lines = append(lines, "DISK_SIZE="+shQuote(s.DiskSize), "CPU="+shQuote(s.CPU), "")
	return head + strings.Join(lines, "\n") + "\n"
}

// nodeCase is the head of the program of each node's template: the node
// is the host name's first label, as Proxmox VE names a node, and picks
// the template's VMID and tags; a host that is none of the nodes stops.
func nodeCase(specs []Spec) string {
	var b strings.Builder
	names := make([]string, len(specs))
	for i, t := range specs {
		names[i] = fmt.Sprintf("VM %d on %s", t.VMID, t.Node)
	}
	b.WriteString("#!/bin/sh\n# Builds the Talos VM template " + specs[0].Name() + " of each node, on the node's own storage: " + strings.Join(names, ", ") + ".\n")
	b.WriteString("# Run it as root on each of these nodes: sh -s < this-file\nset -eu\n")
	b.WriteString("node=$(uname -n)\nnode=${node%%.*}\ncase \"$node\" in\n")
	for _, t := range specs {
		fmt.Fprintf(&b, "%s) VMID=%d TAGS=%s ;;\n", shQuote(t.Node), t.VMID, shQuote(PVETags(t.Tags)))
	}
	list := make([]string, len(specs))
	for i, t := range specs {
		list[i] = t.Node
	}
	b.WriteString(`*) echo "this program builds the template of node ` + strings.Join(list, ", ") + `, each on its own storage: run it on each of them, not on $node" >&2` + "\n   exit 1 ;;\nesac\n")
	return b.String()
}

// programChecks runs before anything is downloaded or created.
const programChecks = `if ! command -v qm >/dev/null || ! command -v pvesh >/dev/null; then
  echo "this is not a Proxmox VE node: qm and pvesh are missing" >&2
  exit 1
fi

# nextid fails unless the id is free everywhere in the cluster.
pvesh get /cluster/nextid --vmid "$VMID" >/dev/null

# capmox clones only when exactly one template in the whole cluster carries
# the selector's tag set; a second template with this set would stop every
# pool that selects it. Tags are compared trimmed, lower-cased, as a set.
taken=$(pvesh get /cluster/resources --type vm --output-format json | perl -MJSON::PP -e '
  my $want = shift;
  my @hits;
  my $guests = JSON::PP->new->decode(do { local $/; <STDIN> });
  for my $g (@$guests) {
    next unless $g->{template} && length($g->{tags} // "");
    my %set;
    for my $t (split /;/, $g->{tags}) {
      $t =~ s/^\s+|\s+$//g;
      $set{lc $t} = 1 if length $t;
    }
    push @hits, "$g->{vmid} (" . ($g->{name} // "") . ") on $g->{node}"
      if join(";", sort keys %set) eq $want;
  }
  print join(", ", @hits);
' "$TAGS")
if [ -n "$taken" ]; then
  echo "a template already carries the tags $TAGS: $taken" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/var/tmp}/talos-template.XXXXXX")
trap 'rm -rf "$work"' EXIT
`

// programCreate builds the VM from the downloaded image.
const programCreate = `xz -d "$work/disk.raw.xz"

# UEFI without pre-enrolled keys, virtio-scsi with the image as scsi0, a
# serial console and the guest agent channel. No NIC: capmox writes net0 on
# every clone.
qm create "$VMID" --name "$NAME" --tags "$TAGS" --ostype l26 \
  --cpu "$CPU" --sockets 1 --cores 2 --memory 4096 \
  --bios ovmf --efidisk0 "$STORAGE:1,efitype=4m,pre-enrolled-keys=0" \
  --scsihw virtio-scsi-pci \
  --scsi0 "$STORAGE:0,import-from=$work/disk.raw,cache=none,discard=on,ssd=1" \
  --boot order=scsi0 --serial0 socket --vga std \
  --agent @AGENT@
# Clones inherit the disk size. From here on a failure leaves a VM that
# holds the id, and the nextid check refuses the next run until it is gone.
qm disk resize "$VMID" scsi0 "$DISK_SIZE" && qm template "$VMID" || {
  echo "VM $VMID was created but is not a template; remove it with: qm destroy $VMID" >&2
  exit 1
}
qm config "$VMID"
`

// shQuote single-quotes v for a POSIX shell.
func shQuote(v string) string {
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// PoolSnippet is what a kubernetes-nodes pool sets to run on the template:
// the Talos release and schematic its workers' installer uses, the gpus of
// a GPU template (an entry per device, named by its PCI mapping), and the
// exact tag set capmox selects the template by (for a template of one
// node, the tags the node's templates share, with localTemplates: true).
func PoolSnippet(s Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "talos:\n  version: %q\n  schematicID: %q\n", s.TalosVersion, s.SchematicID)
	if len(s.PCIMappings) > 0 {
		b.WriteString("gpus:\n")
		for _, m := range s.PCIMappings {
			fmt.Fprintf(&b, "  - name: %q\n", m)
		}
	}
	b.WriteString("proxmox:\n")
	if s.Node != "" {
		// Each node's template carries its node's tag, which the render
		// adds to the pool's MachineDeployment of that node.
		b.WriteString("  localTemplates: true\n")
	}
	b.WriteString("  templateTags:\n")
	for _, t := range s.SharedTags() {
		fmt.Fprintf(&b, "    - %q\n", t)
	}
	return b.String()
}
