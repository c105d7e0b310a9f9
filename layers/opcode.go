// BTH opcode (IBTA Vol. 1, 9.2.1, Table 38; IBTA 1.5 adds FLUSH and ATOMIC
// WRITE; RoCEv2 Annex A17 adds the CNP):
//
//	  7   6   5   4   3   2   1   0
//	+---+---+---+---+---+---+---+---+
//	| transport |     operation     |
//	+---+---+---+---+---+---+---+---+
//
//	transport: 000 RC, 001 UC, 010 RD, 011 UD, 100 CNP, 101 XRC,
//	           110 reserved, 111 manufacturer specific
//
// Extended headers that follow the BTH, in wire order:
//
//	+-----+-------+------+--------+------------------------------+-------------+
//	| BTH | RDETH | DETH | XRCETH | RETH | FETH+RETH | AtomicETH | ImmDt |     |
//	|     |       |      |        | AETH [+AtomicAckETH] | CNP   | IETH  | ... |
//	+-----+-------+------+--------+------------------------------+-------------+
//
// RD requests carry RDETH and DETH, RD responses RDETH alone; UD carries DETH;
// XRC requests carry XRCETH. The payload and the 4-byte ICRC follow.

package layers

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/gopacket/gopacket"
)

// Opcode is the 8-bit BTH opcode: the top three bits name the transport, the
// low five bits the operation.
type Opcode uint8

// Transport is the transport service an opcode belongs to.
type Transport uint8

// Transport services, from the top three bits of the opcode.
const (
	TransportRC Transport = iota
	TransportUC
	TransportRD
	TransportUD
	TransportCNP
	TransportXRC
	TransportUnknown
)

var transportNames = [...]string{"RC", "UC", "RD", "UD", "CNP", "XRC", "UNKNOWN"}

// String returns the transport's short name: "RC", "UC", "RD", "UD", "CNP",
// "XRC", or "UNKNOWN" for the reserved and manufacturer-specific ranges.
func (t Transport) String() string {
	if int(t) < len(transportNames) {
		return transportNames[t]
	}
	return transportNames[TransportUnknown]
}

// Opcode base values of the transports: the operation number is added (or
// ORed) to them. RC's base is zero, so the RC constants below double as
// operation numbers: OpBaseUC|OpRCSendOnly is UC_SEND_ONLY.
const (
	OpBaseRC  Opcode = 0x00
	OpBaseUC  Opcode = 0x20
	OpBaseRD  Opcode = 0x40
	OpBaseUD  Opcode = 0x60
	OpBaseCNP Opcode = 0x80
	OpBaseXRC Opcode = 0xA0
)

// RC opcodes (IBTA Vol. 1 Table 38; FLUSH and ATOMIC WRITE from IBTA 1.5).
const (
	OpRCSendFirst                  Opcode = 0x00
	OpRCSendMiddle                 Opcode = 0x01
	OpRCSendLast                   Opcode = 0x02
	OpRCSendLastWithImmediate      Opcode = 0x03
	OpRCSendOnly                   Opcode = 0x04
	OpRCSendOnlyWithImmediate      Opcode = 0x05
	OpRCRDMAWriteFirst             Opcode = 0x06
	OpRCRDMAWriteMiddle            Opcode = 0x07
	OpRCRDMAWriteLast              Opcode = 0x08
	OpRCRDMAWriteLastWithImmediate Opcode = 0x09
	OpRCRDMAWriteOnly              Opcode = 0x0A
	OpRCRDMAWriteOnlyWithImmediate Opcode = 0x0B
	OpRCRDMAReadRequest            Opcode = 0x0C
	OpRCRDMAReadResponseFirst      Opcode = 0x0D
	OpRCRDMAReadResponseMiddle     Opcode = 0x0E
	OpRCRDMAReadResponseLast       Opcode = 0x0F
	OpRCRDMAReadResponseOnly       Opcode = 0x10
	OpRCAcknowledge                Opcode = 0x11
	OpRCAtomicAcknowledge          Opcode = 0x12
	OpRCCompareSwap                Opcode = 0x13
	OpRCFetchAdd                   Opcode = 0x14
	OpRCSendLastWithInvalidate     Opcode = 0x16
	OpRCSendOnlyWithInvalidate     Opcode = 0x17
	OpRCFlush                      Opcode = 0x1C
	OpRCAtomicWrite                Opcode = 0x1D
)

