//go:build linux

package ovnlab

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// ARP frame layout (Ethernet II, IPv4 over Ethernet).
const (
	etherTypeARP = 0x0806
	arpFrameLen  = 14 + 28
	arpRequest   = 1
	arpReply     = 2
)

// ARPReply is one ARP reply a host received.
type ARPReply struct {
	// Sender is the hardware address the reply announces for the target.
	Sender net.HardwareAddr
	// EtherSrc is the Ethernet source of the frame.
	EtherSrc net.HardwareAddr
}

// ARP broadcasts one ARP request for target from the host's eth0 and
// returns every reply that arrives within wait, duplicates included: two
// chassis that both answer give two replies.
func (h *Host) ARP(target netip.Addr, wait time.Duration) ([]ARPReply, error) {
	if !target.Is4() || !h.Addr.Addr().Is4() {
		return nil, fmt.Errorf("ARP needs IPv4 addresses, got %s from %s", target, h.Addr.Addr())
	}
	fd, mac, ifindex, err := packetSocket(h.NS, "eth0")
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	defer unix.Close(fd)
	req := arpRequestFrame(mac, h.Addr.Addr(), target)
	to := &unix.SockaddrLinklayer{Protocol: htons(etherTypeARP), Ifindex: ifindex, Halen: 6}
	copy(to.Addr[:], broadcast)
	if err := unix.Sendto(fd, req, 0, to); err != nil {
		return nil, fmt.Errorf("host %s: cannot send the ARP request: %w", h.Name, err)
	}
	tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, err
	}
	var replies []ARPReply
	buf := make([]byte, 2048)
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return replies, fmt.Errorf("host %s: cannot read ARP: %w", h.Name, err)
		}
		if r, ok := ParseARPReply(buf[:n], target, h.Addr.Addr(), mac); ok {
			replies = append(replies, r)
		}
	}
	return replies, nil
}

var broadcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// arpRequestFrame builds a broadcast ARP request "who has target, tell src".
func arpRequestFrame(mac net.HardwareAddr, src, target netip.Addr) []byte {
	f := make([]byte, arpFrameLen)
	copy(f[0:6], broadcast)
	copy(f[6:12], mac)
	binary.BigEndian.PutUint16(f[12:14], etherTypeARP)
	a := f[14:]
	binary.BigEndian.PutUint16(a[0:2], 1)      // Ethernet
	binary.BigEndian.PutUint16(a[2:4], 0x0800) // IPv4
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:8], arpRequest)
	copy(a[8:14], mac)
	s4, t4 := src.As4(), target.As4()
	copy(a[14:18], s4[:])
	copy(a[24:28], t4[:])
	return f
}

// ParseARPReply reports whether frame is an Ethernet ARP reply from target
// to (self, selfMAC), and what it announces. Anything else, including a
// short or malformed frame, is not a reply.
func ParseARPReply(frame []byte, target, self netip.Addr, selfMAC net.HardwareAddr) (ARPReply, bool) {
	if len(frame) < arpFrameLen || binary.BigEndian.Uint16(frame[12:14]) != etherTypeARP {
		return ARPReply{}, false
	}
	a := frame[14:]
	if binary.BigEndian.Uint16(a[0:2]) != 1 || binary.BigEndian.Uint16(a[2:4]) != 0x0800 || a[4] != 6 || a[5] != 4 ||
		binary.BigEndian.Uint16(a[6:8]) != arpReply {
		return ARPReply{}, false
	}
	spa, tpa := netip.AddrFrom4([4]byte(a[14:18])), netip.AddrFrom4([4]byte(a[24:28]))
	if spa != target || tpa != self || !bytes.Equal(a[18:24], selfMAC) {
		return ARPReply{}, false
	}
	return ARPReply{
		Sender:   bytes.Clone(a[8:14]),
		EtherSrc: bytes.Clone(frame[6:12]),
	}, true
}

// packetSocket opens an AF_PACKET socket for ARP inside network namespace
// ns, bound to ifname there, and returns it with the interface's MAC and
// index. The socket keeps its namespace after the thread returns to its own.
func packetSocket(ns, ifname string) (fd int, mac net.HardwareAddr, ifindex int, err error) {
	fd = -1
	err = inNamespace(ns, func() error {
		var err error
		fd, mac, ifindex, err = bindPacket(ifname)
		return err
	})
	if err != nil && fd >= 0 {
		unix.Close(fd)
	}
	return fd, mac, ifindex, err
}

func bindPacket(ifname string) (int, net.HardwareAddr, int, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return -1, nil, 0, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(etherTypeARP)))
	if err != nil {
		return -1, nil, 0, fmt.Errorf("cannot open a packet socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(etherTypeARP), Ifindex: ifc.Index}); err != nil {
		unix.Close(fd)
		return -1, nil, 0, fmt.Errorf("cannot bind a packet socket to %s: %w", ifname, err)
	}
	return fd, ifc.HardwareAddr, ifc.Index, nil
}
