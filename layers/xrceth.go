// XRC Extended Transport Header, 4 bytes (IBTA Vol. 1, Annex A14):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Reserved   |              XRC SRQ number                   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

package layers

import (
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// XRCETHLen is the size of the XRCETH in bytes.
const XRCETHLen = 4

// ErrXRCETHTooShort is returned when fewer than XRCETHLen bytes are left for
// an XRCETH.
var ErrXRCETHTooShort = errors.New("XRCETH too short: need 4 bytes")

// XRCETH is the 4-byte XRC Extended Transport Header.
type XRCETH struct {
	gplayers.BaseLayer
	XRCSRQ   uint32 // 24 bits
	Reserved uint8  // byte 0, kept so that a decoded header serializes unchanged

	next gopacket.LayerType
}

// LayerType returns LayerTypeXRCETH.
func (h *XRCETH) LayerType() gopacket.LayerType { return LayerTypeXRCETH }

// CanDecode returns LayerTypeXRCETH.
func (h *XRCETH) CanDecode() gopacket.LayerClass { return LayerTypeXRCETH }

// NextLayerType returns the header that followed this one when it was decoded
// as part of an opcode's chain, and gopacket.LayerTypePayload otherwise.
func (h *XRCETH) NextLayerType() gopacket.LayerType { return nextOrPayload(h.next) }

func (h *XRCETH) setNext(t gopacket.LayerType) { h.next = t }

// DecodeFromBytes decodes an XRCETH from the start of data.
func (h *XRCETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < XRCETHLen {
		df.SetTruncated()
		return ErrXRCETHTooShort
	}
	h.Reserved = data[0]
	h.XRCSRQ = getUint24(data[1:4])
	h.next = 0
	h.BaseLayer = gplayers.BaseLayer{Contents: data[:XRCETHLen], Payload: data[XRCETHLen:]}
	return nil
}

// SerializeTo writes the XRCETH in front of the buffer's contents. It returns
// an error wrapping ErrFieldOverflow when XRCSRQ does not fit 24 bits.
func (h *XRCETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if h.XRCSRQ > 0xFFFFFF {
		return overflow("XRCETH", "XRCSRQ", uint64(h.XRCSRQ))
	}
	d, err := buf.PrependBytes(XRCETHLen)
	if err != nil {
		return err
	}
	d[0] = h.Reserved
	putUint24(d[1:4], h.XRCSRQ)
	return nil
}
