package cmd

import (
	"roce-inspect/dissect"
	"roce-inspect/layers"
)

// verbose appends "name: value" lines under a header line, tshark -V style.
type verbose struct{ b []byte }

func (v *verbose) header(s string) { v.b = append(v.b, s...); v.b = append(v.b, '\n') }

func (v *verbose) field(name string) {
	v.b = append(v.b, "    "...)
	v.b = append(v.b, name...)
	v.b = append(v.b, ": "...)
}

func (v *verbose) num(name string, x uint64) {
	v.field(name)
	v.b = appendUint(v.b, x)
	v.b = append(v.b, '\n')
}

func (v *verbose) hex(name string, x uint64, digits int) {
	v.field(name)
	v.b = appendHex(v.b, x, digits)
	v.b = append(v.b, '\n')
}

func (v *verbose) flag(name string, on bool) {
	v.field(name)
	if on {
		v.b = append(v.b, "1\n"...)
	} else {
		v.b = append(v.b, "0\n"...)
	}
}

func (v *verbose) str(name, s string) {
	v.field(name)
	v.b = append(v.b, s...)
	v.b = append(v.b, '\n')
}

// appendPacketVerbose appends every field of every header of a packet.
func appendPacketVerbose(b []byte, p *dissect.Packet, rel int64) []byte {
	v := verbose{b: b}
	v.b = append(v.b, "Frame "...)
	v.b = appendUint(v.b, uint64(p.Frame))
	v.b = append(v.b, ": "...)
	v.b = appendUint(v.b, uint64(p.Len))
	v.b = append(v.b, " bytes on wire, "...)
	v.b = appendUint(v.b, uint64(p.CapLen))
	v.b = append(v.b, " captured, "...)
	v.b = appendRFC3339(v.b, p.Timestamp)
	v.b = append(v.b, " (+"...)
	v.b = appendSeconds(v.b, rel)
	v.b = append(v.b, " s)\n"...)
	if p.Version == 2 {
		v.header("RoCEv2 network (IP/UDP)")
		v.field("Source")
		v.b = appendAddr(v.b, p.SrcIP)
		v.b = append(v.b, '\n')
		v.field("Destination")
		v.b = appendAddr(v.b, p.DstIP)
		v.b = append(v.b, '\n')
		v.num("DSCP", uint64(p.DSCP))
		v.str("ECN", ecnNames[p.ECN])
		v.num("TTL/Hop limit", uint64(p.TTL))
		v.num("UDP source port", uint64(p.SrcPort))
		v.num("UDP destination port", uint64(p.DstPort))
	} else {
		v.header("RoCEv1 Global Route Header")
		v.field("Source GID")
		v.b = appendAddr(v.b, p.SrcIP)
		v.b = append(v.b, '\n')
		v.field("Destination GID")
		v.b = appendAddr(v.b, p.DstIP)
		v.b = append(v.b, '\n')
		v.num("Traffic class DSCP", uint64(p.DSCP))
		v.num("Hop limit", uint64(p.TTL))
	}
	if p.VLAN != 0 {
		v.num("VLAN", uint64(p.VLAN))
	}
	if len(p.BTH.Contents) != 0 {
		bth := &p.BTH
		v.header("Base Transport Header")
		v.field("Opcode")
		v.b = appendHex(v.b, uint64(bth.Opcode), 2)
		v.b = append(v.b, ' ')
		v.b = append(v.b, bth.Opcode.String()...)
		v.b = append(v.b, '\n')
		v.flag("Solicited Event", bth.SE)
		v.flag("MigReq", bth.MigReq)
		v.num("Pad Count", uint64(bth.PadCount))
		v.num("Header Version", uint64(bth.TVer))
		v.hex("Partition Key", uint64(bth.PKey), 4)
		v.flag("FECN", bth.FECN)
		v.flag("BECN", bth.BECN)
		v.num("Reserved (6 bits)", uint64(bth.Resv6a))
		v.hex("Destination QP", uint64(bth.DestQP), 6)
		v.flag("Acknowledge Request", bth.AckReq)
		v.num("Reserved (7 bits)", uint64(bth.Resv7))
		v.num("PSN", uint64(bth.PSN))
		appendExtHeadersVerbose(&v, p)
		v.header("Payload")
		v.num("Length on the wire", uint64(p.PayloadLen))
		v.num("Captured", uint64(len(p.Payload)))
	}
	if p.Malformed != "" {
		v.header("Malformed")
		v.str("Reason", p.Malformed)
	}
	v.header("Invariant CRC")
	v.str("Verdict", icrcNames[p.ICRC])
	if p.ICRC != dissect.ICRCUnverifiable {
		v.hex("Found", wireICRC(p.ICRCFound), 8)
		v.hex("Computed", wireICRC(p.ICRCComputed), 8)
	}
	v.b = append(v.b, '\n')
	return v.b
}

// appendExtHeadersVerbose appends each extended header present.
func appendExtHeadersVerbose(v *verbose, p *dissect.Packet) {
	h := p.Headers
	if h&layers.HasRDETH != 0 {
		v.header("Reliable Datagram ETH")
		v.hex("EE Context", uint64(p.RDETH.EECnxt), 6)
	}
	if h&layers.HasDETH != 0 {
		v.header("Datagram ETH")
		v.hex("Queue Key", uint64(p.DETH.QKey), 8)
		v.hex("Source QP", uint64(p.DETH.SrcQP), 6)
	}
	if h&layers.HasXRCETH != 0 {
		v.header("XRC ETH")
		v.hex("XRC SRQ", uint64(p.XRCETH.XRCSRQ), 6)
	}
	if h&layers.HasFETH != 0 {
		v.header("FLUSH ETH")
		v.num("Selectivity Level", uint64(p.FETH.SelectivityLevel))
		v.num("Placement Type", uint64(p.FETH.PlacementType))
	}
	if h&layers.HasRETH != 0 {
		v.header("RDMA ETH")
		v.hex("Virtual Address", p.RETH.VA, 16)
		v.hex("Remote Key", uint64(p.RETH.RKey), 8)
		v.num("DMA Length", uint64(p.RETH.DMALength))
	}
	if h&layers.HasAtomicETH != 0 {
		v.header("Atomic ETH")
		v.hex("Virtual Address", p.AtomicETH.VA, 16)
		v.hex("Remote Key", uint64(p.AtomicETH.RKey), 8)
		v.hex("Swap (or Add) Data", p.AtomicETH.SwapAdd, 16)
		v.hex("Compare Data", p.AtomicETH.Compare, 16)
	}
	if h&layers.HasAETH != 0 {
		v.header("ACK ETH")
		v.hex("Syndrome", uint64(p.AETH.Syndrome), 2)
		v.str("Meaning", p.AETH.String())
		v.num("Message Sequence Number", uint64(p.AETH.MSN))
	}
	if h&layers.HasAtomicAckETH != 0 {
		v.header("Atomic ACK ETH")
		v.hex("Original Remote Data", p.AtomicAckETH.OrigRemoteData, 16)
	}
	if h&layers.HasImmDt != 0 {
		v.header("Immediate Data")
		v.hex("Immediate", uint64(p.ImmDt.Immediate), 8)
	}
	if h&layers.HasIETH != 0 {
		v.header("Invalidate ETH")
		v.hex("Remote Key", uint64(p.IETH.RKey), 8)
	}
	if h&layers.HasCNP != 0 {
		v.header("Congestion Notification")
		v.str("Reserved", "16 bytes")
	}
}
