// Atomic Extended Transport Header, 28 bytes (IBTA Vol. 1, 9.3):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Virtual Address (63..32)                   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Virtual Address (31..0)                    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                           Remote Key                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Swap (or Add) Data (63..32)                  |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Swap (or Add) Data (31..0)                   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Compare Data (63..32)                    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Compare Data (31..0)                     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

package layers

import (
	"encoding/binary"
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// AtomicETHLen is the size of the AtomicETH in bytes.
const AtomicETHLen = 28

// ErrAtomicETHTooShort is returned when fewer than AtomicETHLen bytes are left
// for an AtomicETH.
var ErrAtomicETHTooShort = errors.New("AtomicETH too short: need 28 bytes")

// AtomicETH is the 28-byte Atomic Extended Transport Header.
type AtomicETH struct {
	gplayers.BaseLayer
	VA      uint64
	RKey    uint32
	SwapAdd uint64
	Compare uint64

	next gopacket.LayerType
}

// LayerType returns LayerTypeAtomicETH.
func (h *AtomicETH) LayerType() gopacket.LayerType { return LayerTypeAtomicETH }

// CanDecode returns LayerTypeAtomicETH.
func (h *AtomicETH) CanDecode() gopacket.LayerClass { return LayerTypeAtomicETH }

// NextLayerType returns the header that followed this one when it was decoded
// as part of an opcode's chain, and gopacket.LayerTypePayload otherwise.
func (h *AtomicETH) NextLayerType() gopacket.LayerType { return nextOrPayload(h.next) }

func (h *AtomicETH) setNext(t gopacket.LayerType) { h.next = t }

// DecodeFromBytes decodes an AtomicETH from the start of data.
func (h *AtomicETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < AtomicETHLen {
		df.SetTruncated()
		return ErrAtomicETHTooShort
	}
	h.VA = binary.BigEndian.Uint64(data[0:8])
	h.RKey = binary.BigEndian.Uint32(data[8:12])
	h.SwapAdd = binary.BigEndian.Uint64(data[12:20])
	h.Compare = binary.BigEndian.Uint64(data[20:28])
	h.next = 0
	h.BaseLayer = gplayers.BaseLayer{Contents: data[:AtomicETHLen], Payload: data[AtomicETHLen:]}
	return nil
}

// SerializeTo writes the AtomicETH in front of the buffer's contents.
func (h *AtomicETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := buf.PrependBytes(AtomicETHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint64(d[0:8], h.VA)
	binary.BigEndian.PutUint32(d[8:12], h.RKey)
	binary.BigEndian.PutUint64(d[12:20], h.SwapAdd)
	binary.BigEndian.PutUint64(d[20:28], h.Compare)
	return nil
}
