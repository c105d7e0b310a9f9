// Invariant CRC, the 4-byte trailer of every RoCE packet (IBTA Vol. 1 and
// the RoCEv2 Annex A17):
//
//	+----------+----------------+-----+-----+----------+---------+------+
//	| 8 x 0xFF | IPv4/IPv6/GRH  | UDP | BTH | ext hdrs | payload | ICRC |
//	+----------+----------------+-----+-----+----------+---------+------+
//	 \_____________________ covered by the CRC ___________________/
//
//	The 8 bytes of 0xFF stand in for the InfiniBand LRH. Variant fields are
//	replaced by ones before the CRC: IPv4 TOS, TTL and header checksum;
//	IPv6 and GRH traffic class, flow label and hop limit; UDP checksum;
//	BTH byte 4 (FECN, BECN, Resv6a). RoCEv1 has no UDP header.
//	The CRC is CRC-32/IEEE; the four ICRC bytes hold it least significant
//	byte first.

package layers

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// ICRCLen is the size of the ICRC in bytes.
const ICRCLen = 4

// NetworkHeader says which header the ICRC computation starts with.
type NetworkHeader uint8

// Network headers the ICRC covers.
const (
	ICRCIPv4 NetworkHeader = iota // RoCEv2 over IPv4: IPv4, UDP, BTH, ...
	ICRCIPv6                      // RoCEv2 over IPv6: IPv6, UDP, BTH, ...
	ICRCGRH                       // RoCEv1: GRH, BTH, ...
)

// Errors of ComputeICRC and the ICRC layer.
var (
	// ErrICRCTooShort is returned when the input cannot hold the network
	// header, the UDP header (RoCEv2) and a BTH, or an ICRC layer is shorter
	// than 4 bytes.
	ErrICRCTooShort = errors.New("ICRC: packet too short")
	// ErrICRCNotUDP is returned for RoCEv2 input whose IPv4 protocol or IPv6
	// next header is not UDP (17).
	ErrICRCNotUDP = errors.New("ICRC: next protocol is not UDP")
	// ErrICRCBadIPHeader is returned when the IP version nibble does not
	// match the NetworkHeader, or the IPv4 header length is below 20 bytes.
	ErrICRCBadIPHeader = errors.New("ICRC: malformed IP header")
	// ErrICRCUnknownNetworkHeader is returned for a NetworkHeader value
	// that is none of ICRCIPv4, ICRCIPv6, ICRCGRH.
	ErrICRCUnknownNetworkHeader = errors.New("ICRC: unknown network header kind")
)

const (
	ipv4MinLen = 20
	ipv6Len    = 40
	udpLen     = 8
	// maxMasked is the largest span ComputeICRC copies to mask: an IPv4
	// header with the most options, UDP and BTH.
	maxMasked = 60 + udpLen + BTHLen
)

// icrcSeed is the CRC state after the 8 bytes of 0xFF that stand in for the
// LRH, computed once.
var icrcSeed = crc32.Update(0, crc32.IEEETable, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})

// ComputeICRC returns the invariant CRC of a RoCE packet. pkt starts at the
// IPv4 header (ICRCIPv4), the IPv6 header (ICRCIPv6) or the GRH (ICRCGRH) and
// ends just before the four ICRC bytes. IPv4 options are covered, as the
// header length says. It does not allocate.
func ComputeICRC(kind NetworkHeader, pkt []byte) (uint32, error) {
	// The headers with variant fields are copied to a stack array and masked
	// there, so that pkt is never written.
	var buf [maxMasked]byte
	var n int
	switch kind {
	case ICRCIPv4:
		if len(pkt) < ipv4MinLen {
			return 0, ErrICRCTooShort
		}
		if pkt[0]>>4 != 4 {
			return 0, ErrICRCBadIPHeader
		}
		ihl := int(pkt[0]&0x0F) * 4
		if ihl < ipv4MinLen {
			return 0, ErrICRCBadIPHeader
		}
		n = ihl + udpLen + BTHLen
		if len(pkt) < n {
			return 0, ErrICRCTooShort
		}
		if pkt[9] != uint8(gplayers.IPProtocolUDP) {
			return 0, ErrICRCNotUDP
		}
		copy(buf[:n], pkt)
		buf[1] = 0xFF                 // TOS (DSCP and ECN)
		buf[8] = 0xFF                 // TTL
		buf[10], buf[11] = 0xFF, 0xFF // header checksum
		maskUDPBTH(buf[ihl:n])
	case ICRCIPv6:
		n = ipv6Len + udpLen + BTHLen
		if len(pkt) < n {
			return 0, ErrICRCTooShort
		}
		if pkt[0]>>4 != 6 {
			return 0, ErrICRCBadIPHeader
		}
		if pkt[6] != uint8(gplayers.IPProtocolUDP) {
			return 0, ErrICRCNotUDP
		}
		copy(buf[:n], pkt)
		maskIPv6(buf[:ipv6Len])
		maskUDPBTH(buf[ipv6Len:n])
	case ICRCGRH:
		n = GRHLen + BTHLen
		if len(pkt) < n {
			return 0, ErrICRCTooShort
		}
		copy(buf[:n], pkt)
		maskIPv6(buf[:GRHLen])
		buf[GRHLen+4] = 0xFF // BTH FECN, BECN, Resv6a
	default:
		return 0, ErrICRCUnknownNetworkHeader
	}
	crc := updateIEEE8(icrcSeed, buf[:n])
	return crc32.Update(crc, crc32.IEEETable, pkt[n:]), nil
}

