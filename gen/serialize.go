package gen

import (
	"fmt"
	"math/rand/v2"

	"github.com/gopacket/gopacket"
	glayers "github.com/gopacket/gopacket/layers"

	"roce-inspect/layers"
)

// Header sizes on the wire.
const (
	ethHeaderLen  = 14
	ipv4HeaderLen = 20
	ipv6HeaderLen = 40
	grhLen        = 40
	udpHeaderLen  = 8
	bthLen        = 12
	rethLen       = 16
	aethLen       = 4
	dethLen       = 8
	immLen        = 4
	atomicETHLen  = 28
	atomicAckLen  = 8
	cnpLen        = 16
	icrcLen       = 4
)

// patternLen is how far the payload pattern reaches beyond the largest
// payload, so that payloads of different PSNs start at different offsets.
const patternLen = 4096

// serializer turns packets into frames through the layers' SerializeTo. Its
// layer values and buffer are reused from frame to frame.
type serializer struct {
	cfg     *Config
	netKind layers.NetworkHeader
	buf     gopacket.SerializeBuffer

	eth glayers.Ethernet
	ip4 glayers.IPv4
	ip6 glayers.IPv6
	udp glayers.UDP
	grh layers.GRH

	// pattern is random payload bytes: a packet's payload is a window of
	// it chosen by its PSN, so a resent packet repeats its bytes exactly.
	pattern []byte
}

func newSerializer(cfg *Config, rng *rand.Rand) *serializer {
	s := &serializer{cfg: cfg, buf: gopacket.NewSerializeBufferExpectedSize(128, cfg.Payload+64)}
	switch {
	case cfg.RoCEv1:
		s.netKind = layers.ICRCGRH
	case cfg.IPv6:
		s.netKind = layers.ICRCIPv6
	default:
		s.netKind = layers.ICRCIPv4
	}
	maxPay := max(cfg.Payload, 256) // UD MADs are 256 bytes
	s.pattern = make([]byte, maxPay+patternLen)
	for i := 0; i < len(s.pattern); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < len(s.pattern); j++ {
			s.pattern[i+j] = byte(v >> (8 * j))
		}
	}
	return s
}

// padFor returns the pad bytes that round n up to a multiple of 4.
func padFor(n int) int { return (4 - n%4) % 4 }

// extLen returns the length of the extended headers in set.
func extLen(set layers.ExtHeaders) int {
	n := 0
	if set&layers.HasDETH != 0 {
		n += dethLen
	}
	if set&layers.HasRETH != 0 {
		n += rethLen
	}
	if set&layers.HasAtomicETH != 0 {
		n += atomicETHLen
	}
	if set&layers.HasAETH != 0 {
		n += aethLen
	}
	if set&layers.HasAtomicAckETH != 0 {
		n += atomicAckLen
	}
	if set&layers.HasImmDt != 0 {
		n += immLen
	}
	if set&layers.HasCNP != 0 {
		n += cnpLen
	}
	return n
}

// transportLen is the length from the BTH to the end of the ICRC.
func transportLen(p *pkt) int {
	return bthLen + extLen(p.ext) + p.payLen + padFor(p.payLen) + icrcLen
}

// netHeaderLen is the length of the headers between Ethernet and the BTH.
func netHeaderLen(cfg *Config) int {
	switch {
	case cfg.RoCEv1:
		return grhLen
	case cfg.IPv6:
		return ipv6HeaderLen + udpHeaderLen
	default:
		return ipv4HeaderLen + udpHeaderLen
	}
}

// frameLen is the captured length of p's frame, Ethernet padding included.
func frameLen(cfg *Config, p *pkt) int {
	return max(ethHeaderLen+netHeaderLen(cfg)+transportLen(p), minFrame)
}

