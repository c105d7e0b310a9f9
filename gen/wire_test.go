package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	glayers "github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"roce-inspect/layers"
)

// This file reads generated captures back without the generator's code: the
// frames go through gopacket's decoders and a hand-written parse of the
// transport headers from the IBTA tables, so that the tests compare the
// generator with something other than itself.

// wireExt is the length of the extended headers after the BTH for every
// opcode the generator writes (IBTA Vol. 1, 9.2 and 9.3).
var wireExt = map[uint8]int{
	0x00: 0, 0x01: 0, 0x02: 0, 0x03: 4, 0x04: 0, 0x05: 4, // SEND
	0x06: 16, 0x07: 0, 0x08: 0, 0x09: 4, 0x0a: 16, 0x0b: 20, // RDMA WRITE
	0x0c: 16,                           // RDMA READ request: RETH
	0x0d: 4, 0x0e: 0, 0x0f: 4, 0x10: 4, // READ RESPONSE: AETH on first, last, only
	0x11: 4, 0x12: 12, // ACK: AETH; ATOMIC ACK: AETH + AtomicAckETH
	0x13: 28, 0x14: 28, // COMPARE_SWAP, FETCH_ADD: AtomicETH
	0x64: 8, 0x65: 12, // UD SEND_ONLY: DETH (+ ImmDt)
	0x81: 16, // CNP: 16 reserved bytes
}

// wire is one frame as read back.
type wire struct {
	Frame    int
	TS       int64 // ns since the epoch
	Len      int
	V1       bool
	Src, Dst netip.Addr
	SrcPort  uint16
	ECN      uint8
	Op       uint8
	SE       bool
	AckReq   bool
	BECN     bool
	Pad      int
	PKey     uint16
	DestQP   uint32
	PSN      uint32
	Ext      []byte
	PayLen   int
	ICRCGood bool

	Syndrome uint8 // with an AETH
	HasAETH  bool
	MSN      uint32
	DMALen   uint32 // RETH
	QKey     uint32 // DETH
	SrcQP    uint32 // DETH
	SwapAdd  uint64 // AtomicETH
	Compare  uint64 // AtomicETH
	Orig     uint64 // AtomicAckETH
}

func be24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

// readCapture parses a pcap or pcapng capture the generator wrote and checks
// the invariants every frame must meet: gopacket decodes it without error,
// IPv4 header checksums verify, UDP lengths equal the IP payload, the UDP
// checksum is 0 and the destination port 4791, the GRH says IBA transport,
// and the lengths add up. ICRCGood records whether the ICRC verifies.
func readCapture(t *testing.T, data []byte, ng bool) []wire {
	t.Helper()
	type reader interface {
		ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	}
	var r reader
	var err error
	if ng {
		r, err = pcapgo.NewNgReader(bytes.NewReader(data), pcapgo.DefaultNgReaderOptions)
	} else {
		r, err = pcapgo.NewReader(bytes.NewReader(data))
	}
	if err != nil {
		t.Fatalf("reading the capture header: %v", err)
	}
	var out []wire
	for n := 1; ; n++ {
		d, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("frame %d: %v", n, err)
		}
		w, msg := parseFrame(d)
		if msg != "" {
			t.Fatalf("frame %d: %s", n, msg)
		}
		w.Frame, w.TS, w.Len = n, ci.Timestamp.UnixNano(), ci.Length
		if ci.CaptureLength != ci.Length || ci.Length != len(d) {
			t.Fatalf("frame %d: captured %d of %d bytes", n, ci.CaptureLength, ci.Length)
		}
		out = append(out, w)
	}
	return out
}