// maskIPv6 sets the traffic class, flow label and hop limit of an IPv6 header
// or GRH to ones, keeping the version nibble.
func maskIPv6(h []byte) {
	h[0] |= 0x0F
	h[1], h[2], h[3] = 0xFF, 0xFF, 0xFF
	h[7] = 0xFF
}

// maskUDPBTH sets the UDP checksum and BTH byte 4 to ones; h starts at the
// UDP header.
func maskUDPBTH(h []byte) {
	h[6], h[7] = 0xFF, 0xFF
	h[udpLen+4] = 0xFF
}

// VerifyICRC reports whether the last four bytes of pkt hold the ICRC of the
// bytes before them; pkt starts at the header kind names, as for ComputeICRC.
func VerifyICRC(kind NetworkHeader, pkt []byte) (bool, error) {
	if len(pkt) < ICRCLen {
		return false, ErrICRCTooShort
	}
	end := len(pkt) - ICRCLen
	crc, err := ComputeICRC(kind, pkt[:end])
	if err != nil {
		return false, err
	}
	return crc == ICRCFromWire(pkt[end:]), nil
}

// ICRCFromWire reads an ICRC from its four wire bytes, least significant byte
// first. It returns 0 when b holds fewer than four bytes.
func ICRCFromWire(b []byte) uint32 {
	if len(b) < ICRCLen {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// PutICRC writes v into the four wire bytes of an ICRC, least significant
// byte first. It writes nothing when b holds fewer than four bytes.
func PutICRC(b []byte, v uint32) {
	if len(b) < ICRCLen {
		return
	}
	binary.LittleEndian.PutUint32(b, v)
}

// slicing8 holds the eight tables of a slicing-by-8 CRC-32/IEEE, derived from
// crc32.IEEETable once.
var slicing8 = func() *[8][256]uint32 {
	var t [8][256]uint32
	t[0] = *crc32.IEEETable
	for i := range 256 {
		for k := 1; k < 8; k++ {
			p := t[k-1][i]
			t[k][i] = p>>8 ^ t[0][byte(p)]
		}
	}
	return &t
}()

// updateIEEE8 is crc32.Update(crc, crc32.IEEETable, p) for the masked header
// copy. crc32.Update dispatches through a function variable, which makes the
// compiler move its argument to the heap: with it, ComputeICRC's stack array
// would cost an allocation per packet. This loop keeps the array on the stack
// and is fast enough for the at most 80 bytes it sees; crc32.Update, with the
// CPU's carry-less multiply, takes the rest of the packet, which is already on
// the heap.
func updateIEEE8(crc uint32, p []byte) uint32 {
	t := slicing8
	crc = ^crc
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint32(p)
		crc = t[0][p[7]] ^ t[1][p[6]] ^ t[2][p[5]] ^ t[3][p[4]] ^
			t[4][crc>>24] ^ t[5][crc>>16&0xFF] ^ t[6][crc>>8&0xFF] ^ t[7][crc&0xFF]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return ^crc
}

// ICRC is the 4-byte invariant CRC trailer of a RoCE packet.
type ICRC struct {
	gplayers.BaseLayer
	Value uint32 // the CRC, read least significant byte first
}

// LayerType returns LayerTypeICRC.
func (i *ICRC) LayerType() gopacket.LayerType { return LayerTypeICRC }

// CanDecode returns LayerTypeICRC.
func (i *ICRC) CanDecode() gopacket.LayerClass { return LayerTypeICRC }

// NextLayerType returns gopacket.LayerTypeZero: nothing follows the ICRC.
func (i *ICRC) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

// WireValue returns the four ICRC bytes read most significant byte first,
// which is how Wireshark 4.0 shows the "Invariant CRC" field.
func (i *ICRC) WireValue() uint32 {
	return uint32(i.Value>>24) | uint32(i.Value>>8)&0xFF00 | uint32(i.Value<<8)&0xFF0000 | i.Value<<24
}

// DecodeFromBytes decodes the ICRC from the first four bytes of data; any
// further bytes become the layer's payload.
func (i *ICRC) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < ICRCLen {
		df.SetTruncated()
		return ErrICRCTooShort
	}
	i.Value = binary.LittleEndian.Uint32(data)
	i.BaseLayer = gplayers.BaseLayer{Contents: data[:ICRCLen], Payload: data[ICRCLen:]}
	return nil
}

// SerializeTo writes the ICRC, least significant byte first, in front of the
// buffer's contents; as the last layer of a packet it is serialized first.
// The value is not computed: serialize the packet, then call ComputeICRC over
// it and PutICRC.
func (i *ICRC) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := buf.PrependBytes(ICRCLen)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(d, i.Value)
	return nil
}