// UC opcodes: the SEND and RDMA WRITE operations of RC on the UC base.
const (
	OpUCSendFirst                  = OpBaseUC | OpRCSendFirst
	OpUCSendMiddle                 = OpBaseUC | OpRCSendMiddle
	OpUCSendLast                   = OpBaseUC | OpRCSendLast
	OpUCSendLastWithImmediate      = OpBaseUC | OpRCSendLastWithImmediate
	OpUCSendOnly                   = OpBaseUC | OpRCSendOnly
	OpUCSendOnlyWithImmediate      = OpBaseUC | OpRCSendOnlyWithImmediate
	OpUCRDMAWriteFirst             = OpBaseUC | OpRCRDMAWriteFirst
	OpUCRDMAWriteMiddle            = OpBaseUC | OpRCRDMAWriteMiddle
	OpUCRDMAWriteLast              = OpBaseUC | OpRCRDMAWriteLast
	OpUCRDMAWriteLastWithImmediate = OpBaseUC | OpRCRDMAWriteLastWithImmediate
	OpUCRDMAWriteOnly              = OpBaseUC | OpRCRDMAWriteOnly
	OpUCRDMAWriteOnlyWithImmediate = OpBaseUC | OpRCRDMAWriteOnlyWithImmediate
)

// RD, UD and CNP opcodes used on their own.
const (
	OpRDResync                Opcode = 0x55
	OpUDSendOnly              Opcode = 0x64
	OpUDSendOnlyWithImmediate Opcode = 0x65
	OpCNP                     Opcode = 0x81
)

// ExtHeaders is a set of extended transport headers that follow a BTH.
type ExtHeaders uint16

// Extended headers. The bit order is that of the wire except for FETH, which
// precedes RETH in a FLUSH packet; DecodeExtHeaders follows the wire order.
const (
	HasRDETH ExtHeaders = 1 << iota
	HasDETH
	HasXRCETH
	HasRETH
	HasFETH
	HasAtomicETH
	HasAETH
	HasAtomicAckETH
	HasImmDt
	HasIETH
	HasCNP
)

// wireOrder lists the extended headers in the order they follow the BTH.
var wireOrder = [...]ExtHeaders{
	HasRDETH, HasDETH, HasXRCETH, HasFETH, HasRETH, HasAtomicETH,
	HasAETH, HasAtomicAckETH, HasImmDt, HasIETH, HasCNP,
}

// extInfo describes one extended header: its name, size and layer type.
type extInfo struct {
	name      string
	size      int
	layerType *gopacket.LayerType
	tooShort  error
}

// extInfos describes the extended headers, indexed by the bit number of
// their ExtHeaders constant.
var extInfos = [...]extInfo{
	{"RDETH", RDETHLen, &LayerTypeRDETH, ErrRDETHTooShort},
	{"DETH", DETHLen, &LayerTypeDETH, ErrDETHTooShort},
	{"XRCETH", XRCETHLen, &LayerTypeXRCETH, ErrXRCETHTooShort},
	{"RETH", RETHLen, &LayerTypeRETH, ErrRETHTooShort},
	{"FETH", FETHLen, &LayerTypeFETH, ErrFETHTooShort},
	{"AtomicETH", AtomicETHLen, &LayerTypeAtomicETH, ErrAtomicETHTooShort},
	{"AETH", AETHLen, &LayerTypeAETH, ErrAETHTooShort},
	{"AtomicAckETH", AtomicAckETHLen, &LayerTypeAtomicAckETH, ErrAtomicAckETHTooShort},
	{"ImmDt", ImmDtLen, &LayerTypeImmDt, ErrImmDtTooShort},
	{"IETH", IETHLen, &LayerTypeIETH, ErrIETHTooShort},
	{"CNP", CNPLen, &LayerTypeCNP, ErrCNPTooShort},
}

// extInfoOf returns the description of a single extended header bit, and
// false for zero, several bits or an unassigned bit.
func extInfoOf(h ExtHeaders) (*extInfo, bool) {
	if h == 0 || h&(h-1) != 0 {
		return nil, false
	}
	i := bits.TrailingZeros16(uint16(h))
	if i >= len(extInfos) {
		return nil, false
	}
	return &extInfos[i], true
}

