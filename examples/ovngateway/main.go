// Command ovngateway embeds package ovngateway alone, without Kubernetes,
// against libovsdb's in-memory OVSDB server holding the part of the OVN
// northbound schema ovngateway uses.
//
// It plays Kube-OVN by creating the logical router ports of two subnets of
// one VPC, then gives each port an HA_Chassis_Group of three trunk nodes,
// shows that a second pass writes nothing, lets a node leave, and releases
// one network.
//
//	go run ./examples/ovngateway
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/database/inmemory"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/ovn-kubernetes/libovsdb/ovsdb/serverdb"
	"github.com/ovn-kubernetes/libovsdb/server"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ovngateway:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "ovngateway-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	endpoint, stop, err := serve(filepath.Join(dir, "nb.sock"))
	if err != nil {
		return err
	}
	defer stop()
	if err := addRouterPorts(ctx, endpoint, "vpc-a-web", "vpc-a-db"); err != nil {
		return err
	}
	gw, err := ovngateway.Dial(ctx, ovngateway.Config{Address: endpoint})
	if err != nil {
		return err
	}
	defer gw.Close()

	nodes := []ovngateway.Candidate{{Node: "pve-1", Chassis: "ch-1"}, {Node: "pve-2", Chassis: "ch-2"}, {Node: "pve-3", Chassis: "ch-3"}}
	pass := func(title string, cands []ovngateway.Candidate) error {
		fmt.Println(title)
		for _, subnet := range []string{"web", "db"} {
			n := ovngateway.Network{Namespace: "tenant-a", Name: subnet, RouterPort: ovngateway.RouterPortName("vpc-a", subnet)}
			want, err := ovngateway.NewGateway(n, "vpc-a", "pxtenant", cands)
			if err != nil {
				return err
			}
			before := gw.Transactions()
			o, err := gw.Reconcile(ctx, want)
			if err != nil {
				return err
			}
			fmt.Printf("  %s: %s, group %s, active %s, %s, %d transaction(s)\n",
				n.RouterPort, o.Reason, o.Group, o.Active, members(want), gw.Transactions()-before)
		}
		return nil
	}
	if err := pass("three trunk nodes (both ports of the VPC share one active chassis):", nodes); err != nil {
		return err
	}
	if err := pass("the same again (nothing to write):", nodes); err != nil {
		return err
	}
	if err := pass("pve-2 leaves the trunk:", []ovngateway.Candidate{nodes[0], nodes[2]}); err != nil {
		return err
	}
	r, err := gw.Release(ctx, ovngateway.Network{Namespace: "tenant-a", Name: "db", RouterPort: "vpc-a-db"})
	if err != nil {
		return err
	}
	fmt.Printf("released tenant-a/db: group deleted %v\n", r.Deleted)
	return nil
}

func members(gw ovngateway.Gateway) string {
	s := ""
	for i, m := range gw.Members {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s=%d", m.Chassis, m.Priority)
	}
	return s
}

// serve starts libovsdb's in-memory server with ovngateway's part of the
// NB schema (and the _Server database clients ask for) on a unix socket.
func serve(sock string) (endpoint string, stop func(), err error) {
	nbModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		return "", nil, err
	}
	srvModel, err := serverdb.FullDatabaseModel()
	if err != nil {
		return "", nil, err
	}
	schema := nbdb.Schema()
	// The schema holds no Logical_Router to keep the ports alive, so the
	// server keeps them as root rows instead of garbage-collecting them.
	lrp := schema.Tables[nbdb.LogicalRouterPortTable]
	lrp.IsRoot = true
	schema.Tables[nbdb.LogicalRouterPortTable] = lrp
	db := inmemory.NewDatabase(map[string]model.ClientDBModel{schema.Name: nbModel, serverdb.Schema().Name: srvModel}, nil)
	nbDB, errs := model.NewDatabaseModel(schema, nbModel)
	if len(errs) > 0 {
		return "", nil, fmt.Errorf("cannot combine the NB schema and model: %v", errs)
	}
	srvDB, errs := model.NewDatabaseModel(serverdb.Schema(), srvModel)
	if len(errs) > 0 {
		return "", nil, fmt.Errorf("cannot combine the _Server schema and model: %v", errs)
	}
	srv, err := server.NewOvsdbServer(db, nil, nbDB, srvDB)
	if err != nil {
		return "", nil, err
	}
	go func() { _ = srv.Serve("unix", sock) }()
	for deadline := time.Now().Add(10 * time.Second); !srv.Ready(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			srv.Close()
			return "", nil, fmt.Errorf("the in-memory NB did not start")
		}
	}
	return "unix:" + sock, srv.Close, nil
}

// addRouterPorts creates the router ports as Kube-OVN would for each
// subnet of a VPC.
func addRouterPorts(ctx context.Context, endpoint string, ports ...string) error {
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		return err
	}
	c, err := client.NewOVSDBClient(m, client.WithEndpoint(endpoint))
	if err != nil {
		return err
	}
	if err := c.Connect(ctx); err != nil {
		return err
	}
	defer c.Close()
	sort.Strings(ports)
	for _, p := range ports {
		ops, err := c.Create(&nbdb.LogicalRouterPort{Name: p})
		if err != nil {
			return err
		}
		res, err := c.Transact(ctx, ops...)
		if err == nil {
			_, err = ovsdb.CheckOperationResults(res, ops)
		}
		if err != nil {
			return fmt.Errorf("cannot create router port %s: %w", p, err)
		}
	}
	return nil
}
