// Base Transport Header, 12 bytes (IBTA Vol. 1, 9.2; byte 4 per RoCEv2
// Annex A17, where the base spec has Resv8a):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    OpCode     |S|M|Pad| TVer  |         Partition Key         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|F|B|  Resv6a   |                 Destination QP                |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|A|    Resv7    |             Packet Sequence Number            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
//	S solicited event, M migration request, Pad pad count, TVer transport
//	header version, F FECN, B BECN, A acknowledge request.

package layers

import (
	"errors"
	"fmt"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// BTHLen is the size of the BTH in bytes.
const BTHLen = 12

// ErrBTHTooShort is returned when fewer than BTHLen bytes are left for a BTH.
var ErrBTHTooShort = errors.New("BTH too short: need 12 bytes")

// BTH is the 12-byte InfiniBand Base Transport Header.
type BTH struct {
	gplayers.BaseLayer
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

// LayerType returns LayerTypeBTH.
func (b *BTH) LayerType() gopacket.LayerType { return LayerTypeBTH }

// CanDecode returns LayerTypeBTH.
func (b *BTH) CanDecode() gopacket.LayerClass { return LayerTypeBTH }

// NextLayerType returns the layer type of the first extended header the opcode
// calls for, or gopacket.LayerTypePayload. A DecodingLayerParser cannot follow
// the rest of the chain, which depends on the opcode: use DecodeExtHeaders.
func (b *BTH) NextLayerType() gopacket.LayerType {
	return b.Opcode.ExtHeaders().first().layerType()
}

// DecodeFromBytes decodes a BTH from the start of data; the rest of data
// becomes the layer's payload (the ICRC included, if data holds it).
func (b *BTH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < BTHLen {
		df.SetTruncated()
		return ErrBTHTooShort
	}
	b.Opcode = Opcode(data[0])
	b.SE = data[1]&0x80 != 0
	b.MigReq = data[1]&0x40 != 0
	b.PadCount = data[1] >> 4 & 0x3
	b.TVer = data[1] & 0x0F
	b.PKey = uint16(data[2])<<8 | uint16(data[3])
	b.FECN = data[4]&0x80 != 0
	b.BECN = data[4]&0x40 != 0
	b.Resv6a = data[4] & 0x3F
	b.DestQP = getUint24(data[5:8])
	b.AckReq = data[8]&0x80 != 0
	b.Resv7 = data[8] & 0x7F
	b.PSN = getUint24(data[9:12])
	b.BaseLayer = gplayers.BaseLayer{Contents: data[:BTHLen], Payload: data[BTHLen:]}
	return nil
}

// SerializeTo writes the BTH in front of the buffer's contents. It returns an
// error wrapping ErrFieldOverflow when a field does not fit its bits.
func (b *BTH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	switch {
	case b.PadCount > 3:
		return overflow("BTH", "PadCount", uint64(b.PadCount))
	case b.TVer > 0x0F:
		return overflow("BTH", "TVer", uint64(b.TVer))
	case b.Resv6a > 0x3F:
		return overflow("BTH", "Resv6a", uint64(b.Resv6a))
	case b.DestQP > 0xFFFFFF:
		return overflow("BTH", "DestQP", uint64(b.DestQP))
	case b.Resv7 > 0x7F:
		return overflow("BTH", "Resv7", uint64(b.Resv7))
	case b.PSN > 0xFFFFFF:
		return overflow("BTH", "PSN", uint64(b.PSN))
	}
	d, err := buf.PrependBytes(BTHLen)
	if err != nil {
		return err
	}
	d[0] = byte(b.Opcode)
	d[1] = bit(b.SE, 0x80) | bit(b.MigReq, 0x40) | b.PadCount<<4 | b.TVer
	d[2] = byte(b.PKey >> 8)
	d[3] = byte(b.PKey)
	d[4] = bit(b.FECN, 0x80) | bit(b.BECN, 0x40) | b.Resv6a
	putUint24(d[5:8], b.DestQP)
	d[8] = bit(b.AckReq, 0x80) | b.Resv7
	putUint24(d[9:12], b.PSN)
	return nil
}

// getUint24 reads a 24-bit big-endian number from b[0:3].
func getUint24(b []byte) uint32 {
	_ = b[2]
	return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
}

// putUint24 writes the low 24 bits of v big-endian into b[0:3].
func putUint24(b []byte, v uint32) {
	_ = b[2]
	b[0] = byte(v >> 16)
	b[1] = byte(v >> 8)
	b[2] = byte(v)
}

// bit returns mask when set is true, zero otherwise.
func bit(set bool, mask byte) byte {
	if set {
		return mask
	}
	return 0
}

// overflow builds the error SerializeTo returns for a field wider than its
// wire bits.
func overflow(header, field string, v uint64) error {
	return fmt.Errorf("%w: %s %s = %#x", ErrFieldOverflow, header, field, v)
}