// Len returns the total size in bytes of the headers in h; bits that name no
// header count zero.
func (h ExtHeaders) Len() int {
	// The decoder asks this for every packet: a table lookup, not a loop
	// over the bits.
	return int(extLens[h&(1<<len(extInfos)-1)])
}

// extLens holds Len for every set of the defined header bits.
var extLens = func() (t [1 << len(extInfos)]uint8) {
	for h := range t {
		n := 0
		for i := range extInfos {
			if h&(1<<i) != 0 {
				n += extInfos[i].size
			}
		}
		t[h] = uint8(n) // at most 108: every header at once
	}
	return t
}()

// size returns the size of a single header bit, zero for anything else.
func (h ExtHeaders) size() int {
	if info, ok := extInfoOf(h); ok {
		return info.size
	}
	return 0
}

// first returns the first header of h in wire order, or zero for an empty
// set.
func (h ExtHeaders) first() ExtHeaders {
	for _, b := range wireOrder {
		if h&b != 0 {
			return b
		}
	}
	return 0
}

// layerType returns the layer type of a single header bit, or
// gopacket.LayerTypePayload for zero: what follows the last header.
func (h ExtHeaders) layerType() gopacket.LayerType {
	if info, ok := extInfoOf(h); ok {
		return *info.layerType
	}
	return gopacket.LayerTypePayload
}

// extHeadersNames caches the names of the header sets of the opcode table, so
// that String does not allocate for any of them.
var extHeadersNames = map[ExtHeaders]string{}

// String returns the header names in wire order joined by "+", such as
// "RDETH+DETH+RETH", or "none" for the empty set. Bits that name no header
// are shown in hex.
func (h ExtHeaders) String() string {
	if s, ok := extHeadersNames[h]; ok {
		return s
	}
	return h.format()
}

func (h ExtHeaders) format() string {
	if h == 0 {
		return "none"
	}
	var parts []string
	known := ExtHeaders(0)
	for _, b := range wireOrder {
		if h&b != 0 {
			info, _ := extInfoOf(b)
			parts = append(parts, info.name)
			known |= b
		}
	}
	if extra := h &^ known; extra != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", uint16(extra)))
	}
	return strings.Join(parts, "+")
}

// Position is where a packet sits in its message.
type Position uint8

// Positions of a packet in a message. Single-packet requests (READ REQUEST,
// atomics, FLUSH, ATOMIC WRITE, RESYNC) count as Only; acknowledgements and
// CNPs have no position.
const (
	PositionNone Position = iota
	PositionFirst
	PositionMiddle
	PositionLast
	PositionOnly
)

var positionNames = [...]string{"None", "First", "Middle", "Last", "Only"}

// String returns "None", "First", "Middle", "Last" or "Only".
func (p Position) String() string {
	if int(p) < len(positionNames) {
		return positionNames[p]
	}
	return "Position(" + fmt.Sprint(uint8(p)) + ")"
}

// opInfo is one entry of the opcode table.
type opInfo struct {
	name     string
	hdrs     ExtHeaders
	known    bool
	ack      bool // ACKNOWLEDGE or ATOMIC ACKNOWLEDGE
	readResp bool // RDMA READ RESPONSE First/Middle/Last/Only
	readReq  bool // RDMA READ REQUEST
	cnp      bool
	payload  bool // the packet may carry a payload
	pos      Position
	nseq     uint8
	seq      [len(wireOrder)]ExtHeaders // hdrs in wire order, nseq of them
}

// opDef defines one operation (the low five opcode bits) of the RC family.
type opDef struct {
	code    Opcode
	name    string
	hdrs    ExtHeaders // headers besides the transport's own (RDETH, DETH, XRCETH)
	resp    bool       // a response: RD adds RDETH alone, XRC adds no XRCETH
	pos     Position
	payload bool
}

