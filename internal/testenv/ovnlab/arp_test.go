//go:build linux

package ovnlab

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
)

var (
	testSelf    = netip.MustParseAddr("10.0.0.10")
	testTarget  = netip.MustParseAddr("10.0.0.1")
	testSelfMAC = net.HardwareAddr{2, 0, 0, 0, 0, 0x10}
	testRouter  = net.HardwareAddr{0x0a, 0, 0, 0, 1, 1}
)

// replyFrame turns a request built by arpRequestFrame into the reply the
// target would send.
func replyFrame(req []byte, mac net.HardwareAddr) []byte {
	f := bytes.Clone(req)
	copy(f[0:6], req[6:12])
	copy(f[6:12], mac)
	a, r := f[14:], req[14:]
	binary.BigEndian.PutUint16(a[6:8], arpReply)
	copy(a[8:14], mac)
	copy(a[14:18], r[24:28])
	copy(a[18:24], r[8:14])
	copy(a[24:28], r[14:18])
	return f
}

func TestParseARPReply(t *testing.T) {
	req := arpRequestFrame(testSelfMAC, testSelf, testTarget)
	reply := replyFrame(req, testRouter)
	r, ok := ParseARPReply(reply, testTarget, testSelf, testSelfMAC)
	if !ok || !bytes.Equal(r.Sender, testRouter) || !bytes.Equal(r.EtherSrc, testRouter) {
		t.Fatalf("a reply from the target: got %+v, %v", r, ok)
	}
	other := netip.MustParseAddr("10.0.0.2")
	for name, f := range map[string][]byte{
		"request":       req,
		"short":         reply[:arpFrameLen-1],
		"not ARP":       append(append([]byte{}, reply[:12]...), append([]byte{0x08, 0x00}, reply[14:]...)...),
		"other sender":  replyFrame(arpRequestFrame(testSelfMAC, testSelf, other), testRouter),
		"other asker":   replyFrame(arpRequestFrame(testSelfMAC, other, testTarget), testRouter),
		"other tha MAC": replyFrame(arpRequestFrame(net.HardwareAddr{2, 0, 0, 0, 0, 0x11}, testSelf, testTarget), testRouter),
	} {
		if r, ok := ParseARPReply(f, testTarget, testSelf, testSelfMAC); ok {
			t.Errorf("%s: parsed as a reply: %+v", name, r)
		}
	}
}

func FuzzParseARPReply(f *testing.F) {
	req := arpRequestFrame(testSelfMAC, testSelf, testTarget)
	f.Add(req)
	f.Add(replyFrame(req, testRouter))
	f.Add([]byte{})
	f.Add(make([]byte, arpFrameLen))
	f.Fuzz(func(t *testing.T, frame []byte) {
		r, ok := ParseARPReply(frame, testTarget, testSelf, testSelfMAC)
		if !ok {
			return
		}
		if len(r.Sender) != 6 || len(r.EtherSrc) != 6 {
			t.Fatalf("reply with short addresses: %+v", r)
		}
		// A parsed reply is exactly what the target would answer.
		back := replyFrame(req, r.Sender)
		copy(back[0:12], frame[0:12])
		if !bytes.Equal(back, frame[:arpFrameLen]) {
			t.Fatalf("frame %x parsed as a reply but differs from the reply %x", frame[:arpFrameLen], back)
		}
	})
}
