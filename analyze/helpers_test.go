package analyze

import (
	"net/netip"
	"testing"

	"roce-inspect/dissect"
	"roce-inspect/layers"
)

// Opcodes used by the tests, numbered as in IBTA 1.5 table 38.
const (
	opSendFirst     layers.Opcode = 0x00
	opSendMiddle    layers.Opcode = 0x01
	opSendLast      layers.Opcode = 0x02
	opSendOnly      layers.Opcode = 0x04
	opWriteFirst    layers.Opcode = 0x06
	opWriteMiddle   layers.Opcode = 0x07
	opWriteLast     layers.Opcode = 0x08
	opWriteOnly     layers.Opcode = 0x0A
	opReadRequest   layers.Opcode = 0x0C
	opReadRespFirst layers.Opcode = 0x0D
	opReadRespMid   layers.Opcode = 0x0E
	opReadRespLast  layers.Opcode = 0x0F
	opReadRespOnly  layers.Opcode = 0x10
	opAck           layers.Opcode = 0x11
	opAtomicAck     layers.Opcode = 0x12
	opCmpSwap       layers.Opcode = 0x13
	opFlush         layers.Opcode = 0x1C
	opAtomicWrite   layers.Opcode = 0x1D
	opUCSendOnly    layers.Opcode = 0x24
	opUDSendOnly    layers.Opcode = 0x64
	opCNP           layers.Opcode = 0x81
	opXRCWriteOnly  layers.Opcode = 0xAA
)

// AETH syndromes: bits 6-5 are 00 ACK, 01 RNR NAK, 11 NAK; the low five bits
// are the credit count, the RNR timer or the NAK code.
const (
	synACK       uint8 = 0x1F // ACK, credit field 31 (invalid credits)
	synRNR       uint8 = 0x20 | 0x0E
	synNAKSeq    uint8 = 0x60 // NAK code 0: PSN sequence error
	synNAKAccess uint8 = 0x62 // NAK code 2: remote access error
)

var (
	hostA = netip.MustParseAddr("10.0.0.1")
	hostB = netip.MustParseAddr("10.0.0.2")
	hostC = netip.MustParseAddr("10.0.0.3")
)

// pkt builds a well-formed RoCEv2 packet of 100 bytes on the wire from UDP
// source port 49152, ECT(0), with a good ICRC; mods adjust it.
func pkt(ts int64, src, dst netip.Addr, qp uint32, op layers.Opcode, psn uint32, mods ...func(*dissect.Packet)) *dissect.Packet {
	p := &dissect.Packet{
		Timestamp: ts,
		Len:       100,
		CapLen:    100,
		Version:   2,
		SrcIP:     src,
		DstIP:     dst,
		SrcPort:   49152,
		DstPort:   4791,
		ECN:       dissect.ECNECT0,
		ICRC:      dissect.ICRCGood,
	}
	p.BTH.Opcode = op
	p.BTH.DestQP = qp
	p.BTH.PSN = psn
	for _, m := range mods {
		m(p)
	}
	return p
}

// withLen sets the wire length.
func withLen(n int) func(*dissect.Packet) { return func(p *dissect.Packet) { p.Len, p.CapLen = n, n } }

// withPayload sets the transport payload length.
func withPayload(n int) func(*dissect.Packet) { return func(p *dissect.Packet) { p.PayloadLen = n } }

// withAETH adds an AETH with the given syndrome.
func withAETH(syn uint8) func(*dissect.Packet) {
	return func(p *dissect.Packet) {
		p.Headers |= layers.HasAETH
		p.AETH.Syndrome = syn
	}
}

// withRETH adds a RETH with the given DMA length.
func withRETH(n uint32) func(*dissect.Packet) {
	return func(p *dissect.Packet) {
		p.Headers |= layers.HasRETH
		p.RETH.DMALength = n
	}
}

// withECN sets the ECN codepoint.
func withECN(e dissect.ECN) func(*dissect.Packet) { return func(p *dissect.Packet) { p.ECN = e } }

// withSrcPort sets the UDP source port.
func withSrcPort(port uint16) func(*dissect.Packet) {
	return func(p *dissect.Packet) { p.SrcPort = port }
}

// withICRC sets the ICRC verdict.
func withICRC(v dissect.ICRCVerdict) func(*dissect.Packet) {
	return func(p *dissect.Packet) { p.ICRC = v }
}

// run feeds packets to a new analyzer and returns its report.
func run(o Options, pkts []*dissect.Packet) *Report {
	a := New(o)
	for _, p := range pkts {
		a.Add(p)
	}
	return a.Report()
}

// flowOf returns the flow src > dst QP qp of r, failing the test when absent.
func flowOf(t *testing.T, r *Report, src, dst netip.Addr, qp uint32) *FlowReport {
	t.Helper()
	f, ok := r.Flow(flowKeyString(src, dst, qp, 2))
	if !ok {
		t.Fatalf("no flow %s > %s QP %d in the report", src, dst, qp)
	}
	return f
}

// seq returns n request packets of op from src to dst QP qp with PSNs
// first, first+1, ..., one microsecond apart from ts.
func seq(ts int64, src, dst netip.Addr, qp uint32, op layers.Opcode, first uint32, n int, mods ...func(*dissect.Packet)) []*dissect.Packet {
	out := make([]*dissect.Packet, n)
	for i := range out {
		out[i] = pkt(ts+int64(i)*1000, src, dst, qp, op, (first+uint32(i))&psnMask, mods...)
	}
	return out
}

// psnOf returns the PSN report of a flow, failing when absent.
func psnOf(t *testing.T, f *FlowReport) *PSNReport {
	t.Helper()
	if f.PSN == nil {
		t.Fatalf("%s: no PSN analysis", f.Key())
	}
	return f.PSN
}

// psnWant is the expected PSN analysis of one flow.
type psnWant struct {
	gaps, missing, retrans, unrecovered, dropped uint64
	first, last                                  uint32
}

// checkPSN compares a PSN report with the expectation.
func checkPSN(t *testing.T, f *FlowReport, w psnWant) {
	t.Helper()
	s := psnOf(t, f)
	got := psnWant{s.Gaps, s.Missing, s.Retransmitted, s.Unrecovered, s.RangesDropped, 0, 0}
	if s.First != nil {
		got.first = *s.First
	}
	if s.Last != nil {
		got.last = *s.Last
	}
	if got != w {
		t.Errorf("%s: PSN analysis %+v, want %+v", f.Key(), got, w)
	}
}
