//go:build linux

package livecaptest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns add` mounts named namespaces.
const netnsDir = "/run/netns"

// pairs numbers the pairs made by this process, for unique names.
var pairs atomic.Int32

// Pair is two network namespaces, NS[0] and NS[1], joined by a veth pair:
// Link[0] lives in NS[0] and Link[1] in NS[1]. Both links are up.
type Pair struct {
	NS   [2]string
	Link [2]string
	ip   string
}

// NewPair creates a pair with links of the given MTU and removes it when
// the test ends, whatever its outcome. It skips the test, saying why, when
// not running as root, when the ip command (iproute2) is missing, or when
// the namespaces or links cannot be created (a container without the
// privilege, say).
func NewPair(t testing.TB, mtu int) *Pair {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("live capture tests need root: they create network namespaces and packet sockets")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("live capture tests need the ip command (iproute2), not found in PATH")
	}
	n := pairs.Add(1)
	// Interface names hold at most 15 bytes: "rl" + 7 digits + "x" + 3 + 1.
	id := fmt.Sprintf("%d", os.Getpid()%10_000_000)
	p := &Pair{ip: ip}
	for i, side := range []string{"a", "b"} {
		p.NS[i] = fmt.Sprintf("roce-live-%s-%d-%s", id, n, side)
		p.Link[i] = fmt.Sprintf("rl%sx%d%s", id, n%1000, side)
	}
	for i := range p.NS {
		ns := p.NS[i]
		if out, err := exec.Command(ip, "netns", "add", ns).CombinedOutput(); err != nil {
			t.Skipf("cannot create network namespace %s: %v: %s", ns, err, bytes.TrimSpace(out))
		}
		t.Cleanup(func() { exec.Command(ip, "netns", "del", ns).Run() })
	}
	m := fmt.Sprint(mtu)
	if out, err := exec.Command(ip, "link", "add", "name", p.Link[0], "mtu", m, "netns", p.NS[0],
		"type", "veth", "peer", "name", p.Link[1], "mtu", m, "netns", p.NS[1]).CombinedOutput(); err != nil {
		t.Skipf("cannot create a veth pair: %v: %s", err, bytes.TrimSpace(out))
	}
	for i := range p.NS {
		// No IPv6 on the links: no neighbour discovery or multicast
		// listener reports, so the only frames are the test's. The
		// write is best effort (a kernel without IPv6 has no such file).
		p.Run(i, func() error {
			return os.WriteFile("/proc/sys/net/ipv6/conf/"+p.Link[i]+"/disable_ipv6", []byte("1"), 0)
		})
		if err := p.IP(i, "link", "set", "dev", p.Link[i], "up"); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// IP runs `ip -n NS[side] args...`.
func (p *Pair) IP(side int, args ...string) error {
	out, err := exec.Command(p.ip, append([]string{"-n", p.NS[side]}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -n %s %s: %v: %s", p.NS[side], strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// SetDown sets Link[side] down. It uses an ioctl from inside the
// namespace rather than the ip command, so that the link goes down within
// a fraction of a millisecond of the call.
func (p *Pair) SetDown(side int) error {
	return p.Run(side, func() error {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq(p.Link[side])
		if err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
			return fmt.Errorf("SIOCGIFFLAGS %s: %w", p.Link[side], err)
		}
		ifr.SetUint16(ifr.Uint16() &^ unix.IFF_UP)
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
			return fmt.Errorf("SIOCSIFFLAGS %s: %w", p.Link[side], err)
		}
		return nil
	})
}

// Go runs fn on its own goroutine, locked to a thread that has entered
// NS[side], and delivers fn's error (or the failure to enter) on the
// returned channel. Sockets fn creates stay in that namespace and may be
// used from any goroutine afterwards.
func (p *Pair) Go(side int, fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() {
		// The thread stays locked: its namespace changed, so the runtime
		// must end it with this goroutine rather than reuse it.
		runtime.LockOSThread()
		fd, err := unix.Open(filepath.Join(netnsDir, p.NS[side]), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- fmt.Errorf("open namespace %s: %w", p.NS[side], err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			ch <- fmt.Errorf("enter namespace %s: %w", p.NS[side], err)
			return
		}
		ch <- fn()
	}()
	return ch
}

// Run is Go, waiting for fn to return.
func (p *Pair) Run(side int, fn func() error) error { return <-p.Go(side, fn) }

// Sender writes whole frames to a link through a raw AF_PACKET socket.
type Sender struct {
	fd   int
	addr unix.SockaddrLinklayer
}

// NewSender opens a sender on Link[side].
func (p *Pair) NewSender(side int) (*Sender, error) {
	var s *Sender
	err := p.Run(side, func() error {
		ifi, err := net.InterfaceByName(p.Link[side])
		if err != nil {
			return err
		}
		// Protocol 0: the socket receives nothing, it only sends.
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		// ETH_P_ALL as the protocol makes the kernel take it from the
		// frame's own Ethertype.
		s = &Sender{fd: fd, addr: unix.SockaddrLinklayer{Ifindex: ifi.Index, Protocol: htons(unix.ETH_P_ALL)}}
		return nil
	})
	return s, err
}

// htons returns v in network byte order, as sockaddr_ll wants it.
func htons(v uint16) uint16 {
	b := [2]byte{byte(v >> 8), byte(v)}
	return binary.NativeEndian.Uint16(b[:])
}

// Send writes one frame, Ethernet header first, without FCS.
func (s *Sender) Send(frame []byte) error {
	if err := unix.Sendto(s.fd, frame, 0, &s.addr); err != nil {
		return fmt.Errorf("send %d-byte frame: %w", len(frame), err)
	}
	return nil
}

// SendAll sends frames in order from one thread pinned to one CPU: the
// receiving veth queues frames on the backlog of the CPU that sent them, so
// a sender moving between CPUs could see its frames reordered. Frames whose
// entry in counted is true are the ones the receiver will see; before
// sending one, SendAll waits until fewer than window of them are
// outstanding, as seen() reports, so that no kernel queue on the way
// overflows. It gives up at deadline, saying how far the receiver got.
func (s *Sender) SendAll(frames [][]byte, counted []bool, window int, seen func() int, deadline time.Time) error {
	errc := make(chan error, 1)
	go func() {
		// The thread stays locked: its CPU affinity changed.
		runtime.LockOSThread()
		if err := pinToOneCPU(); err != nil {
			errc <- err
			return
		}
		sent := 0
		for i, fr := range frames {
			if counted[i] {
				for sent-seen() >= window {
					if time.Now().After(deadline) {
						errc <- fmt.Errorf("the receiver stalled: %d of %d frames seen", seen(), sent)
						return
					}
					time.Sleep(time.Millisecond)
				}
				sent++
			}
			if err := s.Send(fr); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	return <-errc
}

// pinToOneCPU restricts the calling thread to the first CPU it may run on.
func pinToOneCPU() error {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return fmt.Errorf("sched_getaffinity: %w", err)
	}
	for cpu := 0; cpu < 1024; cpu++ { // CPU_SETSIZE
		if set.IsSet(cpu) {
			set.Zero()
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				return fmt.Errorf("sched_setaffinity: %w", err)
			}
			return nil
		}
	}
	return errors.New("no CPU in the thread's affinity mask")
}

// Close closes the socket.
func (s *Sender) Close() error { return unix.Close(s.fd) }
