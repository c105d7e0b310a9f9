// Reliable Datagram Extended Transport Header, 4 bytes (IBTA Vol. 1, 9.3):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Reserved   |              EE Context                       |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

package layers

import (
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// RDETHLen is the size of the RDETH in bytes.
const RDETHLen = 4

// ErrRDETHTooShort is returned when fewer than RDETHLen bytes are left for an
// RDETH.
var ErrRDETHTooShort = errors.New("RDETH too short: need 4 bytes")

// RDETH is the 4-byte Reliable Datagram Extended Transport Header.
type RDETH struct {
	gplayers.BaseLayer
	EECnxt   uint32 // 24 bits
	Reserved uint8  // byte 0, kept so that a decoded header serializes unchanged

	next gopacket.LayerType
}

// LayerType returns LayerTypeRDETH.
func (h *RDETH) LayerType() gopacket.LayerType { return LayerTypeRDETH }

// CanDecode returns LayerTypeRDETH.
func (h *RDETH) CanDecode() gopacket.LayerClass { return LayerTypeRDETH }

// NextLayerType returns the header that followed this one when it was decoded
// as part of an opcode's chain, and gopacket.LayerTypePayload otherwise.
func (h *RDETH) NextLayerType() gopacket.LayerType { return nextOrPayload(h.next) }

func (h *RDETH) setNext(t gopacket.LayerType) { h.next = t }

// DecodeFromBytes decodes an RDETH from the start of data.
func (h *RDETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < RDETHLen {
		df.SetTruncated()
		return ErrRDETHTooShort
	}
	h.Reserved = data[0]
	h.EECnxt = getUint24(data[1:4])
	h.next = 0
	h.BaseLayer = gplayers.BaseLayer{Contents: data[:RDETHLen], Payload: data[RDETHLen:]}
	return nil
}

// SerializeTo writes the RDETH in front of the buffer's contents. It returns
// an error wrapping ErrFieldOverflow when EECnxt does not fit 24 bits.
func (h *RDETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if h.EECnxt > 0xFFFFFF {
		return overflow("RDETH", "EECnxt", uint64(h.EECnxt))
	}
	d, err := buf.PrependBytes(RDETHLen)
	if err != nil {
		return err
	}
	d[0] = h.Reserved
	putUint24(d[1:4], h.EECnxt)
	return nil
}
