// Package livecaptest provides what tests of live capture need: two Linux
// network namespaces joined by a veth pair, running code inside either
// namespace, a raw AF_PACKET sender, and hand-built frames.
package livecaptest

import (
	"encoding/binary"
)

// Ethernet addresses of the frames built here: locally administered
// unicast addresses.
var (
	DstMAC = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
	SrcMAC = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
)

// Ethertypes and IP protocol numbers of the frames built here.
const (
	EtherTypeIPv4   = 0x0800
	EtherTypeIPv6   = 0x86dd
	EtherTypeARP    = 0x0806
	EtherTypeRoCEv1 = 0x8915
	TPIDVLAN        = 0x8100 // IEEE 802.1Q customer tag
	TPIDQinQ        = 0x88a8 // IEEE 802.1ad service tag
	ProtoTCP        = 6
	ProtoUDP        = 17
	RoCEv2Port      = 4791
)

// Tag is one VLAN tag: its TPID and its tag control information (priority,
// drop eligibility, VLAN ID).
type Tag struct {
	TPID uint16
	TCI  uint16
}

// Ethernet returns a frame from DstMAC to SrcMAC with the tags, outermost
// first, then etherType and the payload.
func Ethernet(tags []Tag, etherType uint16, payload []byte) []byte {
	b := make([]byte, 0, 14+4*len(tags)+len(payload))
	b = append(b, DstMAC[:]...)
	b = append(b, SrcMAC[:]...)
	for _, t := range tags {
		b = binary.BigEndian.AppendUint16(b, t.TPID)
		b = binary.BigEndian.AppendUint16(b, t.TCI)
	}
	b = binary.BigEndian.AppendUint16(b, etherType)
	return append(b, payload...)
}

// InsertTag returns a copy of an Ethernet frame with tag inserted after the
// MAC addresses, in front of any tag it already has.
func InsertTag(frame []byte, tag Tag) []byte {
	if len(frame) < 12 {
		return append([]byte(nil), frame...)
	}
	b := make([]byte, 0, len(frame)+4)
	b = append(b, frame[:12]...)
	b = binary.BigEndian.AppendUint16(b, tag.TPID)
	b = binary.BigEndian.AppendUint16(b, tag.TCI)
	return append(b, frame[12:]...)
}

// IPv4 returns an IPv4 packet: a header of 20 bytes plus options (whose
// length must be a multiple of 4; the IHL counts them), TTL 64, DF set
// unless fragOffset (in 8-byte units) is not 0, a correct header checksum,
// from 192.0.2.1 to 192.0.2.2, then the payload.
func IPv4(proto uint8, options []byte, fragOffset uint16, payload []byte) []byte {
	hl := 20 + len(options)
	b := make([]byte, hl, hl+len(payload))
	b[0] = 0x40 | byte(hl/4)
	b[1] = 0x02 // ECT(0), as RoCE marks its traffic
	binary.BigEndian.PutUint16(b[2:], uint16(hl+len(payload)))
	flags := uint16(0x4000) // don't fragment
	if fragOffset != 0 {
		flags = 0
	}
	binary.BigEndian.PutUint16(b[6:], flags|fragOffset&0x1fff)
	b[8] = 64
	b[9] = proto
	copy(b[12:], []byte{192, 0, 2, 1})
	copy(b[16:], []byte{192, 0, 2, 2})
	copy(b[20:], options)
	binary.BigEndian.PutUint16(b[10:], ipChecksum(b))
	return append(b, payload...)
}

// ipChecksum is the Internet checksum (RFC 1071) of an IPv4 header whose
// checksum field is zero.
func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// IPv6 returns an IPv6 packet from 2001:db8::1 to 2001:db8::2 with the
// given next header, hop limit 64 and the payload.
func IPv6(next uint8, payload []byte) []byte {
	b := make([]byte, 40, 40+len(payload))
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], uint16(len(payload)))
	b[6] = next
	b[7] = 64
	b[8], b[9], b[10], b[11], b[23] = 0x20, 0x01, 0x0d, 0xb8, 1
	b[24], b[25], b[26], b[27], b[39] = 0x20, 0x01, 0x0d, 0xb8, 2
	return append(b, payload...)
}

// GRH returns a RoCEv1 global route header (next header 0x1b, the
// InfiniBand transport) followed by the payload.
func GRH(payload []byte) []byte { return IPv6(0x1b, payload) }

// UDP returns a UDP datagram with the given ports; the checksum is left 0
// (none), which RoCEv2 allows.
func UDP(src, dst uint16, payload []byte) []byte {
	b := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(b[0:], src)
	binary.BigEndian.PutUint16(b[2:], dst)
	binary.BigEndian.PutUint16(b[4:], uint16(8+len(payload)))
	return append(b, payload...)
}

