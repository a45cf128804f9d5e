//go:build linux

package ovnlab

import (
	"net/netip"
	"sync"
	"time"
)

// probeTimeout is how long each probe of a Prober waits for its reply.
const probeTimeout = 200 * time.Millisecond

// Prober pings a destination from a host, one echo request at a time, until
// stopped, and measures the longest outage: the time from the first failed
// probe to the next probe that succeeds. Its resolution is one probe, about
// 0.2 to 0.3 s.
type Prober struct {
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	sent     int
	failed   int
	longest  time.Duration
	downFrom time.Time
	upSince  time.Time
}

// Probe starts pinging dst from h.
func (h *Host) Probe(dst netip.Addr) *Prober {
	p := &Prober{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			sent := time.Now()
			_, err := h.Ping(dst, 0, false, probeTimeout)
			p.record(sent, err == nil)
			if wait := probeTimeout - time.Since(sent); wait > 0 {
				time.Sleep(wait)
			}
		}
	}()
	return p
}

func (p *Prober) record(sent time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent++
	switch {
	case ok:
		if !p.downFrom.IsZero() {
			p.longest = max(p.longest, sent.Sub(p.downFrom))
			p.downFrom = time.Time{}
			p.upSince = time.Time{}
		}
		if p.upSince.IsZero() {
			p.upSince = sent
		}
	default:
		p.failed++
		if p.downFrom.IsZero() {
			p.downFrom = sent
		}
		p.upSince = time.Time{}
	}
}

// UpFor reports whether every probe of at least the last d succeeded.
func (p *Prober) UpFor(d time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.upSince.IsZero() && time.Since(p.upSince) >= d
}

// ProbeResult is what a Prober saw.
type ProbeResult struct {
	// Sent and Failed count the probes.
	Sent, Failed int
	// Outage is the longest time from a failed probe to the next success.
	Outage time.Duration
	// Down says the destination was still unreachable when the probe stopped.
	Down bool
}

// Stop ends the probing and returns the result.
func (p *Prober) Stop() ProbeResult {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return ProbeResult{Sent: p.sent, Failed: p.failed, Outage: p.longest, Down: !p.downFrom.IsZero()}
}
