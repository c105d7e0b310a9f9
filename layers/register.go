// Package layers holds gopacket layers for the InfiniBand transport headers
// carried by RoCE: the Base Transport Header (BTH), its extended headers, the
// Global Route Header (GRH) of RoCEv1 and the invariant CRC (ICRC) trailer.
//
// Every header type is a gopacket.DecodingLayer and a
// gopacket.SerializableLayer. The opcode table (see Opcode) says which
// extended headers follow a BTH; DecodeExtHeaders walks them without
// allocating, and ComputeICRC computes the invariant CRC.
//
// # Registration with gopacket
//
// Importing the package registers, in its init function:
//
//   - the layer types (numbers 4791000 to 4791013, a private range);
//   - UDP destination port 4791 (RoCEv2) as LayerTypeBTH, through
//     layers.RegisterUDPPortLayerType;
//   - Ethertype 0x8915 (RoCEv1) as LayerTypeGRH, through
//     layers.EthernetTypeMetadata.
//
// After that, gopacket.NewPacket(frame, layers.LayerTypeEthernet,
// gopacket.Default) yields Ethernet, IPv4 or IPv6, UDP, BTH, one layer per
// extended header in wire order, Payload (when there is any) and ICRC, the
// last four bytes of the UDP or GRH payload, which are not part of the
// Payload layer. RegisterPort adds further UDP ports.
//
// gopacket's UDP layer falls back to the source port when the destination port
// is not registered, so a datagram whose only port 4791 is its source port is
// also decoded as BTH by gopacket. RoCEv2 is defined by the destination port
// alone: a dissector must check UDP.DstPort itself before trusting the BTH
// layer.
package layers

