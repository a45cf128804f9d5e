package pveapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// answer is a Getter that decodes a fixed answer, or fails, and records
// the path asked.
type answer struct {
	data string
	err  error
	path *string
}

func (a answer) Get(_ context.Context, path string, v any) error {
	*a.path = path
	if a.err != nil {
		return a.err
	}
	return json.Unmarshal([]byte(a.data), v)
}

// TestClusterResources: one element of each kind PVE lists is read with
// the fields the module uses, the guests alone by type=vm, and a failed
// read names the request.
func TestClusterResources(t *testing.T) {
	var path string
	data := `[
		{"id":"qemu/9000","type":"qemu","node":"pve1","vmid":9000,"name":"talos","template":1,"tags":"a;b","status":"stopped","pool":"alpha","maxmem":2147483648},
		{"id":"qemu/101","type":"qemu","node":"pve2","vmid":101,"name":"w1","template":0,"status":"running","lock":"clone"},
		{"id":"storage/pve1/alpha-disks","type":"storage","node":"pve1","storage":"alpha-disks","pool":"alpha","status":"available"},
		{"id":"node/pve1","type":"node","node":"pve1","status":"online"}
	]`
	rs, err := pveapi.ClusterResources(context.Background(), answer{data: data, path: &path}, pveapi.AllResources)
	if err != nil {
		t.Fatal(err)
	}
	want := []pveapi.ClusterResource{
		{ID: "qemu/9000", Type: "qemu", Node: "pve1", VMID: 9000, Name: "talos", Template: 1, Tags: "a;b", Status: "stopped", Pool: "alpha"},
		{ID: "qemu/101", Type: "qemu", Node: "pve2", VMID: 101, Name: "w1", Status: "running", Lock: "clone"},
		{ID: "storage/pve1/alpha-disks", Type: "storage", Node: "pve1", Storage: "alpha-disks", Pool: "alpha", Status: "available"},
		{ID: "node/pve1", Type: "node", Node: "pve1", Status: "online"},
	}
	if diff := cmp.Diff(want, rs); diff != "" || path != "/cluster/resources" {
		t.Errorf("GET %s: -want +got:\n%s", path, diff)
	}
	if !rs[0].Template.Set() || rs[1].Template.Set() {
		t.Error("Template.Set must say which guest is a template")
	}
	_, err = pveapi.ClusterResources(context.Background(), answer{err: errors.New("403 Permission check failed"), path: &path}, pveapi.Guests)
	if path != "/cluster/resources?type=vm" || err == nil ||
		!strings.Contains(err.Error(), "cannot read the cluster's guests (GET /cluster/resources?type=vm): 403 Permission check failed") {
		t.Errorf("GET %s: %v", path, err)
	}
	for doc, ok := range map[string]bool{`[{"template":true}]`: true, `[{"template":false}]`: true, `[{"template":2}]`: false, `[{"template":"1"}]`: false} {
		_, err := pveapi.ClusterResources(context.Background(), answer{data: doc, path: &path}, pveapi.Guests)
		if (err == nil) != ok {
			t.Errorf("%s: %v", doc, err)
		}
	}
}
