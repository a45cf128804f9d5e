package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// Template inputs of the demo: the chart's default Talos image.
const (
	templateVMID    = "9000"
	talosVersion    = "v1.13.6"
	talosSchematic  = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	imageFactoryURL = "https://factory.talos.dev"
)

var actTemplate = Act{
	Name: "an admin builds the Talos template through the same API; a second one with its tags is refused",
	Play: func(ctx context.Context, s *Stage) error {
		c, err := s.proxmox()
		if err != nil {
			return err
		}
		spec, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: templateVMID, Storage: "local-lvm",
			TalosVersion: talosVersion, SchematicID: talosSchematic, FactoryURL: imageFactoryURL})
		if err != nil {
			return fmt.Errorf("cannot build the template specification: %w", err)
		}
		opts := talostemplate.CreateOptions{PollInterval: 5 * time.Millisecond}
		res, err := talostemplate.Create(ctx, c, spec, opts)
		if err != nil {
			return fmt.Errorf("cannot create the Talos template: %w", err)
		}
		s.Say("template %d (%s) on %s from %s", res.Spec.VMID, res.Spec.Name(), res.Node, res.ImageURL)
		spec.VMID++
		_, err = talostemplate.Create(ctx, c, spec, opts)
		if !errors.Is(err, talostemplate.ErrTagSetTaken) {
			return fmt.Errorf("a second template with the same tags: want %v, got %v", talostemplate.ErrTagSetTaken, err)
		}
		s.Say("template %d with the same tags: refused (%v)", spec.VMID, talostemplate.ErrTagSetTaken)
		vms, err := talostemplate.LiveResources{Client: c}.ListVMResources(ctx)
		if err != nil {
			return fmt.Errorf("cannot list the guests: %w", err)
		}
		s.templates(vms)
		return nil
	},
}

// templates prints the templates and records whether their tag sets are
// unique.
func (s *Stage) templates(vms []talostemplate.VMResource) {
	owner := map[string]int{}
	var dups []string
	s.Table([]string{"VMID", "NAME", "NODE", "TEMPLATE", "TAGS"}, func(row func(...any)) {
		for _, vm := range vms {
			row(vm.VMID, vm.Name, vm.Node, vm.Template == 1, vm.Tags)
			if vm.Template != 1 {
				continue
			}
			tags, err := talostemplate.NormalizeTags(strings.FieldsFunc(vm.Tags, isTagSeparator))
			if err != nil {
				dups = append(dups, fmt.Sprintf("%d: %v", vm.VMID, err))
				continue
			}
			key := strings.Join(tags, ";")
			if first, ok := owner[key]; ok {
				dups = append(dups, fmt.Sprintf("%d and %d carry %s", first, vm.VMID, key))
			}
			owner[key] = vm.VMID
		}
	})
	holds := len(owner) > 0 && len(dups) == 0
	if len(owner) == 0 {
		dups = append(dups, "no template found")
	}
	s.Check(CheckTemplateTags, holds, strings.Join(dups, "; "))
}

// isTagSeparator reports whether r separates tags in PVE's tag string.
func isTagSeparator(r rune) bool { return r == ';' || r == ',' || r == ' ' }

// factoryImages stands in for the Image Factory: every nocloud image is a
// megabyte of zeros. Any other URL is not found.
type factoryImages struct{}

func (factoryImages) Download(_ context.Context, url string, _ bool) (io.ReadCloser, error) {
	if !strings.HasPrefix(url, imageFactoryURL+"/") || !strings.Contains(url, "/nocloud-amd64.") {
		return nil, fmt.Errorf("cannot download %s: 404 Not Found", url)
	}
	return io.NopCloser(bytes.NewReader(make([]byte, 1<<20))), nil
}
