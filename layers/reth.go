// RDMA Extended Transport Header, 16 bytes (IBTA Vol. 1, 9.3):
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
//	|                           DMA Length                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

package layers

import (
	"encoding/binary"
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// RETHLen is the size of the RETH in bytes.
const RETHLen = 16

// ErrRETHTooShort is returned when fewer than RETHLen bytes are left for a
// RETH.
var ErrRETHTooShort = errors.New("RETH too short: need 16 bytes")

// RETH is the 16-byte RDMA Extended Transport Header.
type RETH struct {
	gplayers.BaseLayer
	VA        uint64
	RKey      uint32
	DMALength uint32

	next gopacket.LayerType
}

// LayerType returns LayerTypeRETH.
func (r *RETH) LayerType() gopacket.LayerType { return LayerTypeRETH }

// CanDecode returns LayerTypeRETH.
func (r *RETH) CanDecode() gopacket.LayerClass { return LayerTypeRETH }

// NextLayerType returns the header that followed this one when it was decoded
// as part of an opcode's chain (gopacket or DecodeExtHeaders), and
// gopacket.LayerTypePayload otherwise.
func (r *RETH) NextLayerType() gopacket.LayerType { return nextOrPayload(r.next) }

func (r *RETH) setNext(t gopacket.LayerType) { r.next = t }

// DecodeFromBytes decodes a RETH from the start of data.
func (r *RETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < RETHLen {
		df.SetTruncated()
		return ErrRETHTooShort
	}
	r.VA = binary.BigEndian.Uint64(data[0:8])
	r.RKey = binary.BigEndian.Uint32(data[8:12])
	r.DMALength = binary.BigEndian.Uint32(data[12:16])
	r.next = 0
	r.BaseLayer = gplayers.BaseLayer{Contents: data[:RETHLen], Payload: data[RETHLen:]}
	return nil
}

// SerializeTo writes the RETH in front of the buffer's contents.
func (r *RETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := buf.PrependBytes(RETHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint64(d[0:8], r.VA)
	binary.BigEndian.PutUint32(d[8:12], r.RKey)
	binary.BigEndian.PutUint32(d[12:16], r.DMALength)
	return nil
}

// nextOrPayload maps the zero layer type (no chain recorded) to
// gopacket.LayerTypePayload.
func nextOrPayload(t gopacket.LayerType) gopacket.LayerType {
	if t == 0 {
		return gopacket.LayerTypePayload
	}
	return t
}
