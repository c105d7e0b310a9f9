package dissect

import (
	"encoding/binary"
	"net/netip"

	"github.com/gopacket/gopacket"

	"roce-inspect/capture"
	"roce-inspect/layers"
)

// RoCEv2Port is the IANA-assigned UDP destination port of RoCEv2.
const RoCEv2Port = 4791

// Link types (LINKTYPE_ values of pcap and pcapng) the decoder understands.
const (
	LinkTypeEthernet = 1
	LinkTypeRaw      = 101 // raw IPv4 or IPv6, version from the first nibble
	LinkTypeLinuxSLL = 113 // Linux cooked capture v1 (tcpdump -i any)
	LinkTypeIPv4     = 228
	LinkTypeIPv6     = 229
	LinkTypeSLL2     = 276 // Linux cooked capture v2
	linkTypeRawBSD   = 12  // LINKTYPE_RAW as some writers still number it
	linkTypeRawOld   = 14
)

// Ethertypes the link-layer walk follows.
const (
	etherTypeIPv4   = 0x0800
	etherTypeIPv6   = 0x86dd
	etherTypeRoCEv1 = 0x8915
	etherTypeDot1Q  = 0x8100
	etherTypeQinQ   = 0x88a8
	etherTypeQinQ91 = 0x9100 // pre-standard stacked VLAN tag still seen on older switches
)

const (
	ipProtoUDP   = 17
	grhNextIBA   = 0x1b // GRH next header: InfiniBand transport (BTH)
	bthLen       = 12
	icrcLen      = 4
	ipv6HdrLen   = 40
	grhLen       = 40
	udpHdrLen    = 8
	maxVLANDepth = 8 // stacked tags beyond this are not a real network
)

// Reasons a RoCE packet is malformed. They are constant strings so that
// callers can count packets per reason without allocating.
const (
	ReasonIPHeader       = "IPv4 header length invalid"
	ReasonUDPLength      = "UDP length disagrees with the IP length"
	ReasonGRHNextHeader  = "GRH next header is not the InfiniBand transport"
	ReasonBTHShort       = "BTH shorter than 12 bytes"
	ReasonICRCShort      = "no room for the ICRC after the BTH"
	ReasonExtHeaderShort = "extended header cut short"
	ReasonPadCount       = "pad count larger than the payload"
	ReasonUnknownOpcode  = "unknown opcode"
	ReasonSnapLen        = "transport headers cut by the snap length"
)

// Kind says what a frame turned out to be.
type Kind uint8

// Frame kinds.
const (
	NotRoCE Kind = iota // not RoCE, or a link type or protocol the decoder does not carry RoCE in
	RoCE                // a RoCE packet; it may still be malformed (Packet.Malformed)
)

// Decoder decodes frames into RoCE packets. It holds no per-packet state and
// allocates nothing per frame; use one per goroutine.
type Decoder struct {
	ports [1024]uint64 // bit set of UDP destination ports that carry RoCEv2
	// mode says what the walk over a frame does with its ICRC; given is
	// the outcome DecodeChecked hands in, and scratch the packet CheckICRC
	// walks into.
	mode    icrcMode
	given   ICRCCheck
	scratch Packet
	icrc    layers.ICRCHasher
}

// icrcMode says what a walk over a frame does at the ICRC.
type icrcMode uint8

const (
	icrcCompute icrcMode = iota // compute it and go on decoding
	icrcOnly                    // compute it and stop there
	icrcGiven                   // take Decoder.given and go on decoding
)

// ICRCCheck is the outcome of checking the invariant CRC of one frame: the
// ICRC fields of the Packet that Decode makes of it.
type ICRCCheck struct {
	Verdict  ICRCVerdict
	Found    uint32 // Packet.ICRCFound
	Computed uint32 // Packet.ICRCComputed
}

// NewDecoder returns a decoder that recognises RoCEv2 on UDP destination
// port 4791 and on the extra ports given.
func NewDecoder(extraPorts ...uint16) *Decoder {
	d := &Decoder{}
	d.AddPort(RoCEv2Port)
	for _, p := range extraPorts {
		d.AddPort(p)
	}
	return d
}

// AddPort makes the decoder treat UDP destination port p as RoCEv2.
func (d *Decoder) AddPort(p uint16) { d.ports[p>>6] |= 1 << (p & 63) }

