// Package livecap captures frames from a live Linux network interface
// through an AF_PACKET socket with a TPACKET_V3 memory-mapped ring, without
// cgo or libpcap. A classic BPF filter in the kernel admits only RoCE
// frames (see RoCEFilter), and frames are handed out in the capture.Frame
// type that file reading uses, straight from the ring.
package livecap

import (
	"errors"
	"time"

	"golang.org/x/net/bpf"
)

// Sentinel errors, wrapped by the errors of Open and Next.
var (
	// ErrNoSuchInterface means the interface named to Open does not
	// exist; the message lists the interfaces that do.
	ErrNoSuchInterface = errors.New("no such network interface")
	// ErrPermission means the kernel refused a packet socket: capturing
	// needs root or the CAP_NET_RAW capability.
	ErrPermission = errors.New("needs root or the CAP_NET_RAW capability")
	// ErrNotEthernet means the interface does not carry Ethernet frames
	// (a tunnel, IPoIB ...), which the dissector cannot read.
	ErrNotEthernet = errors.New("interface does not carry Ethernet frames")
	// ErrInterfaceDown means the interface went down (or disappeared)
	// during the capture. The frames captured before it have all been
	// returned by Next.
	ErrInterfaceDown = errors.New("network interface went down during the capture")
	// ErrTimeout is returned by Next when no frame arrived within the poll
	// timeout; the caller may check its own conditions and call Next
	// again.
	ErrTimeout = errors.New("no frame within the poll timeout")
	// ErrClosed is returned by the methods of a closed Source.
	ErrClosed = errors.New("capture source closed")
	// ErrUnsupported is returned by Open on systems other than Linux.
	ErrUnsupported = errors.New("live capture needs Linux (AF_PACKET)")
)

// Defaults of Options.
const (
	// DefaultPollTimeout is how long Next waits for a frame before
	// returning ErrTimeout when Options.PollTimeout is 0. It bounds how
	// late a caller notices an interrupt or a deadline.
	DefaultPollTimeout = 100 * time.Millisecond
	// DefaultBufferSize is the ring's size in bytes when
	// Options.BufferSize is 0: about a quarter of a second of a saturated
	// 1 Gbit/s link, or 30 000 frames of 1 KiB payload.
	DefaultBufferSize = 32 << 20
)

// Ring geometry. TPACKET_V3 packs frames of any length back to back into
// blocks; the kernel cuts a frame only when it is longer than a whole block
// (minus the block header), so 1 MiB blocks keep 9000-byte jumbo frames and
// even 64 KiB GRO aggregates whole, ICRC included. The frame size is only
// used to check the ring's geometry under V3 (tp_frame_nr must equal the
// frames per block times the blocks); 16 KiB would also hold a jumbo frame
// with its headers were the ring a V1/V2 one, whose slots have that size.
// gopacket derives frames per block as block size over frame size and
// requires the block size to be a multiple of both the page size and the
// frame size, which these values are.
const (
	blockSize = 1 << 20
	frameSize = 16 << 10
	minBlocks = 2
	// blockTimeout is TPACKET_V3's tp_retire_blk_tov: how long the kernel
	// keeps a partly filled block before handing it over, and so the
	// latency of a frame on a quiet link.
	blockTimeout = 32 * time.Millisecond
	// drainWait is how long Next keeps reading after the interface went
	// down: the kernel hands over the block it was filling only when its
	// retire timer fires, within blockTimeout; ten times that leaves room
	// for a timer run late on a busy machine.
	drainWait = 10 * blockTimeout
	drainStep = 4 * time.Millisecond
)

// linkTypeEthernet is LINKTYPE_ETHERNET, the link type of every frame.
const linkTypeEthernet = 1

// Options tune Open. The zero value captures RoCE on UDP port 4791, not in
// promiscuous mode, with the default poll timeout and buffer.
type Options struct {
	// Promiscuous puts the interface in promiscuous mode for as long as
	// the source is open, so that frames addressed to other hosts (from a
	// mirror port, say) are captured too.
	Promiscuous bool
	// Ports are UDP destination ports besides 4791 that carry RoCEv2; the
	// default filter admits them too.
	Ports []uint16
	// Filter, when not empty, replaces the RoCE filter: a classic BPF
	// program such as ParseTcpdumpDD returns. Its return value is the
	// number of bytes kept of each frame, as for tcpdump.
	Filter []bpf.RawInstruction
	// PollTimeout bounds how long Next waits; 0 means DefaultPollTimeout.
	// It is rounded down to whole milliseconds, at least one.
	PollTimeout time.Duration
	// BufferSize is the size of the kernel ring in bytes; 0 means
	// DefaultBufferSize. It is rounded up to whole 1 MiB blocks, at least
	// two. Frames arriving while the ring is full are dropped by the
	// kernel and counted in Stats.Dropped.
	BufferSize int
}

// Stats are the counters of a capture.
type Stats struct {
	// Received is the number of frames the kernel's filter admitted to
	// the socket, dropped ones included (libpcap's ps_recv). It also
	// counts the few frames that reached the socket in the instant
	// before the filter was attached, which Next refuses.
	Received uint64
	// Dropped is the number of admitted frames the kernel dropped because
	// the ring was full: the capture missed them, the network did not.
	Dropped uint64
	// QueueFreezes is the number of times the ring filled up.
	QueueFreezes uint64
	// Delivered is the number of frames Next returned.
	Delivered uint64
}
