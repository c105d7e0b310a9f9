// Immediate Data header, 4 bytes (IBTA Vol. 1, 9.3):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         Immediate Data                        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

package layers

import (
	"encoding/binary"
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// ImmDtLen is the size of the ImmDt header in bytes.
const ImmDtLen = 4

// ErrImmDtTooShort is returned when fewer than ImmDtLen bytes are left for an
// ImmDt header.
var ErrImmDtTooShort = errors.New("ImmDt too short: need 4 bytes")

// ImmDt is the 4-byte Immediate Data header.
type ImmDt struct {
	gplayers.BaseLayer
	Immediate uint32 // read big-endian, as Wireshark shows it

	next gopacket.LayerType
}

// LayerType returns LayerTypeImmDt.
func (h *ImmDt) LayerType() gopacket.LayerType { return LayerTypeImmDt }

// CanDecode returns LayerTypeImmDt.
func (h *ImmDt) CanDecode() gopacket.LayerClass { return LayerTypeImmDt }

// NextLayerType returns the header that followed this one when it was decoded
// as part of an opcode's chain, and gopacket.LayerTypePayload otherwise.
func (h *ImmDt) NextLayerType() gopacket.LayerType { return nextOrPayload(h.next) }

func (h *ImmDt) setNext(t gopacket.LayerType) { h.next = t }

// DecodeFromBytes decodes an ImmDt header from the start of data.
func (h *ImmDt) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < ImmDtLen {
		df.SetTruncated()
		return ErrImmDtTooShort
	}
	h.Immediate = binary.BigEndian.Uint32(data[0:4])
	h.next = 0
	h.BaseLayer = gplayers.BaseLayer{Contents: data[:ImmDtLen], Payload: data[ImmDtLen:]}
	return nil
}

// SerializeTo writes the ImmDt header in front of the buffer's contents.
func (h *ImmDt) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := buf.PrependBytes(ImmDtLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(d, h.Immediate)
	return nil
}
