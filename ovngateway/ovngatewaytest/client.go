package ovngatewaytest

import (
	"context"
	"errors"
	"fmt"
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
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	c, err := Dial(ctx, endpoint, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Dial is Connect for programs without a testing.TB; the caller closes the
// client.
func Dial(ctx context.Context, endpoint string, opts ...client.Option) (client.Client, error) {
	m, err := ClientModel()
	if err != nil {
		return nil, err
	}
	c, err := client.NewOVSDBClient(m, append([]client.Option{client.WithEndpoint(endpoint)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("cannot create an NB client for %s: %w", endpoint, err)
	}
	if err := c.Connect(ctx); err != nil {
		return nil, fmt.Errorf("cannot connect to %s: %w", endpoint, err)
	}
	if _, err := c.MonitorAll(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("cannot monitor %s: %w", endpoint, err)
	}
	return c, nil
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
	return Admin{c}.Transact(context.Background(), ops...)
}

// Transact runs ops in one transaction, within opTimeout, and returns an
// error unless each of them succeeded.
func (a Admin) Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	res, err := a.C.Transact(ctx, ops...)
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
	out, err := SelectRows[T, PT](context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ReadRows reads Rows in one transaction and fails t on error.
func ReadRows(t testing.TB, c client.Client) Rows {
	t.Helper()
	r, err := Admin{c}.ReadRows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}