// TCP returns a 20-byte TCP header with the SYN flag, then the payload.
func TCP(src, dst uint16, payload []byte) []byte {
	b := make([]byte, 20, 20+len(payload))
	binary.BigEndian.PutUint16(b[0:], src)
	binary.BigEndian.PutUint16(b[2:], dst)
	b[12] = 5 << 4
	b[13] = 0x02
	binary.BigEndian.PutUint16(b[14:], 65535)
	return append(b, payload...)
}

// BTHSendOnly returns the transport of an RC SEND ONLY packet to QP 0x12:
// a 12-byte BTH, 16 bytes of payload and a zero ICRC. The ICRC is not
// valid: these frames exercise filters, not the dissector.
func BTHSendOnly() []byte {
	b := make([]byte, 12+16+4)
	b[0] = 0x04                                     // RC SEND ONLY
	b[1] = 0x40                                     // migration state
	binary.BigEndian.PutUint16(b[2:], 0xffff)       // default partition key
	binary.BigEndian.PutUint32(b[4:], 0x000012)     // destination QP
	binary.BigEndian.PutUint32(b[8:], 0x80000000|7) // ack request, PSN 7
	return b
}

// ARP returns an ARP request from SrcMAC for 192.0.2.2 in an Ethernet
// frame.
func ARP() []byte {
	b := make([]byte, 28)
	binary.BigEndian.PutUint16(b[0:], 1)      // Ethernet
	binary.BigEndian.PutUint16(b[2:], 0x0800) // IPv4
	b[4], b[5] = 6, 4
	binary.BigEndian.PutUint16(b[6:], 1) // request
	copy(b[8:], SrcMAC[:])
	copy(b[14:], []byte{192, 0, 2, 1})
	copy(b[24:], []byte{192, 0, 2, 2})
	return Ethernet(nil, EtherTypeARP, b)
}

// Labeled is a frame with a name for test messages.
type Labeled struct {
	Name  string
	Frame []byte
}

// NotRoCE returns frames a RoCE filter must refuse: TCP to port 4791, ARP,
// UDP from port 4791 to another port, a non-first IPv4 fragment of a
// datagram to port 4791, and IPv6 UDP from port 4791.
func NotRoCE() []Labeled {
	return []Labeled{
		{"TCP to port 4791", Ethernet(nil, EtherTypeIPv4, IPv4(ProtoTCP, nil, 0, TCP(50000, RoCEv2Port, BTHSendOnly())))},
		{"ARP request", ARP()},
		{"UDP from port 4791", Ethernet(nil, EtherTypeIPv4, IPv4(ProtoUDP, nil, 0, UDP(RoCEv2Port, 50000, BTHSendOnly())))},
		{"non-first IPv4 fragment", Ethernet(nil, EtherTypeIPv4, IPv4(ProtoUDP, nil, 185, UDP(50000, RoCEv2Port, BTHSendOnly())))},
		{"IPv6 UDP from port 4791", Ethernet(nil, EtherTypeIPv6, IPv6(ProtoUDP, UDP(RoCEv2Port, 50000, BTHSendOnly())))},
	}
}

// TcpdumpUDPDst4791 is what `tcpdump -dd udp dst port 4791` prints for an
// Ethernet interface (the program of `tcpdump -d` beside it).
const TcpdumpUDPDst4791 = `{ 0x28, 0, 0, 0x0000000c },
{ 0x15, 0, 4, 0x000086dd },
{ 0x30, 0, 0, 0x00000014 },
{ 0x15, 0, 11, 0x00000011 },
{ 0x28, 0, 0, 0x00000038 },
{ 0x15, 8, 9, 0x000012b7 },
{ 0x15, 0, 8, 0x00000800 },
{ 0x30, 0, 0, 0x00000017 },
{ 0x15, 0, 6, 0x00000011 },
{ 0x28, 0, 0, 0x00000014 },
{ 0x45, 4, 0, 0x00001fff },
{ 0xb1, 0, 0, 0x0000000e },
{ 0x48, 0, 0, 0x00000010 },
{ 0x15, 0, 1, 0x000012b7 },
{ 0x6, 0, 0, 0x00040000 },
{ 0x6, 0, 0, 0x00000000 },
`

// (000) ldh [12]; (001) jeq #0x86dd jt 2 jf 6; (002) ldb [20];
// (003) jeq #0x11 jt 4 jf 15; (004) ldh [56]; (005) jeq #0x12b7 jt 14 jf 15;
// (006) jeq #0x800 jt 7 jf 15; (007) ldb [23]; (008) jeq #0x11 jt 9 jf 15;
// (009) ldh [20]; (010) jset #0x1fff jt 15 jf 11; (011) ldxb 4*([14]&0xf);
// (012) ldh [x + 16]; (013) jeq #0x12b7 jt 14 jf 15; (014) ret #262144;
// (015) ret #0