func (d *Decoder) isRoCEPort(p uint16) bool { return d.ports[p>>6]&(1<<(p&63)) != 0 }

// Decode decodes one captured frame into p and says whether it is RoCE. The
// packet's slices alias f.Data. Every field of p is set, except that the
// extended headers p.Headers does not name are left alone: they are zero if
// p was zero before and has been filled only by Decode and DecodeChecked
// since, as the Packet documentation says to expect of them anyway.
func (d *Decoder) Decode(f *capture.Frame, p *Packet) Kind {
	reset(f, p)
	return d.walk(f, p)
}

// CheckICRC returns the ICRC fields Decode would give the packet of f, and
// walks only as far into the frame as finding the ICRC takes. Together with
// DecodeChecked it lets the CRC, the costly part of decoding, be computed on
// another goroutine than the rest. It does not allocate.
func (d *Decoder) CheckICRC(f *capture.Frame) ICRCCheck {
	p := &d.scratch
	p.ICRC, p.ICRCFound, p.ICRCComputed = ICRCUnverifiable, 0, 0
	d.mode = icrcOnly
	d.walk(f, p)
	d.mode = icrcCompute
	return ICRCCheck{Verdict: p.ICRC, Found: p.ICRCFound, Computed: p.ICRCComputed}
}

// DecodeChecked decodes f into p exactly as Decode does, except that it
// takes the ICRC fields from c instead of computing the CRC. c must be what
// CheckICRC returned for the same frame on a decoder with the same ports.
func (d *Decoder) DecodeChecked(f *capture.Frame, p *Packet, c ICRCCheck) Kind {
	reset(f, p)
	d.mode, d.given = icrcGiven, c
	k := d.walk(f, p)
	d.mode = icrcCompute
	return k
}

// reset sets p to the zero Packet of frame f, except that of the extended
// headers it clears only those p.Headers says the last decode filled: the
// others are zero already when p was zero to begin with, and the headers are
// three quarters of a Packet, most of the cost of clearing one. Every other
// field is set here one by one; TestResetClearsEveryField fails when a field
// is added to Packet and not here.
func reset(f *capture.Frame, p *Packet) {
	if h := p.Headers; h != 0 {
		clearExtHeaders(&p.ExtHeaderSet, h)
	}
	p.Frame, p.Timestamp, p.Len, p.CapLen = f.Index, f.Timestamp, f.Len, len(f.Data)
	p.Version = 0
	p.SrcIP, p.DstIP = netip.Addr{}, netip.Addr{}
	p.SrcPort, p.DstPort = 0, 0
	p.ECN, p.DSCP, p.TTL, p.VLAN = 0, 0, 0, 0
	p.BTH = layers.BTH{}
	p.Headers = 0
	p.Payload, p.PayloadLen = nil, 0
	p.ICRC, p.ICRCFound, p.ICRCComputed = ICRCUnverifiable, 0, 0
	p.Malformed = ""
}

// clearExtHeaders zeroes the headers of s named in h.
func clearExtHeaders(s *layers.ExtHeaderSet, h layers.ExtHeaders) {
	if h&layers.HasRDETH != 0 {
		s.RDETH = layers.RDETH{}
	}
	if h&layers.HasDETH != 0 {
		s.DETH = layers.DETH{}
	}
	if h&layers.HasXRCETH != 0 {
		s.XRCETH = layers.XRCETH{}
	}
	if h&layers.HasRETH != 0 {
		s.RETH = layers.RETH{}
	}
	if h&layers.HasFETH != 0 {
		s.FETH = layers.FETH{}
	}
	if h&layers.HasAtomicETH != 0 {
		s.AtomicETH = layers.AtomicETH{}
	}
	if h&layers.HasAETH != 0 {
		s.AETH = layers.AETH{}
	}
	if h&layers.HasAtomicAckETH != 0 {
		s.AtomicAckETH = layers.AtomicAckETH{}
	}
	if h&layers.HasImmDt != 0 {
		s.ImmDt = layers.ImmDt{}
	}
	if h&layers.HasIETH != 0 {
		s.IETH = layers.IETH{}
	}
	if h&layers.HasCNP != 0 {
		s.CNP = layers.CNP{}
	}
}