import (
	"errors"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// UDPPortRoCEv2 is the IANA-assigned UDP destination port of RoCEv2.
const UDPPortRoCEv2 = 4791

// EthernetTypeRoCEv1 is the Ethertype of RoCEv1 frames, which carry a GRH
// right after the Ethernet header.
const EthernetTypeRoCEv1 gplayers.EthernetType = 0x8915

// ErrFieldOverflow is returned (wrapped, naming the field) by SerializeTo when
// a field holds a value wider than its bits on the wire. Truncating silently
// would put a different value on the wire than the caller asked for.
var ErrFieldOverflow = errors.New("field value does not fit its wire width")

// Layer type numbers. They sit in a private range well above gopacket's own
// numbers so that they cannot clash with layers gopacket adds later.
const layerTypeBase = 4791000

// Layer types of the headers in this package.
var (
	LayerTypeBTH          = register(0, "BTH", decodeBTH)
	LayerTypeRETH         = register(1, "RETH", decodeSingle[RETH])
	LayerTypeAETH         = register(2, "AETH", decodeSingle[AETH])
	LayerTypeDETH         = register(3, "DETH", decodeSingle[DETH])
	LayerTypeRDETH        = register(4, "RDETH", decodeSingle[RDETH])
	LayerTypeXRCETH       = register(5, "XRCETH", decodeSingle[XRCETH])
	LayerTypeImmDt        = register(6, "ImmDt", decodeSingle[ImmDt])
	LayerTypeIETH         = register(7, "IETH", decodeSingle[IETH])
	LayerTypeAtomicETH    = register(8, "AtomicETH", decodeSingle[AtomicETH])
	LayerTypeAtomicAckETH = register(9, "AtomicAckETH", decodeSingle[AtomicAckETH])
	LayerTypeFETH         = register(10, "FETH", decodeSingle[FETH])
	LayerTypeCNP          = register(11, "CNP", decodeSingle[CNP])
	LayerTypeGRH          = register(12, "GRH", decodeGRH)
	LayerTypeICRC         = register(13, "ICRC", decodeICRC)
)

func register(offset int, name string, dec func([]byte, gopacket.PacketBuilder) error) gopacket.LayerType {
	return gopacket.RegisterLayerType(layerTypeBase+offset, gopacket.LayerTypeMetadata{
		Name:    name,
		Decoder: gopacket.DecodeFunc(dec),
	})
}

func init() {
	RegisterPort(UDPPortRoCEv2)
	gplayers.EthernetTypeMetadata[EthernetTypeRoCEv1] = gplayers.EnumMetadata{
		DecodeWith: LayerTypeGRH,
		Name:       "RoCEv1",
		LayerType:  LayerTypeGRH,
	}
}

// RegisterPort makes gopacket decode UDP datagrams to (or, through gopacket's
// source-port fallback, from) port as RoCEv2, starting with a BTH. Port 4791
// is registered when the package is imported. gopacket keeps the port table in
// a plain map, so RegisterPort must be called before packets are decoded, not
// while other goroutines decode.
func RegisterPort(port uint16) {
	gplayers.RegisterUDPPortLayerType(gplayers.UDPPort(port), LayerTypeBTH)
}

// packetTruncated reports whether an earlier layer found the packet shorter
// than its headers claim. The PacketBuilder gopacket passes to decoders is its
// packet, which has Metadata; a builder without it counts as not truncated.
func packetTruncated(p gopacket.PacketBuilder) bool {
	if m, ok := p.(interface {
		Metadata() *gopacket.PacketMetadata
	}); ok {
		return m.Metadata().Truncated
	}
	return false
}

// decodeBTH is the gopacket decoder of a RoCE transport packet: BTH, extended
// headers, payload and ICRC. The ICRC is split off first, unless an earlier
// layer flagged the packet as truncated (then the last four captured bytes are
// payload, not the ICRC) or the bytes cannot hold both a BTH and an ICRC (then
// there is no ICRC layer).
func decodeBTH(data []byte, p gopacket.PacketBuilder) error {
	body, icrc := data, []byte(nil)
	if len(data) >= BTHLen+ICRCLen && !packetTruncated(p) {
		body, icrc = data[:len(data)-ICRCLen], data[len(data)-ICRCLen:]
	}
	bth := &BTH{}
	if err := bth.DecodeFromBytes(body, p); err != nil {
		return err
	}
	p.AddLayer(bth)
	return continueExt(p, bth.Opcode, bth.Opcode.ExtHeaders(), bth.Payload, icrc)
}

// continueExt goes on after a BTH or an extended header: with the next
// extended header the opcode calls for, or with the payload and the ICRC when
// none is left. The payload and ICRC layers are added here rather than through
// NextDecoder because gopacket does not call the next decoder when a layer's
// payload is empty, and the ICRC must still follow, e.g. after an AETH.
func continueExt(p gopacket.PacketBuilder, op Opcode, remaining ExtHeaders, payload, icrc []byte) error {
	if remaining == 0 {
		if len(payload) > 0 {
			pl := gopacket.Payload(payload)
			p.AddLayer(&pl)
			p.SetApplicationLayer(&pl)
		}
		if icrc != nil {
			ic := &ICRC{}
			if err := ic.DecodeFromBytes(icrc, p); err != nil {
				return err
			}
			p.AddLayer(ic)
		}
		return nil
	}
	next := remaining.first()
	if len(payload) == 0 {
		p.SetTruncated()
		return &ExtHeaderError{Header: next, Have: 0, Need: next.Len()}
	}
	// The closure carries the opcode's remaining headers and the ICRC split
	// off before the BTH to the next step of the chain.
	return p.NextDecoder(gopacket.DecodeFunc(func(data []byte, p gopacket.PacketBuilder) error {
		return decodeExtStep(data, p, op, remaining, icrc)
	}))
}

// decodeExtStep decodes the first of the remaining extended headers of op and
// chains to the rest.
func decodeExtStep(data []byte, p gopacket.PacketBuilder, op Opcode, remaining ExtHeaders, icrc []byte) error {
	h := remaining.first()
	l := newExtLayer(h)
	if err := l.DecodeFromBytes(data, p); err != nil {
		return &ExtHeaderError{Header: h, Have: len(data), Need: h.Len()}
	}
	rest := remaining &^ h
	l.setNext(rest.first().layerType())
	p.AddLayer(l)
	return continueExt(p, op, rest, l.LayerPayload(), icrc)
}

// extLayer is what the extended header types share for chained decoding.
type extLayer interface {
	gopacket.Layer
	gopacket.DecodingLayer
	setNext(gopacket.LayerType)
}

// newExtLayer allocates the layer for one extended header bit.
func newExtLayer(h ExtHeaders) extLayer {
	switch h {
	case HasRDETH:
		return &RDETH{}
	case HasDETH:
		return &DETH{}
	case HasXRCETH:
		return &XRCETH{}
	case HasRETH:
		return &RETH{}
	case HasFETH:
		return &FETH{}
	case HasAtomicETH:
		return &AtomicETH{}
	case HasAETH:
		return &AETH{}
	case HasAtomicAckETH:
		return &AtomicAckETH{}
	case HasImmDt:
		return &ImmDt{}
	case HasIETH:
		return &IETH{}
	default:
		return &CNP{}
	}
}

// decodeSingle decodes one extended header on its own, for callers that start
// gopacket at that layer type; what follows it is payload.
func decodeSingle[T any, PT interface {
	*T
	gopacket.Layer
	gopacket.DecodingLayer
}](data []byte, p gopacket.PacketBuilder) error {
	l := PT(new(T))
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	return p.NextDecoder(gopacket.LayerTypePayload)
}

// decodeGRH decodes a RoCEv1 GRH and hands its payload on, to the BTH decoder
// when the next header is the IBA transport.
func decodeGRH(data []byte, p gopacket.PacketBuilder) error {
	g := &GRH{}
	if err := g.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(g)
	p.SetNetworkLayer(g)
	return p.NextDecoder(g.NextLayerType())
}

// decodeICRC decodes a lone ICRC trailer.
func decodeICRC(data []byte, p gopacket.PacketBuilder) error {
	ic := &ICRC{}
	if err := ic.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(ic)
	return nil
}
