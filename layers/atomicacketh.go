// Atomic Acknowledge Extended Transport Header, 8 bytes (IBTA Vol. 1, 9.3):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Original Remote Data (63..32)                 |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Original Remote Data (31..0)                  |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

package layers

import (
	"encoding/binary"
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// AtomicAckETHLen is the size of the AtomicAckETH in bytes.
const AtomicAckETHLen = 8

// ErrAtomicAckETHTooShort is returned when fewer than AtomicAckETHLen bytes are
// left for an AtomicAckETH.
var ErrAtomicAckETHTooShort = errors.New("AtomicAckETH too short: need 8 bytes")

// AtomicAckETH is the 8-byte Atomic Acknowledge Extended Transport Header.
type AtomicAckETH struct {
	gplayers.BaseLayer
	OrigRemoteData uint64

	next gopacket.LayerType
}

// LayerType returns LayerTypeAtomicAckETH.
func (h *AtomicAckETH) LayerType() gopacket.LayerType { return LayerTypeAtomicAckETH }

// CanDecode returns LayerTypeAtomicAckETH.
func (h *AtomicAckETH) CanDecode() gopacket.LayerClass { return LayerTypeAtomicAckETH }

// NextLayerType returns the header that followed this one when it was decoded
// as part of an opcode's chain, and gopacket.LayerTypePayload otherwise.
func (h *AtomicAckETH) NextLayerType() gopacket.LayerType { return nextOrPayload(h.next) }

func (h *AtomicAckETH) setNext(t gopacket.LayerType) { h.next = t }

// DecodeFromBytes decodes an AtomicAckETH from the start of data.
func (h *AtomicAckETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < AtomicAckETHLen {
		df.SetTruncated()
		return ErrAtomicAckETHTooShort
	}
	h.OrigRemoteData = binary.BigEndian.Uint64(data[0:8])
	h.next = 0
	h.BaseLayer = gplayers.BaseLayer{Contents: data[:AtomicAckETHLen], Payload: data[AtomicAckETHLen:]}
	return nil
}

// SerializeTo writes the AtomicAckETH in front of the buffer's contents.
func (h *AtomicAckETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := buf.PrependBytes(AtomicAckETHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint64(d, h.OrigRemoteData)
	return nil
}
