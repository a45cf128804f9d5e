package ovngatewaytest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/database/inmemory"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/ovn-kubernetes/libovsdb/ovsdb/serverdb"
	"github.com/ovn-kubernetes/libovsdb/server"
)

// InMemory is libovsdb's in-memory OVSDB server with the full OVN NB schema
// under test and a _Server database, reachable at Endpoint through a switch
// that Down and Up cut and restore.
type InMemory struct {
	endpoint string
	private  string
	sid      string
	srv      *server.OvsdbServer
	sw       *netSwitch
}

// StartInMemory starts an in-memory NB server on a unix socket in a
// temporary directory of t and stops it on cleanup.
func StartInMemory(t testing.TB) *InMemory {
	t.Helper()
	s, err := startInMemory(socketDir(t))
	if err != nil {
		t.Fatalf("cannot start the in-memory OVN NB server: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func startInMemory(dir string) (*InMemory, error) {
	srv, err := newInMemoryServer()
	if err != nil {
		return nil, err
	}
	private := filepath.Join(dir, "nb-private.sock")
	errCh := make(chan error, 1)
	go func() { errCh <- srv.Serve("unix", private) }()
	if err := waitServing(srv, errCh); err != nil {
		return nil, err
	}
	public := filepath.Join(dir, "nb.sock")
	sw, err := newSwitch(public, private)
	if err != nil {
		srv.Close()
		return nil, err
	}
	return &InMemory{
		endpoint: "unix:" + public,
		private:  "unix:" + private,
		sid:      uuid.NewString(),
		srv:      srv,
		sw:       sw,
	}, nil
}

func newInMemoryServer() (*server.OvsdbServer, error) {
	nbSchema, err := Schema()
	if err != nil {
		return nil, err
	}
	nbModel, err := ClientModel()
	if err != nil {
		return nil, err
	}
	srvModel, err := serverdb.FullDatabaseModel()
	if err != nil {
		return nil, fmt.Errorf("cannot build the _Server model: %w", err)
	}
	db := inmemory.NewDatabase(map[string]model.ClientDBModel{
		nbSchema.Name:          nbModel,
		serverdb.Schema().Name: srvModel,
	}, nil)
	nbDB, errs := model.NewDatabaseModel(nbSchema, nbModel)
	if len(errs) > 0 {
		return nil, fmt.Errorf("cannot combine the NB schema and model: %v", errs)
	}
	srvDB, errs := model.NewDatabaseModel(serverdb.Schema(), srvModel)
	if len(errs) > 0 {
		return nil, fmt.Errorf("cannot combine the _Server schema and model: %v", errs)
	}
	srv, err := server.NewOvsdbServer(db, nil, nbDB, srvDB)
	if err != nil {
		return nil, fmt.Errorf("cannot create the in-memory OVSDB server: %w", err)
	}
	return srv, nil
}

func waitServing(srv *server.OvsdbServer, errCh <-chan error) error {
	deadline := time.After(10 * time.Second)
	for !srv.Ready() {
		select {
		case err := <-errCh:
			return fmt.Errorf("cannot serve the in-memory OVSDB server: %w", err)
		case <-deadline:
			return fmt.Errorf("the in-memory OVSDB server did not become ready within 10s")
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// Endpoint is the OVSDB connection string clients use: "unix:<path>".
func (s *InMemory) Endpoint() string { return s.endpoint }

// DirectEndpoint reaches the server without the switch, so Down does not
// cut it: for admin clients that seed and inspect rows during an outage.
func (s *InMemory) DirectEndpoint() string { return s.private }

// Down cuts every client connection and refuses new ones until Up. The
// stored rows are kept.
func (s *InMemory) Down() { s.sw.Down() }

// Up accepts connections again after Down.
func (s *InMemory) Up() error { return s.sw.Up() }

// Close stops the server; StartInMemory registers it for cleanup.
func (s *InMemory) Close() {
	s.sw.Close()
	s.srv.Close()
}

// SetLeader makes the server's _Server database describe OVN_Northbound as a
// member of a RAFT cluster that is (or is not) the leader, the way a
// clustered ovsdb-server does. Clients that insist on the leader then refuse
// a follower, and drop their connection when the leader they use steps down.
func (s *InMemory) SetLeader(ctx context.Context, leader bool) error {
	m, err := serverdb.FullDatabaseModel()
	if err != nil {
		return fmt.Errorf("cannot build the _Server model: %w", err)
	}
	c, err := client.NewOVSDBClient(m, client.WithEndpoint(s.private))
	if err != nil {
		return fmt.Errorf("cannot create a _Server client: %w", err)
	}
	if err := c.Connect(ctx); err != nil {
		return fmt.Errorf("cannot connect to _Server: %w", err)
	}
	defer c.Close()
	row := &serverdb.Database{
		UUID:      "db",
		Name:      "OVN_Northbound",
		Model:     serverdb.DatabaseModelClustered,
		Connected: true,
		Leader:    leader,
		Sid:       &s.sid,
	}
	return upsertDatabaseRow(ctx, c, row)
}

func upsertDatabaseRow(ctx context.Context, c client.Client, row *serverdb.Database) error {
	res, err := c.Transact(ctx, ovsdb.Operation{
		Op: ovsdb.OperationSelect, Table: serverdb.DatabaseTable,
		Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: row.Name}},
	})
	if err != nil {
		return fmt.Errorf("cannot read _Server: %w", err)
	}
	var ops []ovsdb.Operation
	if len(res) == 1 && len(res[0].Rows) > 0 {
		row.UUID = res[0].Rows[0]["_uuid"].(ovsdb.UUID).GoUUID
		ops, err = c.Where(row).Update(row, &row.Leader, &row.Model, &row.Sid, &row.Connected)
	} else {
		ops, err = c.Create(row)
	}
	if err != nil {
		return fmt.Errorf("cannot build the _Server change: %w", err)
	}
	res, err = c.Transact(ctx, ops...)
	if err != nil {
		return fmt.Errorf("cannot write _Server: %w", err)
	}
	if _, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		return fmt.Errorf("cannot write _Server: %w", err)
	}
	return nil
}

// OpenInMemory starts an in-memory NB server with its sockets in dir, for
// programs (a demo, a simulation) that run without a testing.TB. The caller
// must Close it.
func OpenInMemory(dir string) (*InMemory, error) { return startInMemory(dir) }