// build serializes p into the reused buffer and returns the frame and the
// offset of its ICRC, which it leaves zero. The frame is valid until the
// next call.
func (s *serializer) build(p *pkt) ([]byte, int, error) {
	b := s.buf
	if err := b.Clear(); err != nil {
		return nil, 0, err
	}
	pad := padFor(p.payLen)
	tail, err := b.AppendBytes(p.payLen + pad + icrcLen)
	if err != nil {
		return nil, 0, err
	}
	data := p.data
	if data == nil {
		off := int(p.bth.PSN*64) % patternLen
		data = s.pattern[off : off+p.payLen]
	}
	if len(data) != p.payLen {
		return nil, 0, fmt.Errorf("gen: payload of %d bytes for a packet of %d", len(data), p.payLen)
	}
	copy(tail, data)
	clear(tail[p.payLen:]) // pad bytes and the ICRC placeholder

	// Extended headers in reverse wire order, then the BTH (IBTA 9.2:
	// BTH, DETH, RETH or AtomicETH, AETH, AtomicAckETH, ImmDt).
	type serializable interface {
		SerializeTo(gopacket.SerializeBuffer, gopacket.SerializeOptions) error
	}
	opts := gopacket.SerializeOptions{FixLengths: true}
	steps := [...]struct {
		has layers.ExtHeaders
		l   serializable
	}{
		{layers.HasCNP, &p.cnp},
		{layers.HasImmDt, &p.imm},
		{layers.HasAtomicAckETH, &p.atomicAck},
		{layers.HasAETH, &p.aeth},
		{layers.HasAtomicETH, &p.atomic},
		{layers.HasRETH, &p.reth},
		{layers.HasDETH, &p.deth},
	}
	for _, st := range steps {
		if p.ext&st.has != 0 {
			if err := st.l.SerializeTo(b, opts); err != nil {
				return nil, 0, err
			}
		}
	}
	p.bth.PadCount = uint8(pad)
	if err := p.bth.SerializeTo(b, opts); err != nil {
		return nil, 0, err
	}
	tlen := len(b.Bytes())

	s.eth.SrcMAC, s.eth.DstMAC = p.src.mac, p.dst.mac
	switch {
	case s.cfg.RoCEv1:
		s.grh = layers.GRH{
			IPVer:         6,
			TrafficClass:  p.dscp << 2,
			FlowLabel:     p.flowLabel,
			PayloadLength: uint16(tlen),
			NextHeader:    nextHdrIBA,
			HopLimit:      ipTTL,
		}
		copy(s.grh.SrcGID[:], p.src.ip)
		copy(s.grh.DstGID[:], p.dst.ip)
		if err := s.grh.SerializeTo(b, opts); err != nil {
			return nil, 0, err
		}
		s.eth.EthernetType = glayers.EthernetType(0x8915)
	default:
		s.udp = glayers.UDP{SrcPort: glayers.UDPPort(p.sport), DstPort: roceUDPPort}
		// No ComputeChecksums: RoCEv2 NICs send UDP checksum 0.
		if err := s.udp.SerializeTo(b, opts); err != nil {
			return nil, 0, err
		}
		tos := p.dscp<<2 | p.ecn
		if s.cfg.IPv6 {
			s.ip6 = glayers.IPv6{
				Version: 6, TrafficClass: tos, FlowLabel: p.flowLabel,
				NextHeader: glayers.IPProtocolUDP, HopLimit: ipTTL,
				SrcIP: p.src.ip, DstIP: p.dst.ip,
			}
			if err := s.ip6.SerializeTo(b, opts); err != nil {
				return nil, 0, err
			}
			s.eth.EthernetType = glayers.EthernetTypeIPv6
		} else {
			s.ip4 = glayers.IPv4{
				Version: 4, IHL: 5, TOS: tos, Id: p.src.ipID,
				Flags: glayers.IPv4DontFragment, TTL: ipTTL,
				Protocol: glayers.IPProtocolUDP, SrcIP: p.src.ip, DstIP: p.dst.ip,
			}
			p.src.ipID++
			ipOpts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
			if err := s.ip4.SerializeTo(b, ipOpts); err != nil {
				return nil, 0, err
			}
			s.eth.EthernetType = glayers.EthernetTypeIPv4
		}
	}
	netLen := len(b.Bytes())
	if err := s.eth.SerializeTo(b, opts); err != nil {
		return nil, 0, err
	}
	return b.Bytes(), ethHeaderLen + netLen - icrcLen, nil
}
