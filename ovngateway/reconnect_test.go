package ovngateway_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// TestOnReconnect: the first connection is not a reconnect; each
// connection made again after a loss calls OnReconnect once.
func TestOnReconnect(t *testing.T) {
	s := ovngatewaytest.StartReal(t)
	var calls atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ovngateway.Dial(ctx, ovngateway.Config{Address: s.Endpoint(), MaxBackoff: 20 * time.Millisecond, OnReconnect: func() { calls.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	time.Sleep(100 * time.Millisecond)
	if n := calls.Load(); n != 0 {
		t.Fatalf("OnReconnect was called %d times after the first connection, want 0", n)
	}
	for round := int32(1); round <= 2; round++ {
		s.Kill()
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		for calls.Load() < round {
			if ctx.Err() != nil {
				t.Fatalf("OnReconnect was called %d times after %d restarts", calls.Load(), round)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := c.Sync(ctx); err != nil {
			t.Fatalf("after OnReconnect the client is connected: %v", err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := calls.Load(); n != 2 {
		t.Errorf("OnReconnect was called %d times after 2 restarts", n)
	}
}
