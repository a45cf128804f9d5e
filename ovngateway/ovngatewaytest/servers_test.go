package ovngatewaytest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// server is what both NB flavours offer to a test.
type nbServer interface{ Endpoint() string }

func servers(t *testing.T) map[string]func(t *testing.T) nbServer {
	return map[string]func(t *testing.T) nbServer{
		"InMemory": func(t *testing.T) nbServer { return StartInMemory(t) },
		"Real":     func(t *testing.T) nbServer { return StartReal(t) },
	}
}

func TestRouterPortRoundTrip(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			s := start(t)
			c := Connect(t, s.Endpoint())
			AddRouterPort(t, c, "vpc1", "vpc1-sub1")
			AddRouterPort(t, c, "vpc1", "vpc1-sub2")
			want := State{Groups: map[string]Group{}, Ports: map[string]Port{"vpc1-sub1": {}, "vpc1-sub2": {}}}
			if diff := cmp.Diff(want, Dump(t, c)); diff != "" {
				t.Errorf("Dump after two AddRouterPort: -want +got:\n%s", diff)
			}
			// A second client reads the same row through its monitor.
			other := Connect(t, s.Endpoint())
			lrp := &nbmodel.LogicalRouterPort{Name: "vpc1-sub1"}
			if err := other.Get(context.Background(), lrp); err != nil {
				t.Fatalf("Get from a second client: %v", err)
			}
			if diff := cmp.Diff([]string{"10.0.0.1/24"}, lrp.Networks); diff != "" {
				t.Errorf("networks: -want +got:\n%s", diff)
			}
			DeleteRouterPort(t, c, "vpc1-sub1")
			want.Ports = map[string]Port{"vpc1-sub2": {}}
			if diff := cmp.Diff(want, Dump(t, c)); diff != "" {
				t.Errorf("Dump after DeleteRouterPort (the NB must garbage-collect the port): -want +got:\n%s", diff)
			}
		})
	}
}

func TestInMemoryDownUp(t *testing.T) {
	s := StartInMemory(t)
	c := Connect(t, s.Endpoint())
	AddRouterPort(t, c, "r", "p1")
	s.Down()
	waitFor(t, func() bool { return c.CurrentEndpoint() == "" }, "the client to notice the cut")
	if _, err := TransactErr(c); err == nil {
		t.Fatal("a transaction while the switch is down must fail")
	}
	if err := s.Up(); err != nil {
		t.Fatal(err)
	}
	c2 := Connect(t, s.Endpoint())
	if diff := cmp.Diff(map[string]Port{"p1": {}}, Dump(t, c2).Ports); diff != "" {
		t.Errorf("rows must survive Down/Up: -want +got:\n%s", diff)
	}
}

func TestRealKillRestart(t *testing.T) {
	s := StartReal(t)
	c := Connect(t, s.Endpoint())
	AddRouterPort(t, c, "r", "p1")
	s.Kill()
	if s.Running() {
		t.Fatal("Kill must end the process")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	c2 := Connect(t, s.Endpoint())
	if diff := cmp.Diff(map[string]Port{"p1": {}}, Dump(t, c2).Ports); diff != "" {
		t.Errorf("a committed port must survive kill -9: -want +got:\n%s", diff)
	}
}

func TestSetLeader(t *testing.T) {
	s := StartInMemory(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.SetLeader(ctx, false); err != nil {
		t.Fatal(err)
	}
	m, err := ClientModel()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewOVSDBClient(m, client.WithEndpoint(s.Endpoint()), client.WithLeaderOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err == nil {
		c.Close()
		t.Fatal("a leader-only client must refuse a follower")
	}
	if err := s.SetLeader(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("a leader-only client must accept the leader: %v", err)
	}
	c.Close()
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReset(t *testing.T) {
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			c := Connect(t, start(t).Endpoint())
			AddRouterPort(t, c, "r", "p1")
			SetPortGroup(t, c, "p1", AddGroup(t, c, "g", nil, Chassis{Name: "c", Priority: 1}))
			AddGatewayChassis(t, c, "p1", "c", 1)
			Reset(t, c)
			want := State{Groups: map[string]Group{}, Ports: map[string]Port{}}
			if diff := cmp.Diff(want, Dump(t, c)); diff != "" {
				t.Errorf("Reset: -want +got:\n%s", diff)
			}
			if n := len(Select[nbmodel.HAChassis](t, c)) + len(Select[nbmodel.GatewayChassis](t, c)); n != 0 {
				t.Errorf("Reset must leave no chassis rows, %d remain", n)
			}
		})
	}
}