// parseFrame decodes one frame; it returns a description of what is wrong
// with it, or "".
func parseFrame(d []byte) (wire, string) {
	var w wire
	pkt := gopacket.NewPacket(d, glayers.LayerTypeEthernet, gopacket.Default)
	if el := pkt.ErrorLayer(); el != nil {
		return w, "gopacket: " + el.Error().Error()
	}
	eth, ok := pkt.Layer(glayers.LayerTypeEthernet).(*glayers.Ethernet)
	if !ok {
		return w, "no Ethernet layer"
	}
	if len(d) < 60 {
		return w, "frame shorter than 60 bytes"
	}
	var net, transport []byte
	var kind layers.NetworkHeader
	switch eth.EthernetType {
	case glayers.EthernetTypeIPv4:
		ip, _ := pkt.Layer(glayers.LayerTypeIPv4).(*glayers.IPv4)
		udp, _ := pkt.Layer(glayers.LayerTypeUDP).(*glayers.UDP)
		if ip == nil || udp == nil {
			return w, "IPv4 frame without IPv4 and UDP layers"
		}
		if gopacket.FoldChecksum(gopacket.ComputeChecksum(d[14:34], 0)) != 0 {
			return w, "IPv4 header checksum does not verify"
		}
		if ip.IHL != 5 || ip.Flags != glayers.IPv4DontFragment || ip.TTL != 64 {
			return w, "unexpected IPv4 IHL, flags or TTL"
		}
		if int(ip.Length) > len(d)-14 || int(udp.Length) != int(ip.Length)-20 {
			return w, "IPv4 length and UDP length disagree"
		}
		net = d[14 : 14+int(ip.Length)]
		transport = net[28:]
		kind = layers.ICRCIPv4
		w.Src, _ = netip.AddrFromSlice(ip.SrcIP.To4())
		w.Dst, _ = netip.AddrFromSlice(ip.DstIP.To4())
		w.ECN = ip.TOS & 3
		w.SrcPort = uint16(udp.SrcPort)
		if udp.DstPort != 4791 || udp.Checksum != 0 {
			return w, "UDP destination port not 4791 or checksum not 0"
		}
	case glayers.EthernetTypeIPv6:
		ip, _ := pkt.Layer(glayers.LayerTypeIPv6).(*glayers.IPv6)
		udp, _ := pkt.Layer(glayers.LayerTypeUDP).(*glayers.UDP)
		if ip == nil || udp == nil {
			return w, "IPv6 frame without IPv6 and UDP layers"
		}
		if 54+int(ip.Length) > len(d) || int(udp.Length) != int(ip.Length) {
			return w, "IPv6 payload length and UDP length disagree"
		}
		net = d[14 : 54+int(ip.Length)]
		transport = net[48:]
		kind = layers.ICRCIPv6
		w.Src, _ = netip.AddrFromSlice(ip.SrcIP)
		w.Dst, _ = netip.AddrFromSlice(ip.DstIP)
		w.ECN = ip.TrafficClass & 3
		w.SrcPort = uint16(udp.SrcPort)
		if udp.DstPort != 4791 || udp.Checksum != 0 {
			return w, "UDP destination port not 4791 or checksum not 0"
		}
	case 0x8915:
		if len(d) < 14+40 {
			return w, "short GRH"
		}
		g := d[14:54]
		payLen := int(binary.BigEndian.Uint16(g[4:]))
		if g[0]>>4 != 6 || g[6] != 0x1b || 54+payLen > len(d) {
			return w, "GRH version, next header or payload length wrong"
		}
		net = d[14 : 54+payLen]
		transport = net[40:]
		kind = layers.ICRCGRH
		w.V1 = true
		w.Src = netip.AddrFrom16([16]byte(g[8:24]))
		w.Dst = netip.AddrFrom16([16]byte(g[24:40]))
	default:
		return w, "unexpected Ethertype"
	}
	// Ethernet padding only where the frame would be shorter than 60.
	if 14+len(net) != len(d) && 14+len(net) >= 60 {
		return w, "bytes after the ICRC in a frame of 60 bytes or more"
	}
	if len(transport) < 16 {
		return w, "transport shorter than BTH and ICRC"
	}
	b := transport
	w.Op = b[0]
	w.SE, w.Pad = b[1]&0x80 != 0, int(b[1]>>4&3)
	w.PKey = binary.BigEndian.Uint16(b[2:])
	w.BECN = b[4]&0x40 != 0
	w.DestQP = be24(b[5:])
	w.AckReq = b[8]&0x80 != 0
	w.PSN = be24(b[9:])
	el, ok := wireExt[w.Op]
	if !ok {
		return w, "unexpected opcode"
	}
	if 12+el+w.Pad+4 > len(b) {
		return w, "transport too short for its opcode"
	}
	w.Ext = b[12 : 12+el]
	w.PayLen = len(b) - 12 - el - w.Pad - 4
	x := w.Ext
	switch w.Op {
	case 0x06, 0x0a, 0x0b, 0x0c:
		w.DMALen = binary.BigEndian.Uint32(x[12:])
	case 0x0d, 0x0f, 0x10, 0x11, 0x12:
		w.HasAETH, w.Syndrome, w.MSN = true, x[0], be24(x[1:])
		if w.Op == 0x12 {
			w.Orig = binary.BigEndian.Uint64(x[4:])
		}
	case 0x13, 0x14:
		w.SwapAdd = binary.BigEndian.Uint64(x[12:])
		w.Compare = binary.BigEndian.Uint64(x[20:])
	case 0x64, 0x65:
		w.QKey, w.SrcQP = binary.BigEndian.Uint32(x), be24(x[5:])
	}
	crc, err := layers.ComputeICRC(kind, net[:len(net)-4])
	if err != nil {
		return w, "ComputeICRC: " + err.Error()
	}
	if ref := refICRC(kind, net[:len(net)-4]); ref != crc {
		return w, fmt.Sprintf("ComputeICRC %#08x, the reference %#08x", crc, ref)
	}
	w.ICRCGood = crc == binary.LittleEndian.Uint32(net[len(net)-4:])
	return w, ""
}

