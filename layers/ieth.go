// Invalidate Extended Transport Header, 4 bytes (IBTA Vol. 1, 9.3):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     R_Key to invalidate                       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

package layers

import (
	"encoding/binary"
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// IETHLen is the size of the IETH in bytes.
const IETHLen = 4

// ErrIETHTooShort is returned when fewer than IETHLen bytes are left for an
// IETH.
var ErrIETHTooShort = errors.New("IETH too short: need 4 bytes")

// IETH is the 4-byte Invalidate Extended Transport Header.
type IETH struct {
	gplayers.BaseLayer
	RKey uint32

	next gopacket.LayerType
}

// LayerType returns LayerTypeIETH.
func (h *IETH) LayerType() gopacket.LayerType { return LayerTypeIETH }

// CanDecode returns LayerTypeIETH.
func (h *IETH) CanDecode() gopacket.LayerClass { return LayerTypeIETH }

// NextLayerType returns the header that followed this one when it was decoded
// as part of an opcode's chain, and gopacket.LayerTypePayload otherwise.
func (h *IETH) NextLayerType() gopacket.LayerType { return nextOrPayload(h.next) }

func (h *IETH) setNext(t gopacket.LayerType) { h.next = t }

// DecodeFromBytes decodes an IETH from the start of data.
func (h *IETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < IETHLen {
		df.SetTruncated()
		return ErrIETHTooShort
	}
	h.RKey = binary.BigEndian.Uint32(data[0:4])
	h.next = 0
	h.BaseLayer = gplayers.BaseLayer{Contents: data[:IETHLen], Payload: data[IETHLen:]}
	return nil
}

// SerializeTo writes the IETH in front of the buffer's contents.
func (h *IETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := buf.PrependBytes(IETHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(d, h.RKey)
	return nil
}
