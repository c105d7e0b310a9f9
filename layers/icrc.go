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

	"roce-inspect/internal/crcfold"
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
	n, ihl, err := icrcSpan(kind, pkt)
	if err != nil {
		return 0, err
	}
	// The headers with variant fields are copied to a stack array and masked
	// there, so that pkt is never written.
	var buf [maxMasked]byte
	copy(buf[:n], pkt)
	maskVariant(kind, buf[:n], ihl)
	crc := updateIEEE8(icrcSeed, buf[:n])
	// hash/crc32 runs the CPU's carry-less multiply over whole 16-byte
	// blocks, fast per byte but at a fixed cost of about as much as 50
	// bytes through the table loop, and takes any last len%16 bytes through
	// a slower byte loop. So the table loop takes a short rest whole, and of
	// a long rest the bytes that leave hash/crc32 whole blocks only.
	rest := pkt[n:]
	if len(rest) < clmulMin {
		return updateIEEE8(crc, rest), nil
	}
	head := len(rest) & 15
	crc = updateIEEE8(crc, rest[:head])
	return crc32.Update(crc, crc32.IEEETable, rest[head:]), nil
}

// icrcSpan checks that pkt can hold a packet of the given kind and returns
// n, the length of the headers whose variant fields are masked (network
// header, UDP header for RoCEv2, BTH), and ihl, the length of the network
// header (where the UDP header, or for RoCEv1 the BTH, starts).
func icrcSpan(kind NetworkHeader, pkt []byte) (n, ihl int, err error) {
	switch kind {
	case ICRCIPv4:
		if len(pkt) < ipv4MinLen {
			return 0, 0, ErrICRCTooShort
		}
		if pkt[0]>>4 != 4 {
			return 0, 0, ErrICRCBadIPHeader
		}
		ihl = int(pkt[0]&0x0F) * 4
		if ihl < ipv4MinLen {
			return 0, 0, ErrICRCBadIPHeader
		}
		n = ihl + udpLen + BTHLen
		if len(pkt) < n {
			return 0, 0, ErrICRCTooShort
		}
		if pkt[9] != uint8(gplayers.IPProtocolUDP) {
			return 0, 0, ErrICRCNotUDP
		}
	case ICRCIPv6:
		ihl, n = ipv6Len, ipv6Len+udpLen+BTHLen
		if len(pkt) < n {
			return 0, 0, ErrICRCTooShort
		}
		if pkt[0]>>4 != 6 {
			return 0, 0, ErrICRCBadIPHeader
		}
		if pkt[6] != uint8(gplayers.IPProtocolUDP) {
			return 0, 0, ErrICRCNotUDP
		}
	case ICRCGRH:
		ihl, n = GRHLen, GRHLen+BTHLen
		if len(pkt) < n {
			return 0, 0, ErrICRCTooShort
		}
	default:
		return 0, 0, ErrICRCUnknownNetworkHeader
	}
	return n, ihl, nil
}

// maskVariant sets the variant fields of h, a copy of the first n bytes of a
// packet that icrcSpan accepted, to ones.
func maskVariant(kind NetworkHeader, h []byte, ihl int) {
	switch kind {
	case ICRCIPv4:
		h[1] = 0xFF               // TOS (DSCP and ECN)
		h[8] = 0xFF               // TTL
		h[10], h[11] = 0xFF, 0xFF // header checksum
		maskUDPBTH(h[ihl:])
	case ICRCIPv6:
		maskIPv6(h[:ipv6Len])
		maskUDPBTH(h[ipv6Len:])
	case ICRCGRH:
		maskIPv6(h[:GRHLen])
		h[GRHLen+4] = 0xFF // BTH FECN, BECN, Resv6a
	}
}

// clmulMin is the shortest input for which hash/crc32, with its
// carry-less multiply, is faster than the table loop of updateIEEE8.
const clmulMin = 64

// hasherMax is the longest packet an ICRCHasher copies whole into its
// scratch buffer; longer ones have only their headers copied (computeLong).
const hasherMax = 256

// ICRCHasher computes the invariant CRC of any packet faster than
// ComputeICRC, and the same value. A short packet, such as an ACK, is copied
// whole into a scratch buffer of the hasher's, masked, and handed to crcfold
// in one call, padded in front to whole 16-byte blocks of at least clmulMin
// bytes, so that every byte goes through the CPU's carry-less multiply rather
// than a table loop. Of a longer packet only the headers are copied and
// masked, and crcfold folds them and the rest of the packet, read in place,
// in one pass. The buffers live with the hasher because hash/crc32, which
// crcfold falls back to on CPUs without 512-bit carry-less multiply, would
// move a stack buffer to the heap on every call. The zero value is ready to
// use; a hasher is not safe for concurrent use.
type ICRCHasher struct {
	buf  [hasherMax + 16]byte
	head [crcfold.HeadLen]byte
	// headZero is how many leading bytes of head are known to be zero.
	headZero int
}

// Compute returns what ComputeICRC(kind, pkt) returns, the same CRC or the
// same error. It does not allocate and never writes to pkt.
func (h *ICRCHasher) Compute(kind NetworkHeader, pkt []byte) (uint32, error) {
	n, ihl, err := icrcSpan(kind, pkt)
	if err != nil {
		return 0, err
	}
	if len(pkt) > hasherMax {
		return h.computeLong(kind, pkt, n, ihl), nil
	}
	// Zero bytes in front leave a CRC register of zero unchanged, so they
	// pad for free when the CRC starts from a zero register; the register
	// the LRH's 0xFF bytes leave behind is folded into the first four bytes
	// of the copy instead, which is exact for this bit-reflected CRC: its
	// register is XORed into the next four input bytes read little-endian.
	total := (max(len(pkt), clmulMin) + 15) &^ 15
	z := total - len(pkt)
	b := h.buf[:total]
	clear(b[:z])
	w := b[z:]
	copy(w, pkt)
	maskVariant(kind, w[:n], ihl)
	binary.LittleEndian.PutUint32(w, binary.LittleEndian.Uint32(w)^^icrcSeed)
	// An initial CRC of all ones is a register of zero.
	return crcfold.Update(^uint32(0), b), nil
}

// computeLong is Compute for packets longer than hasherMax, with n and ihl
// from icrcSpan. The headers, masked, and as many bytes after them as leave
// the rest of the packet whole 16-byte blocks, are copied to the end of
// h.head, padded in front with zeros as Compute pads, and crcfold folds
// h.head and the rest of the packet, in place, in one pass.
func (h *ICRCHasher) computeLong(kind NetworkHeader, pkt []byte, n, ihl int) uint32 {
	first := n + (len(pkt)-n)&15
	z := crcfold.HeadLen - first
	// h.head[:h.headZero] is zero from earlier calls; clear only what the
	// last copy wrote that this one leaves as padding.
	if z > h.headZero {
		clear(h.head[h.headZero:z])
	}
	h.headZero = z
	w := h.head[z:]
	copy(w, pkt[:first])
	maskVariant(kind, w[:n], ihl)
	binary.LittleEndian.PutUint32(w, binary.LittleEndian.Uint32(w)^^icrcSeed)
	return crcfold.UpdateHead(^uint32(0), &h.head, pkt[first:])
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
// copy and for short stretches of the packet. crc32.Update dispatches through
// a function variable, which makes the compiler move its argument to the
// heap: with it, ComputeICRC's stack array would cost an allocation per
// packet. This slicing-by-8 loop keeps the array on the stack, and for less
// than about 64 bytes it is faster than crc32.Update, whose carry-less
// multiply path has a fixed cost per call.
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