// walk decodes the frame into p, whose frame fields reset has set.
func (d *Decoder) walk(f *capture.Frame, p *Packet) Kind {
	data := f.Data
	var etherType uint16
	switch f.LinkType {
	case LinkTypeEthernet:
		if len(data) < 14 {
			return NotRoCE
		}
		etherType = binary.BigEndian.Uint16(data[12:14])
		data = data[14:]
	case LinkTypeLinuxSLL:
		if len(data) < 16 {
			return NotRoCE
		}
		etherType = binary.BigEndian.Uint16(data[14:16])
		data = data[16:]
	case LinkTypeSLL2:
		if len(data) < 20 {
			return NotRoCE
		}
		etherType = binary.BigEndian.Uint16(data[0:2])
		data = data[20:]
	case LinkTypeRaw, linkTypeRawBSD, linkTypeRawOld, LinkTypeIPv4, LinkTypeIPv6:
		if len(data) < 1 {
			return NotRoCE
		}
		switch data[0] >> 4 {
		case 4:
			etherType = etherTypeIPv4
		case 6:
			etherType = etherTypeIPv6
		default:
			return NotRoCE
		}
	default:
		return NotRoCE
	}
	for depth := 0; etherType == etherTypeDot1Q || etherType == etherTypeQinQ || etherType == etherTypeQinQ91; depth++ {
		if len(data) < 4 || depth == maxVLANDepth {
			return NotRoCE
		}
		if depth == 0 {
			p.VLAN = binary.BigEndian.Uint16(data[0:2]) & 0x0fff
		}
		etherType = binary.BigEndian.Uint16(data[2:4])
		data = data[4:]
	}
	switch etherType {
	case etherTypeIPv4:
		return d.decodeIPv4(data, p)
	case etherTypeIPv6:
		return d.decodeIPv6(data, p)
	case etherTypeRoCEv1:
		return d.decodeGRH(data, p)
	}
	return NotRoCE
}

