// Command vlanalloc embeds package vlanalloc alone, without Kubernetes: a
// zone, two allocators that share nothing but a record of reservations,
// and what each network gets.
//
// The shared record is a folder with one file per reserved ID, created
// with O_EXCL, so the file system keeps each ID unique the way the API
// server keeps ProxmoxVLANClaim names unique in the controller: an
// allocator whose view is stale may pick a taken ID, but its reservation
// fails, it learns the holder and picks the next free one.
//
//	go run ./examples/vlanalloc [-dir FOLDER]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

func main() {
	dir := flag.String("dir", "", "folder holding one file per reserved VLAN; default: a new temporary folder")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "vlanalloc:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "vlanalloc-example-")
		if err != nil {
			return fmt.Errorf("cannot make a folder for reservations: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	zone, err := vlanalloc.NewZone(vlanalloc.ZoneSpec{
		Name: "zone-a", ProviderNetwork: "pxtenant", Ranges: []string{"100-104"}, Reserved: []int{102},
	})
	if err != nil {
		return err
	}
	record := fileReserver{dir: dir}
	// Two replicas that started with empty views of the zone.
	replicas := map[string]*vlanalloc.Allocator{
		"a": vlanalloc.NewAllocator(vlanalloc.NewIndex(zone, nil, nil), record),
		"b": vlanalloc.NewAllocator(vlanalloc.NewIndex(zone, nil, nil), record),
	}
	ctx := context.Background()
	allocate := func(replica, network string) {
		claim := vlanalloc.Claim{Network: vlanalloc.NetworkRef{Namespace: "tenant-a", Name: network}, Vlan: network}
		vid, err := replicas[replica].Allocate(ctx, claim)
		if err != nil {
			fmt.Printf("replica %s: %s: %v (exhausted: %v)\n", replica, network, err, errors.Is(err, vlanalloc.ErrExhausted))
			return
		}
		fmt.Printf("replica %s: %s gets VLAN %d\n", replica, network, vid)
	}
	allocatable := zone.Allocatable()
	fmt.Println("zone-a allocates", allocatable.String(), "(102 is reserved)")
	allocate("a", "web")
	allocate("b", "db") // b does not know about web's 100: its reservation fails, it learns and takes 101
	allocate("a", "cache")
	allocate("b", "web") // asking again for a network gives the same ID
	allocate("a", "queue")
	if err := replicas["b"].Release(ctx, vlanalloc.NetworkRef{Namespace: "tenant-a", Name: "db"}); err != nil {
		return err
	}
	fmt.Println("replica b: released db")
	allocate("b", "mail") // b released 101 itself, so it knows 101 is free
	allocate("a", "extra")
	files, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	fmt.Print("reservation files:")
	for _, f := range files {
		fmt.Print(" ", f.Name())
	}
	fmt.Println()
	return nil
}

// fileReserver keeps each reservation as the file <provider>-<vid>.json,
// created with O_EXCL: only one network can hold an ID.
type fileReserver struct{ dir string }

var _ vlanalloc.Reserver = fileReserver{}

func (f fileReserver) path(provider string, vid int) string {
	return filepath.Join(f.dir, provider+"-"+strconv.Itoa(vid)+".json")
}

func (f fileReserver) Reserve(_ context.Context, provider string, r vlanalloc.Reservation) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	file, err := os.OpenFile(f.path(provider, r.VID), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		holder, rerr := f.read(provider, r.VID)
		if rerr != nil {
			return rerr
		}
		if holder.Network == r.Network {
			return nil
		}
		return &vlanalloc.TakenError{Provider: provider, Holder: holder}
	}
	if err != nil {
		return fmt.Errorf("cannot reserve VLAN %d: %w", r.VID, err)
	}
	defer file.Close()
	if _, err := file.Write(data); err != nil {
		return fmt.Errorf("cannot reserve VLAN %d: %w", r.VID, err)
	}
	return nil
}

func (f fileReserver) Release(_ context.Context, provider string, r vlanalloc.Reservation) error {
	holder, err := f.read(provider, r.VID)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && holder.Network != r.Network) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.Remove(f.path(provider, r.VID))
}

func (f fileReserver) read(provider string, vid int) (vlanalloc.Reservation, error) {
	var r vlanalloc.Reservation
	data, err := os.ReadFile(f.path(provider, vid))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("cannot read the reservation of VLAN %d: %w", vid, err)
	}
	return r, nil
}