// rcOps are RC's operations (IBTA Vol. 1 Table 38, IBTA 1.5 for 0x1C and
// 0x1D). The other transports take subsets of them.
var rcOps = [...]opDef{
	{OpRCSendFirst, "SEND_FIRST", 0, false, PositionFirst, true},
	{OpRCSendMiddle, "SEND_MIDDLE", 0, false, PositionMiddle, true},
	{OpRCSendLast, "SEND_LAST", 0, false, PositionLast, true},
	{OpRCSendLastWithImmediate, "SEND_LAST_WITH_IMMEDIATE", HasImmDt, false, PositionLast, true},
	{OpRCSendOnly, "SEND_ONLY", 0, false, PositionOnly, true},
	{OpRCSendOnlyWithImmediate, "SEND_ONLY_WITH_IMMEDIATE", HasImmDt, false, PositionOnly, true},
	{OpRCRDMAWriteFirst, "RDMA_WRITE_FIRST", HasRETH, false, PositionFirst, true},
	{OpRCRDMAWriteMiddle, "RDMA_WRITE_MIDDLE", 0, false, PositionMiddle, true},
	{OpRCRDMAWriteLast, "RDMA_WRITE_LAST", 0, false, PositionLast, true},
	{OpRCRDMAWriteLastWithImmediate, "RDMA_WRITE_LAST_WITH_IMMEDIATE", HasImmDt, false, PositionLast, true},
	{OpRCRDMAWriteOnly, "RDMA_WRITE_ONLY", HasRETH, false, PositionOnly, true},
	{OpRCRDMAWriteOnlyWithImmediate, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", HasRETH | HasImmDt, false, PositionOnly, true},
	{OpRCRDMAReadRequest, "RDMA_READ_REQUEST", HasRETH, false, PositionOnly, false},
	{OpRCRDMAReadResponseFirst, "RDMA_READ_RESPONSE_FIRST", HasAETH, true, PositionFirst, true},
	{OpRCRDMAReadResponseMiddle, "RDMA_READ_RESPONSE_MIDDLE", 0, true, PositionMiddle, true},
	{OpRCRDMAReadResponseLast, "RDMA_READ_RESPONSE_LAST", HasAETH, true, PositionLast, true},
	{OpRCRDMAReadResponseOnly, "RDMA_READ_RESPONSE_ONLY", HasAETH, true, PositionOnly, true},
	{OpRCAcknowledge, "ACKNOWLEDGE", HasAETH, true, PositionNone, false},
	{OpRCAtomicAcknowledge, "ATOMIC_ACKNOWLEDGE", HasAETH | HasAtomicAckETH, true, PositionNone, false},
	{OpRCCompareSwap, "COMPARE_SWAP", HasAtomicETH, false, PositionOnly, false},
	{OpRCFetchAdd, "FETCH_ADD", HasAtomicETH, false, PositionOnly, false},
	{OpRCSendLastWithInvalidate, "SEND_LAST_WITH_INVALIDATE", HasIETH, false, PositionLast, true},
	{OpRCSendOnlyWithInvalidate, "SEND_ONLY_WITH_INVALIDATE", HasIETH, false, PositionOnly, true},
	{OpRCFlush, "FLUSH", HasFETH | HasRETH, false, PositionOnly, false},
	{OpRCAtomicWrite, "ATOMIC_WRITE", HasRETH, false, PositionOnly, true},
}

// opTable is the opcode table, built once at package initialisation.
var opTable = buildOpTable()

func buildOpTable() *[256]opInfo {
	var t [256]opInfo
	for i := range t {
		t[i].name = fmt.Sprintf("UNKNOWN_0x%02X", i)
	}
	set := func(op Opcode, prefix string, d opDef, hdrs ExtHeaders) {
		code := Operation(d.code)
		t[op] = opInfo{
			name:     prefix + "_" + d.name,
			hdrs:     hdrs,
			known:    true,
			ack:      code == Operation(OpRCAcknowledge) || code == Operation(OpRCAtomicAcknowledge),
			readResp: code >= Operation(OpRCRDMAReadResponseFirst) && code <= Operation(OpRCRDMAReadResponseOnly),
			readReq:  code == Operation(OpRCRDMAReadRequest),
			payload:  d.payload,
			pos:      d.pos,
		}
	}
	for _, d := range rcOps {
		// RC: the whole set.
		set(OpBaseRC|d.code, "RC", d, d.hdrs)
		// UC: SEND and RDMA WRITE (0x00-0x0B).
		if d.code <= OpRCRDMAWriteOnlyWithImmediate {
			set(OpBaseUC|d.code, "UC", d, d.hdrs)
		}
		// RD: 0x00-0x14, and FLUSH (defined for RD by Linux's ib_pack.h);
		// IBTA defines no RD SEND with invalidate and no RD ATOMIC WRITE.
		if d.code <= OpRCFetchAdd || d.code == OpRCFlush {
			pre := HasRDETH | HasDETH
			if d.resp {
				pre = HasRDETH
			}
			set(OpBaseRD|d.code, "RD", d, pre|d.hdrs)
		}
		// XRC: the whole RC set, XRCETH before the request headers.
		pre := HasXRCETH
		if d.resp {
			pre = 0
		}
		set(OpBaseXRC|d.code, "XRC", d, pre|d.hdrs)
	}
	set(OpRDResync, "RD", opDef{code: Opcode(Operation(OpRDResync)), name: "RESYNC", pos: PositionOnly}, HasRDETH|HasDETH)
	for _, d := range rcOps {
		// UD: SEND ONLY with and without immediate, DETH first.
		if d.code == OpRCSendOnly || d.code == OpRCSendOnlyWithImmediate {
			set(OpBaseUD|d.code, "UD", d, HasDETH|d.hdrs)
		}
	}
	t[OpCNP] = opInfo{name: "CNP", hdrs: HasCNP, known: true, cnp: true}
	for i := range t {
		e := &t[i]
		for _, h := range wireOrder {
			if e.hdrs&h != 0 {
				e.seq[e.nseq] = h
				e.nseq++
			}
		}
		if e.known {
			extHeadersNames[e.hdrs] = e.hdrs.format()
		}
	}
	return &t
}

// Operation returns the low five bits of an opcode: the operation within its
// transport.
func Operation(op Opcode) uint8 { return uint8(op) & 0x1F }

// String returns the opcode's name, transport prefix and IBTA operation in
// upper snake case such as "RC_SEND_FIRST" or "UD_SEND_ONLY", "CNP" for 0x81,
// and "UNKNOWN_0xNN" for opcodes the table does not know. It never allocates.
func (op Opcode) String() string { return opTable[op].name }

// Known reports whether the opcode table defines op.
func (op Opcode) Known() bool { return opTable[op].known }

// Transport returns the transport service named by the top three bits, or
// TransportUnknown for the reserved (0xC0) and manufacturer-specific (0xE0)
// ranges.
func (op Opcode) Transport() Transport {
	t := Transport(op >> 5)
	if t > TransportXRC {
		return TransportUnknown
	}
	return t
}

// ExtHeaders returns the extended headers that follow a BTH with this opcode,
// or zero for an unknown opcode (whose bytes after the BTH are payload).
func (op Opcode) ExtHeaders() ExtHeaders { return opTable[op].hdrs }

// Operation returns the low five bits of the opcode.
func (op Opcode) Operation() uint8 { return Operation(op) }

// IsAck reports whether op is an ACKNOWLEDGE or ATOMIC ACKNOWLEDGE.
func (op Opcode) IsAck() bool { return opTable[op].ack }

// IsReadResponse reports whether op is an RDMA READ RESPONSE (First, Middle,
// Last or Only).
func (op Opcode) IsReadResponse() bool { return opTable[op].readResp }

// IsCNP reports whether op is the RoCEv2 Congestion Notification Packet.
func (op Opcode) IsCNP() bool { return opTable[op].cnp }

// IsRequest reports whether op is a known request opcode, one whose PSN is a
// requester PSN: any known opcode that is not an acknowledgement, a read
// response or a CNP.
func (op Opcode) IsRequest() bool {
	i := &opTable[op]
	return i.known && !i.ack && !i.readResp && !i.cnp
}

// IsReadRequest reports whether op is an RDMA READ REQUEST.
func (op Opcode) IsReadRequest() bool { return opTable[op].readReq }

// Position returns where a packet with this opcode sits in its message.
func (op Opcode) Position() Position { return opTable[op].pos }

// HasPayload reports whether a packet with this opcode may carry a payload
// (SEND, RDMA WRITE, READ RESPONSE and ATOMIC WRITE packets); a payload may
// still be empty, as in a zero-length SEND.
func (op Opcode) HasPayload() bool { return opTable[op].payload }

// ExtHeaderSet holds one of each extended header, for DecodeExtHeaders to fill
// without allocating. Only the headers DecodeExtHeaders reports as present
// hold values from the last call; the others are left as they were.
type ExtHeaderSet struct {
	RDETH        RDETH
	DETH         DETH
	XRCETH       XRCETH
	RETH         RETH
	FETH         FETH
	AtomicETH    AtomicETH
	AETH         AETH
	AtomicAckETH AtomicAckETH
	ImmDt        ImmDt
	IETH         IETH
	CNP          CNP
}

// ErrExtHeaderTruncated is wrapped by the error DecodeExtHeaders and the
// gopacket decoder return when an extended header is cut short.
var ErrExtHeaderTruncated = errors.New("extended header cut short")

// ErrNilExtHeaderSet is returned by DecodeExtHeaders when dst is nil.
var ErrNilExtHeaderSet = errors.New("nil ExtHeaderSet")

// ExtHeaderError says which extended header was cut short and how many of its
// bytes were there. It wraps ErrExtHeaderTruncated and the header's own
// sentinel, such as ErrRETHTooShort.
type ExtHeaderError struct {
	Header ExtHeaders // the single header that was cut short
	Have   int        // bytes available
	Need   int        // the header's size
}

// Error returns a message such as "RETH cut short: 9 of 16 bytes".
func (e *ExtHeaderError) Error() string {
	return fmt.Sprintf("%s cut short: %d of %d bytes", e.Header, e.Have, e.Need)
}

// Unwrap returns ErrExtHeaderTruncated and the header's own sentinel error.
func (e *ExtHeaderError) Unwrap() []error {
	errs := []error{ErrExtHeaderTruncated}
	if info, ok := extInfoOf(e.Header); ok {
		errs = append(errs, info.tooShort)
	}
	return errs
}

// DecodeExtHeaders decodes the extended headers that follow a BTH with opcode
// op, in wire order, from data (the bytes after the BTH) into dst. It returns
// the bytes after the last header (the payload, plus the ICRC if data held
// it) and the set of headers decoded. An unknown opcode has no extended
// headers: rest is data. When a header is cut short, it returns the headers
// decoded so far, rest starting at the short header, and an *ExtHeaderError.
// It does not allocate unless it returns an error.
func DecodeExtHeaders(op Opcode, data []byte, dst *ExtHeaderSet) (rest []byte, present ExtHeaders, err error) {
	if dst == nil {
		return data, 0, ErrNilExtHeaderSet
	}
	info := &opTable[op]
	rest = data
	// prevNext points at the previous header's next-layer field, so each
	// header names its successor as a layer in a gopacket chain would.
	var prevNext *gopacket.LayerType
	for _, h := range info.seq[:info.nseq] {
		var next *gopacket.LayerType
		var derr error
		switch h {
		case HasRDETH:
			next = &dst.RDETH.next
			derr = dst.RDETH.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
		case HasDETH:
			next = &dst.DETH.next
			derr = dst.DETH.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
		case HasXRCETH:
			next = &dst.XRCETH.next
			derr = dst.XRCETH.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
		case HasFETH:
			next = &dst.FETH.next
			derr = dst.FETH.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
		case HasRETH:
			next = &dst.RETH.next
			derr = dst.RETH.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
		case HasAtomicETH:
			next = &dst.AtomicETH.next
			derr = dst.AtomicETH.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
		case HasAETH:
			next = &dst.AETH.next
			derr = dst.AETH.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
		case HasAtomicAckETH:
			next = &dst.AtomicAckETH.next
			derr = dst.AtomicAckETH.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
		case HasImmDt:
			next = &dst.ImmDt.next
			derr = dst.ImmDt.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
		case HasIETH:
			next = &dst.IETH.next
			derr = dst.IETH.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
		case HasCNP:
			next = &dst.CNP.next
			derr = dst.CNP.DecodeFromBytes(rest, gopacket.NilDecodeFeedback)
		}
		if derr != nil {
			return rest, present, &ExtHeaderError{Header: h, Have: len(rest), Need: h.size()}
		}
		if prevNext != nil {
			*prevNext = h.layerType()
		}
		prevNext = next
		present |= h
		rest = rest[h.size():]
	}
	return rest, present, nil
}
