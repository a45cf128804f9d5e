package talostemplate_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// ExampleCreate builds the chart-default template through the API of an
// in-memory Proxmox VE, then tries a second one with the same tags.
func ExampleCreate() {
	factory := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/nocloud-amd64.raw") {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(make([]byte, 1<<20))
	}))
	defer factory.Close()
	srv, _ := pvefake.New()
	defer srv.Close()
	c := proxmox.NewClient(srv.URL, proxmox.WithHTTPClient(srv.HTTPClient()), proxmox.WithAPIToken(srv.RootTokenID, srv.RootSecret))

	spec, _ := talostemplate.NewSpec(talostemplate.Inputs{VMID: "9000", Storage: "local-lvm", TalosVersion: "v1.13.6",
		SchematicID: "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515", FactoryURL: factory.URL})
	res, err := talostemplate.Create(context.Background(), c, spec, talostemplate.CreateOptions{})
	fmt.Println(err)
	fmt.Println(res.Config["template"], res.Config["tags"], res.Config["scsi0"])
	fmt.Print(talostemplate.PoolSnippet(spec))

	spec.VMID = 9001
	_, err = talostemplate.Create(context.Background(), c, spec, talostemplate.CreateOptions{})
	fmt.Println(errors.Is(err, talostemplate.ErrTagSetTaken))
	fmt.Println(err)
	// Output:
	// <nil>
	// 1 cozystack;schematic-ce4c9805;talos;talos-v1.13.6 local-lvm:base-9000-disk-1,cache=none,discard=on,size=20G,ssd=1
	// talos:
	//   version: "v1.13.6"
	//   schematicID: "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
	// proxmox:
	//   templateTags:
	//     - "cozystack"
	//     - "schematic-ce4c9805"
	//     - "talos"
	//     - "talos-v1.13.6"
	// true
	// cannot check that the template can be created: a template already carries the tags cozystack;schematic-ce4c9805;talos;talos-v1.13.6: 9000 (talos-v1.13.6-ce4c9805) on pve; capmox needs exactly one template per tag set: reuse that template, or give this one other tags
	// nothing was changed on the hypervisor
}
