// Package layers holds gopacket layers for the InfiniBand transport headers
// carried by RoCE: the Base Transport Header, its extended headers, the GRH of
// RoCEv1 and the invariant CRC trailer.
//
// SKELETON: the exported names and fields below are the contract the rest of
// the project is written against. The implementation moves them into one file
// per header; names and fields stay.
package layers

import "github.com/gopacket/gopacket/layers"

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

// ExtHeaders is a set of extended transport headers that follow a BTH.
type ExtHeaders uint16

// Extended headers, in the order they follow the BTH on the wire.
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

// BTH is the 12-byte InfiniBand Base Transport Header.
type BTH struct {
	layers.BaseLayer
	Opcode   Opcode
	SE       bool  // solicited event
	MigReq   bool  // migration state
	PadCount uint8 // 0..3 pad bytes at the end of the payload
	TVer     uint8 // transport header version, 0
	PKey     uint16
	FECN     bool // RoCEv2: forward explicit congestion notification (byte 4, bit 7)
	BECN     bool // RoCEv2: backward explicit congestion notification (byte 4, bit 6)
	Resv6a   uint8
	DestQP   uint32 // 24 bits
	AckReq   bool
	Resv7    uint8
	PSN      uint32 // 24 bits
}

// RETH is the 16-byte RDMA Extended Transport Header.
type RETH struct {
	layers.BaseLayer
	VA        uint64
	RKey      uint32
	DMALength uint32
}

// AETH is the 4-byte ACK Extended Transport Header.
type AETH struct {
	layers.BaseLayer
	Syndrome uint8
	MSN      uint32 // 24 bits
}

// DETH is the 8-byte Datagram Extended Transport Header.
type DETH struct {
	layers.BaseLayer
	QKey  uint32
	SrcQP uint32 // 24 bits
}

// RDETH is the 4-byte Reliable Datagram Extended Transport Header.
type RDETH struct {
	layers.BaseLayer
	EECnxt uint32 // 24 bits
}

// XRCETH is the 4-byte XRC Extended Transport Header.
type XRCETH struct {
	layers.BaseLayer
	XRCSRQ uint32 // 24 bits
}

// ImmDt is the 4-byte Immediate Data header.
type ImmDt struct {
	layers.BaseLayer
	Immediate uint32
}

// IETH is the 4-byte Invalidate Extended Transport Header.
type IETH struct {
	layers.BaseLayer
	RKey uint32
}

// AtomicETH is the 28-byte Atomic Extended Transport Header.
type AtomicETH struct {
	layers.BaseLayer
	VA      uint64
	RKey    uint32
	SwapAdd uint64
	Compare uint64
}

// AtomicAckETH is the 8-byte Atomic Acknowledge Extended Transport Header.
type AtomicAckETH struct {
	layers.BaseLayer
	OrigRemoteData uint64
}

// FETH is the 4-byte FLUSH Extended Transport Header of IBTA 1.5.
type FETH struct {
	layers.BaseLayer
	SelectivityLevel uint8
	PlacementType    uint8
}

// CNP is the 16 reserved bytes after the BTH of a RoCEv2 Congestion
// Notification Packet (opcode 0x81).
type CNP struct {
	layers.BaseLayer
	Reserved [16]byte
}

// GRH is the 40-byte InfiniBand Global Route Header that RoCEv1 carries after
// the Ethernet header.
type GRH struct {
	layers.BaseLayer
	IPVer         uint8
	TrafficClass  uint8
	FlowLabel     uint32 // 20 bits
	PayloadLength uint16
	NextHeader    uint8
	HopLimit      uint8
	SrcGID        [16]byte
	DstGID        [16]byte
}

// NetworkHeader says which header the ICRC computation starts with.
type NetworkHeader uint8

// Network headers the ICRC covers.
const (
	ICRCIPv4 NetworkHeader = iota // RoCEv2 over IPv4: IPv4, UDP, BTH, ...
	ICRCIPv6                      // RoCEv2 over IPv6: IPv6, UDP, BTH, ...
	ICRCGRH                       // RoCEv1: GRH, BTH, ...
)
