package livecap

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/gopacket/gopacket/afpacket"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"roce-inspect/capture"
)

// Source reads frames from a live interface. It is not safe for concurrent
// use: call Next, Stats and Close from one goroutine.
type Source struct {
	name string
	tp   *afpacket.TPacket

	// gate is the filter run in user space over the frames that reached
	// the ring before the kernel filter was attached (timestamps up to
	// gateUntil); nil when the filter uses loads the VM cannot run.
	gate      *bpf.VM
	gateUntil int64

	index    int
	downAt   time.Time // when Next first saw the interface down
	errSeen  error     // sticky error once the interface is gone
	prevRecv uint32    // gopacket's 32-bit cumulative counters at the last Stats
	prevDrop uint32
	prevFrz  uint32
	stats    Stats
}

// Open starts capturing on the named interface. The interface must exist
// and carry Ethernet frames; the caller needs root or CAP_NET_RAW. Open
// must run in the network namespace of the interface (the socket stays in
// it afterwards, whatever thread reads it).
func Open(iface string, opts Options) (*Source, error) {
	if err := checkInterface(iface); err != nil {
		return nil, err
	}
	filter := opts.Filter
	if len(filter) == 0 {
		var err error
		filter, err = RoCEFilter(opts.Ports...)
		if err != nil {
			return nil, err
		}
	}
	if len(filter) > MaxFilterLen {
		return nil, fmt.Errorf("%w: %d instructions, more than %d", ErrBadFilter, len(filter), MaxFilterLen)
	}
	vmProg := vmProgram(filter)

	timeout := opts.PollTimeout
	if timeout == 0 {
		timeout = DefaultPollTimeout
	}
	timeout = max(timeout.Truncate(time.Millisecond), time.Millisecond)
	size := opts.BufferSize
	if size <= 0 {
		size = DefaultBufferSize
	}
	blocks := max((size+blockSize-1)/blockSize, minBlocks)

	tp, err := afpacket.NewTPacket(
		afpacket.OptInterface(iface),
		afpacket.OptTPacketVersion(afpacket.TPacketVersion3),
		afpacket.OptFrameSize(frameSize),
		afpacket.OptBlockSize(blockSize),
		afpacket.OptNumBlocks(blocks),
		afpacket.OptBlockTimeout(blockTimeout),
		afpacket.OptPollTimeout(timeout),
		// The kernel moves the outer VLAN tag into metadata; putting it
		// back gives whole frames as they were on the wire (priority bits
		// included), at the cost of a copy of tagged frames only.
		afpacket.OptAddVLANHeader(true),
	)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("capturing on %s %w (%v)", iface, ErrPermission, err)
		}
		return nil, fmt.Errorf("capturing on %s: %w", iface, err)
	}
	s := &Source{name: iface, tp: tp}
	if opts.Promiscuous {
		if err := tp.SetPromiscuous(true); err != nil {
			tp.Close()
			return nil, fmt.Errorf("promiscuous mode on %s: %w", iface, err)
		}
	}
	// The socket was bound, and its ring filled, before a filter can be
	// attached: frames that arrived in between passed unfiltered. They
	// carry timestamps no later than the moment the filter is in place,
	// so the same program is run on those in user space. A clock stepped
	// backwards in that instant could let one through; the dissector
	// would count it as not RoCE.
	if err := tp.SetBPF(filter); err != nil {
		tp.Close()
		return nil, fmt.Errorf("%w: the kernel refused it on %s: %v", ErrBadFilter, iface, err)
	}
	s.gateUntil = time.Now().UnixNano()
	if vmProg != nil {
		if vm, err := bpf.NewVM(vmProg); err == nil {
			s.gate = vm
		}
	}
	return s, nil
}

// checkInterface returns ErrNoSuchInterface, listing the interfaces that
// exist, or ErrNotEthernet, or nil.
func checkInterface(iface string) error {
	if _, err := net.InterfaceByName(iface); err != nil {
		var names []string
		if all, lerr := net.Interfaces(); lerr == nil {
			for _, i := range all {
				names = append(names, i.Name)
			}
		}
		list := "none"
		if len(names) > 0 {
			list = strings.Join(names, ", ")
		}
		return fmt.Errorf("%w %q (interfaces: %s)", ErrNoSuchInterface, iface, list)
	}
	hw, err := hardwareType(iface)
	if err != nil {
		return fmt.Errorf("interface %s: %w", iface, err)
	}
	if hw != unix.ARPHRD_ETHER && hw != unix.ARPHRD_LOOPBACK {
		return fmt.Errorf("%s: %w (hardware type %d)", iface, ErrNotEthernet, hw)
	}
	return nil
}

