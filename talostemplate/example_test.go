package talostemplate_test

import (
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

func ExampleSchematicID() {
	id, err := talostemplate.SchematicID([]byte(`
customization:
  systemExtensions:
    officialExtensions:
      - siderolabs/qemu-guest-agent
`))
	fmt.Println(id, err)
	// Output: ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515 <nil>
}

func ExampleParseTags() {
	tags, err := talostemplate.ParseTags("Talos,cozystack,,talos-v1.13.6,talos")
	fmt.Println(tags, err)
	_, err = talostemplate.ParseTags("cozystack, talos")
	fmt.Println(err)
	// Output:
	// [cozystack talos talos-v1.13.6] <nil>
	// not a valid Proxmox tag: " talos" (a tag starts with a letter, digit or _ and holds only letters, digits and _ + . -; separate tags with commas and no spaces)
}

func ExampleNewSpec() {
	spec, err := talostemplate.NewSpec(talostemplate.Inputs{
		VMID:         "9000",
		Storage:      "local-lvm",
		TalosVersion: "v1.13.6",
		SchematicID:  "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515",
	})
	fmt.Println(spec.Name(), spec.Tags, err)
	_, err = talostemplate.NewSpec(talostemplate.Inputs{VMID: "42", Storage: "local-lvm", TalosVersion: "v1.13",
		SchematicID: "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"})
	fmt.Println(err)
	// Output:
	// talos-v1.13.6-ce4c9805 [cozystack schematic-ce4c9805 talos talos-v1.13.6] <nil>
	// vmid 42 is not a Proxmox VM id (100-999999999)
	// Talos version 'v1.13' is not vMAJOR.MINOR.PATCH with an optional pre-release suffix (such as v1.13.6 or v1.14.0-beta.1)
}

func ExampleSelect() {
	cluster := []talostemplate.VMResource{
		{VMID: 9000, Name: "talos-v1.13.6-ce4c9805", Node: "pve1", Template: 1, Tags: "capmox-template;cozystack;talos;talos-v1.13.6"},
	}
	sel, err := talostemplate.Select(cluster, []string{"cozystack", "talos", "talos-v1.13.6"}, talostemplate.SelectOptions{Capmox: talostemplate.CapmoxV07})
	fmt.Println(err)
	for _, line := range talostemplate.Explain(sel)[1:] {
		fmt.Println(line)
	}
	// Output:
	// VM template not found: found 0 VM templates with tags "cozystack;talos;talos-v1.13.6"
	// template 9000 (talos-v1.13.6-ce4c9805) on pve1 has the extra tag(s) "capmox-template": add them to templateTags or remove them from the template
}

func ExampleCheckTagSetFree() {
	cluster := []talostemplate.VMResource{{VMID: 9000, Name: "old", Node: "pve2", Template: 1, Tags: "talos;cozystack"}}
	fmt.Println(talostemplate.CheckTagSetFree(cluster, []string{"cozystack", "talos"}))
	// Output: a template already carries the tags cozystack;talos: 9000 (old) on pve2
}

func ExampleCheckSchematic() {
	s, _ := talostemplate.ParseSchematic([]byte(`customization: {systemExtensions: {officialExtensions: [siderolabs/zfs]}}`))
	id, _ := s.ID()
	_, err := talostemplate.CheckSchematic(id, s, false)
	fmt.Println(err != nil)
	// Output: true
}
