// Congestion Notification Packet body, 16 bytes after the BTH of opcode 0x81
// (RoCEv2, IBTA Annex A17):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+                                                               +
//	|                        Reserved (16 bytes)                    |
//	+                                                               +
//	|                                                               |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

package layers

import (
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// CNPLen is the size of the CNP reserved block in bytes.
const CNPLen = 16

// ErrCNPTooShort is returned when fewer than CNPLen bytes are left for the CNP
// reserved block.
var ErrCNPTooShort = errors.New("CNP too short: need 16 bytes")

// CNP is the 16 reserved bytes after the BTH of a RoCEv2 Congestion
// Notification Packet (opcode 0x81).
type CNP struct {
	gplayers.BaseLayer
	Reserved [16]byte

	next gopacket.LayerType
}

// LayerType returns LayerTypeCNP.
func (h *CNP) LayerType() gopacket.LayerType { return LayerTypeCNP }

// CanDecode returns LayerTypeCNP.
func (h *CNP) CanDecode() gopacket.LayerClass { return LayerTypeCNP }

// NextLayerType returns the header that followed this one when it was decoded
// as part of an opcode's chain, and gopacket.LayerTypePayload otherwise.
func (h *CNP) NextLayerType() gopacket.LayerType { return nextOrPayload(h.next) }

func (h *CNP) setNext(t gopacket.LayerType) { h.next = t }

// DecodeFromBytes decodes the CNP reserved block from the start of data.
func (h *CNP) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < CNPLen {
		df.SetTruncated()
		return ErrCNPTooShort
	}
	copy(h.Reserved[:], data[:CNPLen])
	h.next = 0
	h.BaseLayer = gplayers.BaseLayer{Contents: data[:CNPLen], Payload: data[CNPLen:]}
	return nil
}

// SerializeTo writes the CNP reserved block in front of the buffer's contents.
func (h *CNP) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	d, err := buf.PrependBytes(CNPLen)
	if err != nil {
		return err
	}
	copy(d, h.Reserved[:])
	return nil
}