// hardwareType returns the ARPHRD_ type of an interface. The ioctl works
// on any socket and answers for the socket's network namespace; a Unix
// socket needs no privilege.
func hardwareType(iface string) (uint16, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(iface)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFHWADDR, ifr); err != nil {
		return 0, os.NewSyscallError("SIOCGIFHWADDR", err)
	}
	// The answer is a struct sockaddr whose first field, sa_family, holds
	// the hardware type in host byte order.
	return ifr.Uint16(), nil
}

// vmProgram disassembles filter for golang.org/x/net/bpf's VM, or returns
// nil when it holds loads the VM does not implement (ancillary data other
// than the length, which tcpdump uses for VLAN filters).
func vmProgram(filter []bpf.RawInstruction) []bpf.Instruction {
	prog, ok := bpf.Disassemble(filter)
	if !ok {
		return nil
	}
	for _, ins := range prog {
		if e, isExt := ins.(bpf.LoadExtension); isExt && e.Num != bpf.ExtLen {
			return nil
		}
	}
	return prog
}

// Name returns the interface the source captures on.
func (s *Source) Name() string { return s.name }

// Next fills f with the next frame: Data aliases the kernel ring and is
// valid until the next call to Next or Close, Timestamp is the kernel's
// receive time in nanoseconds since the epoch, CapLen and Len are the
// captured and wire lengths (equal unless a user filter cut the frame),
// LinkType is 1 (Ethernet) and Index counts frames from 1. It returns
// ErrTimeout when no frame came within the poll timeout, ErrInterfaceDown
// (wrapped) once the interface went down and every frame captured before
// has been returned, and ErrClosed after Close. Next does not allocate for
// untagged frames; for frames whose VLAN tag the kernel stripped, gopacket
// allocates to report the tag and to put it back.
func (s *Source) Next(f *capture.Frame) error {
	if s.tp == nil {
		return ErrClosed
	}
	if s.errSeen != nil {
		return s.errSeen
	}
	for {
		data, ci, err := s.tp.ZeroCopyReadPacketData()
		if err != nil {
			switch {
			case errors.Is(err, afpacket.ErrTimeout):
				if !s.downAt.IsZero() {
					// gopacket times out only after a full poll; no frame
					// came, so the block being filled is empty.
					return s.gone()
				}
				return ErrTimeout
			case errors.Is(err, afpacket.ErrPoll):
				// A packet socket reports an error only when its
				// interface goes down or is removed (ENETDOWN). Frames of
				// the block the kernel was filling are handed over when
				// its retire timer fires, so keep reading for a while.
				if s.downAt.IsZero() {
					s.downAt = time.Now()
				}
				if time.Since(s.downAt) > drainWait {
					return s.gone()
				}
				time.Sleep(drainStep)
				continue
			default:
				return fmt.Errorf("capture on %s: %w", s.name, err)
			}
		}
		ts := ci.Timestamp.UnixNano()
		if s.gate != nil && ts <= s.gateUntil {
			n, err := s.gate.Run(data)
			if err != nil || n == 0 {
				continue
			}
			if n < len(data) {
				data = data[:n]
			}
		}
		s.index++
		s.stats.Delivered++
		*f = capture.Frame{
			Data:      data,
			Timestamp: ts,
			CapLen:    len(data),
			Len:       max(ci.Length, len(data)),
			LinkType:  linkTypeEthernet,
			Index:     s.index,
		}
		return nil
	}
}

// gone records and returns the error of an interface that went down.
func (s *Source) gone() error {
	s.errSeen = fmt.Errorf("%s: %w", s.name, ErrInterfaceDown)
	return s.errSeen
}

// Stats returns the kernel's counters for the socket (frames admitted,
// dropped for want of ring space, ring freezes) and the frames delivered.
// The kernel resets its counters when read; gopacket accumulates them in
// 32 bits, and Stats widens the increments to 64, which stays exact as
// long as it is called at least once per 2^32 frames.
func (s *Source) Stats() (Stats, error) {
	if s.tp == nil {
		return Stats{}, ErrClosed
	}
	_, v3, err := s.tp.SocketStats()
	if err != nil {
		return s.stats, fmt.Errorf("capture statistics of %s: %w", s.name, err)
	}
	recv, drop, frz := uint32(v3.Packets()), uint32(v3.Drops()), uint32(v3.QueueFreezes())
	s.stats.Received += uint64(recv - s.prevRecv)
	s.stats.Dropped += uint64(drop - s.prevDrop)
	s.stats.QueueFreezes += uint64(frz - s.prevFrz)
	s.prevRecv, s.prevDrop, s.prevFrz = recv, drop, frz
	return s.stats, nil
}

// Close stops the capture and releases the ring; promiscuous mode ends
// with it. Data returned by Next is no longer valid.
func (s *Source) Close() error {
	if s.tp == nil {
		return ErrClosed
	}
	s.tp.Close()
	s.tp = nil
	return nil
}
