// Package dissect turns a captured frame into a RoCE packet: it walks the link
// layer (Ethernet, 802.1Q/QinQ, Linux SLL/SLL2, raw IP), the IPv4/IPv6 and UDP
// headers of RoCEv2 or the GRH of RoCEv1, decodes the InfiniBand transport
// headers and checks the invariant CRC.
package dissect

import (
	"net/netip"

	"roce-inspect/layers"
)

// ICRCVerdict is the outcome of checking a packet's invariant CRC.
type ICRCVerdict uint8

// ICRC verdicts.
const (
	// ICRCUnverifiable means the capture does not hold the whole packet
	// (its snap length cut it), so the CRC cannot be computed.
	ICRCUnverifiable ICRCVerdict = iota
	ICRCGood
	ICRCBad
)

// ECN is the explicit congestion notification codepoint of the IP header.
type ECN uint8

// ECN codepoints (RFC 3168), as the two low bits of the TOS/traffic class.
const (
	ECNNotECT ECN = 0 // 00
	ECNECT1   ECN = 1 // 01
	ECNECT0   ECN = 2 // 10
	ECNCE     ECN = 3 // 11
)

// Packet is one decoded RoCE packet. Slices alias the frame buffer and are
// valid only until the next frame is read.
type Packet struct {
	Frame     int   // 1-based index among all frames of the capture
	Timestamp int64 // nanoseconds since the Unix epoch
	Len       int   // original length on the wire
	CapLen    int   // bytes captured

	Version uint8 // 1 (RoCEv1, GRH) or 2 (RoCEv2, UDP)

	SrcIP, DstIP     netip.Addr // IPv4/IPv6 addresses, or the GIDs of RoCEv1
	SrcPort, DstPort uint16     // RoCEv2 UDP ports
	ECN              ECN        // RoCEv2 only; RoCEv1 carries it in the GRH traffic class
	DSCP             uint8
	TTL              uint8  // IPv4 TTL, IPv6 hop limit or GRH hop limit
	VLAN             uint16 // outermost 802.1Q VLAN ID, 0 when untagged

	BTH     layers.BTH
	Headers layers.ExtHeaders // which of the extended headers below are present

	// The extended headers; only those in Headers hold decoded values.
	layers.ExtHeaderSet

	// Payload is the captured part of the transport payload (pad bytes
	// included); PayloadLen is its length on the wire, which is larger when
	// the capture was cut.
	Payload    []byte
	PayloadLen int

	ICRC         ICRCVerdict
	ICRCFound    uint32 // the trailer as read (least-significant byte first on the wire)
	ICRCComputed uint32 // valid unless ICRC is ICRCUnverifiable

	// Malformed is empty for a well-formed packet; otherwise it names what
	// is wrong (for example "BTH shorter than 12 bytes"). A malformed packet
	// still carries the fields decoded before the fault.
	Malformed string
}
