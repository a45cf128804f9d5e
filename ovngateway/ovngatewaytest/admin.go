package ovngatewaytest

import (
	"context"
	"fmt"
	"reflect"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// Admin seeds and inspects an NB the way other OVN clients (Kube-OVN, an
// operator) would, through a client with the full model (see Connect or
// ClientModel). Its reads go straight to the server, never to the cache.
type Admin struct {
	C client.Client
}

// Rows are the rows of the tables a gateway involves, read straight from
// the server in one transaction.
type Rows struct {
	Routers        []nbmodel.LogicalRouter
	Ports          []nbmodel.LogicalRouterPort
	Groups         []nbmodel.HAChassisGroup
	Chassis        []nbmodel.HAChassis
	GatewayChassis []nbmodel.GatewayChassis
}

// ReadRows reads Rows in one transaction.
func (a Admin) ReadRows(ctx context.Context) (Rows, error) {
	dbModel, err := databaseModel(a.C)
	if err != nil {
		return Rows{}, err
	}
	tables := []string{
		nbmodel.LogicalRouterTable, nbmodel.LogicalRouterPortTable, nbmodel.HAChassisGroupTable,
		nbmodel.HAChassisTable, nbmodel.GatewayChassisTable,
	}
	ops := make([]ovsdb.Operation, len(tables))
	for i, table := range tables {
		ops[i] = selectAll(table)
	}
	res, err := a.Transact(ctx, ops...)
	if err != nil {
		return Rows{}, err
	}
	var r Rows
	errs := []error{
		decode(dbModel, tables[0], res[0].Rows, &r.Routers),
		decode(dbModel, tables[1], res[1].Rows, &r.Ports),
		decode(dbModel, tables[2], res[2].Rows, &r.Groups),
		decode(dbModel, tables[3], res[3].Rows, &r.Chassis),
		decode(dbModel, tables[4], res[4].Rows, &r.GatewayChassis),
	}
	for _, err := range errs {
		if err != nil {
			return Rows{}, err
		}
	}
	return r, nil
}

// State reads the gateway state without UUIDs.
func (a Admin) State(ctx context.Context) (State, error) {
	r, err := a.ReadRows(ctx)
	if err != nil {
		return State{}, err
	}
	return r.State(), nil
}

// SelectRows reads every row of T's table straight from the server.
func SelectRows[T any, PT interface {
	*T
	model.Model
}](ctx context.Context, c client.Client) ([]T, error) {
	var zero T
	dbModel, err := databaseModel(c)
	if err != nil {
		return nil, err
	}
	table := dbModel.FindTable(reflect.TypeOf(PT(&zero)))
	if table == "" {
		return nil, fmt.Errorf("cannot select: %T is not a model of this client", zero)
	}
	res, err := Admin{c}.Transact(ctx, selectAll(table))
	if err != nil {
		return nil, err
	}
	var out []T
	if err := decode(dbModel, table, res[0].Rows, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func databaseModel(c client.Client) (model.DatabaseModel, error) {
	if c.Cache() == nil {
		return model.DatabaseModel{}, fmt.Errorf("cannot read rows: the client lost its connection; connect a new one")
	}
	return c.Cache().DatabaseModel(), nil
}

func selectAll(table string) ovsdb.Operation {
	return ovsdb.Operation{Op: ovsdb.OperationSelect, Table: table, Where: []ovsdb.Condition{}}
}

// decode turns rows of table into models appended to out, a pointer to a
// slice of the table's model.
func decode[T any](dbModel model.DatabaseModel, table string, rows []ovsdb.Row, out *[]T) error {
	*out = make([]T, 0, len(rows))
	for _, row := range rows {
		u, _ := row["_uuid"].(ovsdb.UUID)
		m, err := model.CreateModel(dbModel, table, &row, u.GoUUID)
		if err != nil {
			return fmt.Errorf("cannot read a %s row: %w", table, err)
		}
		v, ok := m.(*T)
		if !ok {
			return fmt.Errorf("cannot read a %s row into %T", table, *new(T))
		}
		*out = append(*out, *v)
	}
	return nil
}