// decodeIPv4 decodes an IPv4 packet starting at data.
func (d *Decoder) decodeIPv4(data []byte, p *Packet) Kind {
	if len(data) < 20 || data[0]>>4 != 4 {
		return NotRoCE
	}
	if data[9] != ipProtoUDP {
		return NotRoCE
	}
	// Only the first fragment holds the UDP header; RoCE sets DF and is
	// never fragmented, so a fragment is not taken as RoCE.
	if binary.BigEndian.Uint16(data[6:8])&0x3fff != 0 {
		return NotRoCE
	}
	hdrLen := int(data[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(data[2:4]))
	if hdrLen < 20 || len(data) < hdrLen+udpHdrLen {
		return NotRoCE
	}
	if !d.isRoCEPort(binary.BigEndian.Uint16(data[hdrLen+2 : hdrLen+4])) {
		return NotRoCE
	}
	p.Version = 2
	p.SrcIP = netip.AddrFrom4([4]byte(data[12:16]))
	p.DstIP = netip.AddrFrom4([4]byte(data[16:20]))
	p.DSCP = data[1] >> 2
	p.ECN = ECN(data[1] & 3)
	p.TTL = data[8]
	if total < hdrLen+udpHdrLen {
		p.Malformed = ReasonIPHeader
		return RoCE
	}
	d.decodeUDP(data, hdrLen, total, layers.ICRCIPv4, p)
	return RoCE
}

// decodeIPv6 decodes an IPv6 packet starting at data.
func (d *Decoder) decodeIPv6(data []byte, p *Packet) Kind {
	if len(data) < ipv6HdrLen+udpHdrLen || data[0]>>4 != 6 {
		return NotRoCE
	}
	// RoCEv2 over IPv6 carries UDP directly after the fixed header; a
	// packet with extension headers is not one the ICRC rules cover.
	if data[6] != ipProtoUDP {
		return NotRoCE
	}
	if !d.isRoCEPort(binary.BigEndian.Uint16(data[ipv6HdrLen+2 : ipv6HdrLen+4])) {
		return NotRoCE
	}
	p.Version = 2
	p.SrcIP = netip.AddrFrom16([16]byte(data[8:24]))
	p.DstIP = netip.AddrFrom16([16]byte(data[24:40]))
	tc := data[0]<<4 | data[1]>>4
	p.DSCP = tc >> 2
	p.ECN = ECN(tc & 3)
	p.TTL = data[7]
	total := ipv6HdrLen + int(binary.BigEndian.Uint16(data[4:6]))
	d.decodeUDP(data, ipv6HdrLen, total, layers.ICRCIPv6, p)
	return RoCE
}

// decodeUDP checks the lengths of a RoCEv2 packet whose IP header is
// data[:hdrLen] and whose IP length is total, then decodes the transport.
func (d *Decoder) decodeUDP(data []byte, hdrLen, total int, kind layers.NetworkHeader, p *Packet) {
	udp := data[hdrLen:]
	p.SrcPort = binary.BigEndian.Uint16(udp[0:2])
	p.DstPort = binary.BigEndian.Uint16(udp[2:4])
	udpLen := int(binary.BigEndian.Uint16(udp[4:6]))
	if udpLen != total-hdrLen {
		p.Malformed = ReasonUDPLength
		return
	}
	d.decodeTransport(data, hdrLen+udpHdrLen, total, kind, p)
}

// decodeGRH decodes a RoCEv1 packet: a GRH, then the InfiniBand transport.
func (d *Decoder) decodeGRH(data []byte, p *Packet) Kind {
	if len(data) < grhLen {
		return NotRoCE
	}
	p.Version = 1
	p.SrcIP = netip.AddrFrom16([16]byte(data[8:24]))
	p.DstIP = netip.AddrFrom16([16]byte(data[24:40]))
	tc := data[0]<<4 | data[1]>>4
	p.DSCP = tc >> 2
	p.TTL = data[7]
	if data[6] != grhNextIBA {
		p.Malformed = ReasonGRHNextHeader
		return RoCE
	}
	total := grhLen + int(binary.BigEndian.Uint16(data[4:6]))
	d.decodeTransport(data, grhLen, total, layers.ICRCGRH, p)
	return RoCE
}

// decodeTransport decodes the BTH at data[off:], its extended headers and
// payload, and checks the ICRC at data[total-4:total]. data may hold fewer
// than total bytes when the snap length cut the frame. An IP or GRH length
// beyond the frame's original length is taken as a cut too, not as a
// malformed packet: some capture tools record the cut length as the
// original length, and the packet was whole on the wire.
func (d *Decoder) decodeTransport(data []byte, off, total int, kind layers.NetworkHeader, p *Packet) {
	switch {
	case total-off < bthLen:
		p.Malformed = ReasonBTHShort
		return
	case total-off < bthLen+icrcLen:
		// The BTH is whole; saying it is short would send the reader
		// looking in the wrong place.
		p.Malformed = ReasonICRCShort
		return
	}
	end := total - icrcLen // first byte of the ICRC
	complete := len(data) >= total
	switch {
	case d.mode == icrcGiven:
		p.ICRC, p.ICRCFound, p.ICRCComputed = d.given.Verdict, d.given.Found, d.given.Computed
	case complete:
		p.ICRCFound = layers.ICRCFromWire(data[end:total])
		crc, err := d.icrc.Compute(kind, data[:end])
		if err == nil {
			p.ICRCComputed = crc
			if crc == p.ICRCFound {
				p.ICRC = ICRCGood
			} else {
				p.ICRC = ICRCBad
			}
		}
	}
	if d.mode == icrcOnly {
		return
	}
	// avail is the captured part of the transport headers and payload.
	avail := data[off:min(len(data), end)]
	if len(avail) < bthLen {
		p.Malformed = ReasonSnapLen
		return
	}
	if err := p.BTH.DecodeFromBytes(avail, gopacket.NilDecodeFeedback); err != nil {
		p.Malformed = ReasonBTHShort
		return
	}
	op := p.BTH.Opcode
	headers := op.ExtHeaders()
	wireBody := end - off - bthLen // transport bytes after the BTH on the wire
	if headers.Len() > wireBody {
		p.Malformed = ReasonExtHeaderShort
		return
	}
	if headers.Len() > len(avail)-bthLen {
		p.Malformed = ReasonSnapLen
		return
	}
	rest, present, err := layers.DecodeExtHeaders(op, avail[bthLen:], &p.ExtHeaderSet)
	p.Headers = present
	if err != nil {
		p.Malformed = ReasonExtHeaderShort
		return
	}
	p.Payload = rest
	p.PayloadLen = wireBody - headers.Len()
	if int(p.BTH.PadCount) > p.PayloadLen {
		p.Malformed = ReasonPadCount
		return
	}
	if !op.Known() {
		p.Malformed = ReasonUnknownOpcode
	}
}
