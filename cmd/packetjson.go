package cmd

import (
	"strconv"

	"roce-inspect/dissect"
	"roce-inspect/layers"
)

// jsonObj appends JSON object members without reflection: decode writes one
// object per packet, and encoding/json would allocate for each.
type jsonObj struct {
	b     []byte
	first bool
}

func (j *jsonObj) open()  { j.b = append(j.b, '{'); j.first = true }
func (j *jsonObj) close() { j.b = append(j.b, '}'); j.first = false }

func (j *jsonObj) key(k string) {
	if !j.first {
		j.b = append(j.b, ',')
	}
	j.first = false
	j.b = append(j.b, '"')
	j.b = append(j.b, k...)
	j.b = append(j.b, '"', ':')
}

func (j *jsonObj) num(k string, v uint64) { j.key(k); j.b = strconv.AppendUint(j.b, v, 10) }
func (j *jsonObj) int(k string, v int)    { j.key(k); j.b = strconv.AppendInt(j.b, int64(v), 10) }
func (j *jsonObj) bool(k string, v bool)  { j.key(k); j.b = strconv.AppendBool(j.b, v) }

// str appends a string member; the values written here are addresses,
// names and hex digits, but quoting keeps any reason text valid JSON.
func (j *jsonObj) str(k, v string) { j.key(k); j.b = strconv.AppendQuote(j.b, v) }

// hex appends a number as a "0x..." string: 64-bit addresses and keys do
// not survive as JSON numbers in most readers.
func (j *jsonObj) hex(k string, v uint64, digits int) {
	j.key(k)
	j.b = append(j.b, '"')
	j.b = appendHex(j.b, v, digits)
	j.b = append(j.b, '"')
}

func (j *jsonObj) sub(k string) { j.key(k); j.open() }

// ackKindJSON names the AETH syndrome kinds (bits 6-5) in JSON.
var ackKindJSON = [4]string{layers.AckKindACK: "ack", layers.AckKindRNRNAK: "rnr_nak", layers.AckKindReserved: "reserved", layers.AckKindNAK: "nak"}

// appendPacketJSON appends one packet as a JSON object and a newline. The
// format is documented in the README.
func appendPacketJSON(b []byte, p *dissect.Packet) []byte {
	j := jsonObj{b: b}
	j.open()
	j.int("frame", p.Frame)
	j.key("ts")
	j.b = append(j.b, '"')
	j.b = appendRFC3339(j.b, p.Timestamp)
	j.b = append(j.b, '"')
	j.int("len", p.Len)
	j.int("caplen", p.CapLen)
	j.int("version", int(p.Version))
	j.key("src_ip")
	j.b = append(j.b, '"')
	j.b = appendAddr(j.b, p.SrcIP)
	j.b = append(j.b, '"')
	j.key("dst_ip")
	j.b = append(j.b, '"')
	j.b = appendAddr(j.b, p.DstIP)
	j.b = append(j.b, '"')
	if p.Version == 2 {
		j.int("src_port", int(p.SrcPort))
		j.int("dst_port", int(p.DstPort))
		j.str("ecn", ecnNames[p.ECN])
	}
	j.int("dscp", int(p.DSCP))
	j.int("ttl", int(p.TTL))
	if p.VLAN != 0 {
		j.int("vlan", int(p.VLAN))
	}
	if len(p.BTH.Contents) != 0 {
		bth := &p.BTH
		j.int("opcode", int(bth.Opcode))
		j.str("opcode_name", bth.Opcode.String())
		j.num("dest_qp", uint64(bth.DestQP))
		j.num("psn", uint64(bth.PSN))
		j.sub("bth")
		j.int("opcode", int(bth.Opcode))
		j.str("transport", bth.Opcode.Transport().String())
		j.bool("se", bth.SE)
		j.bool("migreq", bth.MigReq)
		j.int("pad_count", int(bth.PadCount))
		j.int("tver", int(bth.TVer))
		j.hex("pkey", uint64(bth.PKey), 4)
		j.bool("fecn", bth.FECN)
		j.bool("becn", bth.BECN)
		j.int("resv6a", int(bth.Resv6a))
		j.num("dest_qp", uint64(bth.DestQP))
		j.bool("ackreq", bth.AckReq)
		j.int("resv7", int(bth.Resv7))
		j.num("psn", uint64(bth.PSN))
		j.close()
		appendExtHeadersJSON(&j, p)
		j.int("payload_len", p.PayloadLen)
	}
	if p.Malformed != "" {
		j.str("malformed", p.Malformed)
	}
	j.str("icrc", icrcNames[p.ICRC])
	if p.ICRC != dissect.ICRCUnverifiable {
		j.hex("icrc_found", wireICRC(p.ICRCFound), 8)
		j.hex("icrc_computed", wireICRC(p.ICRCComputed), 8)
	}
	j.close()
	return append(j.b, '\n')
}

// appendExtHeadersJSON appends one object per extended header present.
func appendExtHeadersJSON(j *jsonObj, p *dissect.Packet) {
	h := p.Headers
	if h&layers.HasRDETH != 0 {
		j.sub("rdeth")
		j.num("ee_context", uint64(p.RDETH.EECnxt))
		j.close()
	}
	if h&layers.HasDETH != 0 {
		j.sub("deth")
		j.hex("qkey", uint64(p.DETH.QKey), 8)
		j.num("src_qp", uint64(p.DETH.SrcQP))
		j.close()
	}
	if h&layers.HasXRCETH != 0 {
		j.sub("xrceth")
		j.num("xrc_srq", uint64(p.XRCETH.XRCSRQ))
		j.close()
	}
	if h&layers.HasFETH != 0 {
		j.sub("feth")
		j.int("selectivity_level", int(p.FETH.SelectivityLevel))
		j.int("placement_type", int(p.FETH.PlacementType))
		j.close()
	}
	if h&layers.HasRETH != 0 {
		j.sub("reth")
		j.hex("va", p.RETH.VA, 16)
		j.hex("rkey", uint64(p.RETH.RKey), 8)
		j.num("dma_length", uint64(p.RETH.DMALength))
		j.close()
	}
	if h&layers.HasAtomicETH != 0 {
		j.sub("atomic_eth")
		j.hex("va", p.AtomicETH.VA, 16)
		j.hex("rkey", uint64(p.AtomicETH.RKey), 8)
		j.hex("swap_add", p.AtomicETH.SwapAdd, 16)
		j.hex("compare", p.AtomicETH.Compare, 16)
		j.close()
	}
	if h&layers.HasAETH != 0 {
		a := &p.AETH
		j.sub("aeth")
		j.hex("syndrome", uint64(a.Syndrome), 2)
		j.num("msn", uint64(a.MSN))
		j.str("kind", ackKindJSON[a.Kind()&3])
		j.str("verdict", a.String())
		j.close()
	}
	if h&layers.HasAtomicAckETH != 0 {
		j.sub("atomic_ack_eth")
		j.hex("orig_remote_data", p.AtomicAckETH.OrigRemoteData, 16)
		j.close()
	}
	if h&layers.HasImmDt != 0 {
		j.sub("immdt")
		j.hex("immediate", uint64(p.ImmDt.Immediate), 8)
		j.close()
	}
	if h&layers.HasIETH != 0 {
		j.sub("ieth")
		j.hex("rkey", uint64(p.IETH.RKey), 8)
		j.close()
	}
	if h&layers.HasCNP != 0 {
		j.sub("cnp")
		j.close()
	}
}