// refICRC is a plain reading of the ICRC definition (IBTA Vol. 1, 7.8.1 and
// Annex A17): CRC-32/IEEE over 8 bytes of 0xFF, then the packet from the
// IP header or GRH with the variant fields set to ones. It checks
// layers.ComputeICRC on every frame the tests read.
func refICRC(kind layers.NetworkHeader, pkt []byte) uint32 {
	b := append(bytes.Repeat([]byte{0xff}, 8), pkt...)
	h := b[8:]
	var bth int
	switch kind {
	case layers.ICRCIPv4:
		h[1], h[8], h[10], h[11] = 0xff, 0xff, 0xff, 0xff // TOS, TTL, checksum
		h[26], h[27] = 0xff, 0xff                         // UDP checksum
		bth = 28
	case layers.ICRCIPv6:
		h[0] |= 0x0f
		h[1], h[2], h[3], h[7] = 0xff, 0xff, 0xff, 0xff // class, flow label, hop limit
		h[46], h[47] = 0xff, 0xff
		bth = 48
	default: // GRH: masked like an IPv6 header, no UDP
		h[0] |= 0x0f
		h[1], h[2], h[3], h[7] = 0xff, 0xff, 0xff, 0xff
		bth = 40
	}
	h[bth+4] = 0xff // FECN, BECN, reserved
	return crc32.ChecksumIEEE(b)
}

// isRequest says whether opcode op is an RC request.
func isRequest(op uint8) bool { return op <= 0x0c || op == 0x13 || op == 0x14 }

// isResponse says whether opcode op is an RC response.
func isResponse(op uint8) bool { return op >= 0x0d && op <= 0x12 }

// endsMessage says whether an RC request with opcode op completes a message.
func endsMessage(op uint8) bool {
	switch op {
	case 0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x13, 0x14:
		return true
	}
	return false
}

// wkey identifies a flow on the wire.
type wkey struct {
	src, dst netip.Addr
	qp       uint32
}

func keyOf(w *wire) wkey { return wkey{w.Src, w.Dst, w.DestQP} }

// signed24 is the distance from b to a in PSN space, in -2^23..2^23-1.
func signed24(a, b uint32) int64 {
	d := int64((a - b) & 0xffffff)
	if d >= 1<<23 {
		d -= 1 << 24
	}
	return d
}

// reqFlow is what the checker learns about one requester's PSN stream.
type reqFlow struct {
	key       wkey
	started   bool
	lastPSN   uint32
	lastU     int64
	next      int64 // unwrapped next new PSN
	base      uint32
	firstSeen map[int64]int // unwrapped PSN -> frame of its first appearance
	gaps      []int64       // PSNs skipped when a later one appeared
	gapFrame  map[int64]int // frame that revealed the gap
	retrans   int
	wrapped   bool
}

// unwrap turns a 24-bit PSN into a position in the flow's stream.
func (f *reqFlow) unwrap(psn uint32) int64 {
	if !f.started {
		f.started, f.lastPSN, f.lastU, f.base = true, psn, 0, psn
		return 0
	}
	u := f.lastU + signed24(psn, f.lastPSN)
	f.lastPSN, f.lastU = psn, u
	return u
}

// psnAt is the 24-bit PSN at stream position u.
func (f *reqFlow) psnAt(u int64) uint32 { return uint32(int64(f.base)+u) & 0xffffff }

// rcTrace walks the RC requests of a capture: per flow, the PSN positions in
// order, gaps and retransmissions. pmtu turns READ lengths into PSN counts.
func rcTrace(ws []wire, pmtu int) map[wkey]*reqFlow {
	flows := map[wkey]*reqFlow{}
	for i := range ws {
		w := &ws[i]
		if !isRequest(w.Op) {
			continue
		}
		k := keyOf(w)
		f := flows[k]
		if f == nil {
			f = &reqFlow{key: k, firstSeen: map[int64]int{}, gapFrame: map[int64]int{}}
			flows[k] = f
		}
		prev := f.lastPSN
		u := f.unwrap(w.PSN)
		if f.started && u > 0 && w.PSN < prev && signed24(w.PSN, prev) > 0 {
			f.wrapped = true
		}
		n := int64(1)
		if w.Op == 0x0c {
			n = max(1, (int64(w.DMALen)+int64(pmtu)-1)/int64(pmtu))
			for j := int64(1); j < n; j++ {
				if f.psnAt(u+j) < f.psnAt(u+j-1) {
					f.wrapped = true
				}
			}
		}
		if _, seen := f.firstSeen[u]; !seen {
			f.firstSeen[u] = w.Frame
		}
		switch {
		case u == f.next:
			f.next += n
		case u > f.next:
			for g := f.next; g < u; g++ {
				if _, seen := f.firstSeen[g]; !seen {
					f.gaps = append(f.gaps, g)
					f.gapFrame[g] = w.Frame
				}
			}
			f.next = u + n
		default:
			f.retrans++
		}
	}
	return flows
}
