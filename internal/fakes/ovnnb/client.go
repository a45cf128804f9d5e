package ovnnb

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// opTimeout bounds each helper's round trip to the server.
const opTimeout = 10 * time.Second

// Connect returns a client with the full NB model, connected to endpoint and
// monitoring every table, closed on cleanup. Tests use it to seed rows that
// other OVN clients would write and to inspect the result.
func Connect(t testing.TB, endpoint string, opts ...client.Option) client.Client {
	t.Helper()
	m, err := ClientModel()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewOVSDBClient(m, append([]client.Option{client.WithEndpoint(endpoint)}, opts...)...)
	if err != nil {
		t.Fatalf("cannot create an NB client for %s: %v", endpoint, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("cannot connect to %s: %v", endpoint, err)
	}
	t.Cleanup(c.Close)
	if _, err := c.MonitorAll(ctx); err != nil {
		t.Fatalf("cannot monitor %s: %v", endpoint, err)
	}
	return c
}

// Transact runs ops in one transaction and fails t unless each of them
// succeeded.
func Transact(t testing.TB, c client.Client, ops ...ovsdb.Operation) []ovsdb.OperationResult {
	t.Helper()
	res, err := TransactErr(c, ops...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TransactErr runs ops in one transaction and returns an error unless each
// of them succeeded.
func TransactErr(c client.Client, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	res, err := c.Transact(ctx, ops...)
	if err != nil {
		return nil, fmt.Errorf("cannot run the NB transaction: %w", err)
	}
	if errs, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		return res, fmt.Errorf("NB transaction failed: %w", errors.Join(append([]error{err}, toErrors(errs)...)...))
	}
	return res, nil
}

func toErrors(errs []ovsdb.OperationError) []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}

// Select reads every row of T's table straight from the server, not from the
// client's cache, so it sees each committed transaction.
func Select[T any, PT interface {
	*T
	model.Model
}](t testing.TB, c client.Client) []T {
	t.Helper()
	var zero T
	if c.Cache() == nil {
		t.Fatalf("cannot select %T rows: the client lost its connection; connect a new one", zero)
	}
	dbModel := c.Cache().DatabaseModel()
	table := dbModel.FindTable(reflect.TypeOf(PT(&zero)))
	if table == "" {
		t.Fatalf("cannot select: %T is not a model of this client", zero)
	}
	res := Transact(t, c, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: table, Where: []ovsdb.Condition{}})
	out := make([]T, 0, len(res[0].Rows))
	for _, row := range res[0].Rows {
		u, _ := row["_uuid"].(ovsdb.UUID)
		m, err := model.CreateModel(dbModel, table, &row, u.GoUUID)
		if err != nil {
			t.Fatalf("cannot read a %s row: %v", table, err)
		}
		out = append(out, *(m.(PT)))
	}
	return out
}
