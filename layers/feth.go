// FLUSH Extended Transport Header, 4 bytes (IBTA 1.5, Memory Placement
// Extensions); it precedes the RETH in a FLUSH packet:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Reserved                      |SEL|  PLT  |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
//	SEL selectivity level (bits 5-4), PLT placement type (bits 3-0).

package layers

import (
	"encoding/binary"
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// FETHLen is the size of the FETH in bytes.
const FETHLen = 4

// ErrFETHTooShort is returned when fewer than FETHLen bytes are left for an
// FETH.
var ErrFETHTooShort = errors.New("FETH too short: need 4 bytes")

// FETH is the 4-byte FLUSH Extended Transport Header of IBTA 1.5.
type FETH struct {
	gplayers.BaseLayer
	SelectivityLevel uint8  // 2 bits
	PlacementType    uint8  // 4 bits
	Reserved         uint32 // the upper 26 bits, kept so that a decoded header serializes unchanged

	next gopacket.LayerType
}

// LayerType returns LayerTypeFETH.
func (h *FETH) LayerType() gopacket.LayerType { return LayerTypeFETH }

// CanDecode returns LayerTypeFETH.
func (h *FETH) CanDecode() gopacket.LayerClass { return LayerTypeFETH }

// NextLayerType returns the header that followed this one when it was decoded
// as part of an opcode's chain, and gopacket.LayerTypePayload otherwise.
func (h *FETH) NextLayerType() gopacket.LayerType { return nextOrPayload(h.next) }

func (h *FETH) setNext(t gopacket.LayerType) { h.next = t }

// DecodeFromBytes decodes an FETH from the start of data.
func (h *FETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < FETHLen {
		df.SetTruncated()
		return ErrFETHTooShort
	}
	v := binary.BigEndian.Uint32(data[0:4])
	h.Reserved = v >> 6
	h.SelectivityLevel = uint8(v>>4) & 0x3
	h.PlacementType = uint8(v) & 0xF
	h.next = 0
	h.BaseLayer = gplayers.BaseLayer{Contents: data[:FETHLen], Payload: data[FETHLen:]}
	return nil
}

// SerializeTo writes the FETH in front of the buffer's contents. It returns an
// error wrapping ErrFieldOverflow when a field does not fit its bits.
func (h *FETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	switch {
	case h.SelectivityLevel > 0x3:
		return overflow("FETH", "SelectivityLevel", uint64(h.SelectivityLevel))
	case h.PlacementType > 0xF:
		return overflow("FETH", "PlacementType", uint64(h.PlacementType))
	case h.Reserved > 1<<26-1:
		return overflow("FETH", "Reserved", uint64(h.Reserved))
	}
	d, err := buf.PrependBytes(FETHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(d, h.Reserved<<6|uint32(h.SelectivityLevel)<<4|uint32(h.PlacementType))
	return nil
}
