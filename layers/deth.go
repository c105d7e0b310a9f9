// Datagram Extended Transport Header, 8 bytes (IBTA Vol. 1, 9.3):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                            Queue Key                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Reserved   |                Source QP                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

package layers

import (
	"encoding/binary"
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// DETHLen is the size of the DETH in bytes.
const DETHLen = 8

// ErrDETHTooShort is returned when fewer than DETHLen bytes are left for a
// DETH.
var ErrDETHTooShort = errors.New("DETH too short: need 8 bytes")

// DETH is the 8-byte Datagram Extended Transport Header.
type DETH struct {
	gplayers.BaseLayer
	QKey     uint32
	SrcQP    uint32 // 24 bits
	Reserved uint8  // byte 4, kept so that a decoded header serializes unchanged

	next gopacket.LayerType
}

// LayerType returns LayerTypeDETH.
func (h *DETH) LayerType() gopacket.LayerType { return LayerTypeDETH }

// CanDecode returns LayerTypeDETH.
func (h *DETH) CanDecode() gopacket.LayerClass { return LayerTypeDETH }

// NextLayerType returns the header that followed this one when it was decoded
// as part of an opcode's chain, and gopacket.LayerTypePayload otherwise.
func (h *DETH) NextLayerType() gopacket.LayerType { return nextOrPayload(h.next) }

func (h *DETH) setNext(t gopacket.LayerType) { h.next = t }

// DecodeFromBytes decodes a DETH from the start of data.
func (h *DETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < DETHLen {
		df.SetTruncated()
		return ErrDETHTooShort
	}
	h.QKey = binary.BigEndian.Uint32(data[0:4])
	h.Reserved = data[4]
	h.SrcQP = getUint24(data[5:8])
	h.next = 0
	h.BaseLayer = gplayers.BaseLayer{Contents: data[:DETHLen], Payload: data[DETHLen:]}
	return nil
}

// SerializeTo writes the DETH in front of the buffer's contents. It returns an
// error wrapping ErrFieldOverflow when SrcQP does not fit 24 bits.
func (h *DETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if h.SrcQP > 0xFFFFFF {
		return overflow("DETH", "SrcQP", uint64(h.SrcQP))
	}
	d, err := buf.PrependBytes(DETHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(d[0:4], h.QKey)
	d[4] = h.Reserved
	putUint24(d[5:8], h.SrcQP)
	return nil
}
