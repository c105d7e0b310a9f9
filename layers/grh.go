// Global Route Header, 40 bytes (IBTA Vol. 1, chapter 8), the network header of
// RoCEv1 (Ethertype 0x8915); its layout is that of an IPv6 header:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| IPVer |  Traffic Class |              Flow Label              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|         Payload Length        |  Next Header  |   Hop Limit   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+                     Source GID (16 bytes)                     +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+                  Destination GID (16 bytes)                   +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
//	Payload Length counts the bytes after the GRH: BTH, extended headers,
//	payload, pad and ICRC. Next Header 0x1B is the IBA transport (BTH).

package layers

import (
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// GRHLen is the size of the GRH in bytes.
const GRHLen = 40

// GRHNextHeaderIBA is the GRH next-header value of the IBA transport: a BTH
// follows.
const GRHNextHeaderIBA = 0x1B

// ErrGRHTooShort is returned when fewer than GRHLen bytes are left for a GRH.
var ErrGRHTooShort = errors.New("GRH too short: need 40 bytes")

// GRH is the 40-byte InfiniBand Global Route Header that RoCEv1 carries after
// the Ethernet header.
type GRH struct {
	gplayers.BaseLayer
	IPVer         uint8
	TrafficClass  uint8
	FlowLabel     uint32 // 20 bits
	PayloadLength uint16
	NextHeader    uint8
	HopLimit      uint8
	SrcGID        [16]byte
	DstGID        [16]byte
}

// LayerType returns LayerTypeGRH.
func (g *GRH) LayerType() gopacket.LayerType { return LayerTypeGRH }

// CanDecode returns LayerTypeGRH.
func (g *GRH) CanDecode() gopacket.LayerClass { return LayerTypeGRH }

// NextLayerType returns LayerTypeBTH when the next header is the IBA
// transport, gopacket.LayerTypePayload otherwise.
func (g *GRH) NextLayerType() gopacket.LayerType {
	if g.NextHeader == GRHNextHeaderIBA {
		return LayerTypeBTH
	}
	return gopacket.LayerTypePayload
}

// NetworkFlow returns the flow between the source and destination GIDs, as
// IPv6 endpoints.
func (g *GRH) NetworkFlow() gopacket.Flow {
	return gopacket.NewFlow(gplayers.EndpointIPv6, g.SrcGID[:], g.DstGID[:])
}

// DecodeFromBytes decodes a GRH from the start of data. The payload is the
// PayloadLength bytes after the header, which leaves out Ethernet padding;
// when data holds fewer, the payload is what there is and the packet is
// marked truncated.
func (g *GRH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < GRHLen {
		df.SetTruncated()
		return ErrGRHTooShort
	}
	g.IPVer = data[0] >> 4
	g.TrafficClass = data[0]<<4 | data[1]>>4
	g.FlowLabel = uint32(data[1]&0x0F)<<16 | uint32(data[2])<<8 | uint32(data[3])
	g.PayloadLength = uint16(data[4])<<8 | uint16(data[5])
	g.NextHeader = data[6]
	g.HopLimit = data[7]
	copy(g.SrcGID[:], data[8:24])
	copy(g.DstGID[:], data[24:40])
	end := GRHLen + int(g.PayloadLength)
	if end > len(data) {
		df.SetTruncated()
		end = len(data)
	}
	g.BaseLayer = gplayers.BaseLayer{Contents: data[:GRHLen], Payload: data[GRHLen:end]}
	return nil
}

// SerializeTo writes the GRH in front of the buffer's contents. With
// opts.FixLengths it sets PayloadLength to the size of those contents. It
// returns an error wrapping ErrFieldOverflow when a field does not fit its
// bits.
func (g *GRH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if opts.FixLengths {
		n := len(buf.Bytes())
		if n > 0xFFFF {
			return overflow("GRH", "PayloadLength", uint64(n))
		}
		g.PayloadLength = uint16(n)
	}
	switch {
	case g.IPVer > 0x0F:
		return overflow("GRH", "IPVer", uint64(g.IPVer))
	case g.FlowLabel > 0xFFFFF:
		return overflow("GRH", "FlowLabel", uint64(g.FlowLabel))
	}
	d, err := buf.PrependBytes(GRHLen)
	if err != nil {
		return err
	}
	d[0] = g.IPVer<<4 | g.TrafficClass>>4
	d[1] = g.TrafficClass<<4 | byte(g.FlowLabel>>16)
	d[2] = byte(g.FlowLabel >> 8)
	d[3] = byte(g.FlowLabel)
	d[4] = byte(g.PayloadLength >> 8)
	d[5] = byte(g.PayloadLength)
	d[6] = g.NextHeader
	d[7] = g.HopLimit
	copy(d[8:24], g.SrcGID[:])
	copy(d[24:40], g.DstGID[:])
	return nil
}
