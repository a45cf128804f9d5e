package talostemplate_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// qmCreateFlags reads the qm create command of a print program as
// --key value pairs, with the program's variables replaced by vars.
func qmCreateFlags(t *testing.T, program string, vars map[string]string) map[string]string {
	t.Helper()
	start := strings.Index(program, "\nqm create ")
	if start < 0 {
		t.Fatalf("no qm create in the program:\n%s", program)
	}
	var cmd strings.Builder
	for _, line := range strings.Split(program[start+1:], "\n") {
		cont := strings.HasSuffix(line, `\`)
		cmd.WriteString(strings.TrimSuffix(line, `\`) + " ")
		if !cont {
			break
		}
	}
	words := strings.Fields(cmd.String())
	out := map[string]string{}
	for i := 1; i+1 < len(words); i += 2 {
		v := strings.Trim(words[i+1], `"`)
		for k, val := range vars {
			v = strings.ReplaceAll(v, k, val)
		}
		key := strings.TrimPrefix(words[i], "--")
		if words[i] == "create" {
			key = "vmid"
		}
		out[key] = v
	}
	return out
}

func TestCreateParamsMatchProgram(t *testing.T) {
	for name, noAgent := range map[string]bool{"Agent": false, "NoAgent": true} {
		t.Run(name, func(t *testing.T) {
			spec, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: "9000", Storage: "local-lvm", TalosVersion: talosVersion,
				SchematicID: agentSchematic, Tags: "b,a", DisableAgent: noAgent})
			if err != nil {
				t.Fatal(err)
			}
			program, err := talostemplate.Program(spec)
			if err != nil {
				t.Fatal(err)
			}
			const image = "local:import/talos.raw"
			want := qmCreateFlags(t, program, map[string]string{"$VMID": "9000", "$NAME": spec.Name(), "$TAGS": "a;b",
				"$CPU": spec.CPU, "$STORAGE": "local-lvm", "$work/disk.raw": image})
			got := map[string]string{}
			for _, p := range talostemplate.CreateParams(spec, image) {
				if _, dup := got[p.Key]; dup {
					t.Errorf("parameter %s twice", p.Key)
				}
				got[p.Key] = p.Value
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the API creates the VM the print program creates: -program +api:\n%s", diff)
			}
		})
	}
}

func TestImportArtefact(t *testing.T) {
	spec, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: "9000", Storage: "local-lvm", TalosVersion: "v1.14.0-beta.1",
		SchematicID: agentSchematic, FactoryURL: "https://factory.example.com/talos/"})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason   string
		format   talostemplate.ImageFormat
		url      string
		filename string
	}{
		"Raw": {reason: "the print program's image, uncompressed", format: talostemplate.ImageRaw,
			url:      "https://factory.example.com/talos/image/" + agentSchematic + "/v1.14.0-beta.1/nocloud-amd64.raw",
			filename: "talos-v1.14.0-beta.1-ce4c9805-nocloud-amd64.raw"},
		"QCOW2": {reason: "the same disk as qcow2", format: talostemplate.ImageQCOW2,
			url:      "https://factory.example.com/talos/image/" + agentSchematic + "/v1.14.0-beta.1/nocloud-amd64.qcow2",
			filename: "talos-v1.14.0-beta.1-ce4c9805-nocloud-amd64.qcow2"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := spec.ImportImageURL(tc.format); got != tc.url {
				t.Errorf("%s: URL %q, want %q", tc.reason, got, tc.url)
			}
			if got := spec.ImportFilename(tc.format); got != tc.filename {
				t.Errorf("%s: filename %q, want %q", tc.reason, got, tc.filename)
			}
		})
	}
}
