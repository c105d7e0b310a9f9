package analyze

import (
	"bytes"
	"encoding/json"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"roce-inspect/dissect"
	"roce-inspect/layers"
)

// cleanRC is a small RC exchange: A writes 3 packets (WRITE FIRST/MIDDLE/
// LAST, PSNs 100-102) and sends one SEND ONLY (103) to QP 0x11 at B; B
// acknowledges 102 and 103 to QP 0x22 at A (coalesced).
func cleanRC() []*dissect.Packet {
	return []*dissect.Packet{
		pkt(1_000, hostA, hostB, 0x11, opWriteFirst, 100, withLen(1100), withRETH(2100), withPayload(1024)),
		pkt(2_000, hostA, hostB, 0x11, opWriteMiddle, 101, withLen(1084), withPayload(1024)),
		pkt(3_000, hostA, hostB, 0x11, opWriteLast, 102, withLen(112), withPayload(52)),
		pkt(4_000, hostB, hostA, 0x22, opAck, 102, withLen(62), withAETH(synACK)),
		pkt(5_000, hostA, hostB, 0x11, opSendOnly, 103, withLen(122), withPayload(64)),
		pkt(6_000, hostB, hostA, 0x22, opAck, 103, withLen(62), withAETH(synACK)),
	}
}

func TestFlowCounters(t *testing.T) {
	a := New(Options{})
	for _, p := range cleanRC() {
		a.Add(p)
	}
	a.NotRoCE()
	r := a.Report()

	t.Run("summary", func(t *testing.T) {
		// 6 RoCEv2 packets plus one frame that is not RoCE; bytes
		// 1100+1084+112+62+122+62 = 2542 over 5 µs (1 µs to 6 µs):
		// 2542*8/5000 ns = 4.0672 Gbit/s.
		want := PacketCounts{Total: 7, RoCE: 6, RoCEv2: 6, NotRoCE: 1}
		if r.Packets != want {
			t.Errorf("packets %+v, want %+v", r.Packets, want)
		}
		if r.Bytes != 2542 {
			t.Errorf("bytes %d, want 2542", r.Bytes)
		}
		if r.SpanSeconds != 5e-6 {
			t.Errorf("span %g, want 5e-6", r.SpanSeconds)
		}
		if math.Abs(r.Gbps-4.0672) > 1e-9 {
			t.Errorf("gbps %g, want 4.0672", r.Gbps)
		}
		if r.ICRC != (ICRCCounts{Good: 6}) || r.ECN != (ECNCounts{ECT0: 6}) {
			t.Errorf("icrc %+v ecn %+v", r.ICRC, r.ECN)
		}
		if r.FirstTS != "1970-01-01T00:00:00.000001000Z" || r.LastTS != "1970-01-01T00:00:00.000006000Z" {
			t.Errorf("timestamps %s %s", r.FirstTS, r.LastTS)
		}
		if r.FlowCount != 2 || len(r.Flows) != 2 {
			t.Errorf("flow count %d (%d listed), want 2", r.FlowCount, len(r.Flows))
		}
		if !r.Clean() || len(r.Warnings) != 0 {
			t.Errorf("problems %v warnings %v", r.Problems, r.Warnings)
		}
	})
	t.Run("requests", func(t *testing.T) {
		f := flowOf(t, r, hostA, hostB, 0x11)
		// Messages: WRITE LAST ends the write, SEND ONLY is one: 2.
		// Bytes 1100+1084+112+122 = 2418 over 4 µs (1 to 5):
		// 2418*8/4000 = 4.836 Gbit/s.
		if f.Packets != 4 || f.Bytes != 2418 || f.PayloadBytes != 2164 || f.Messages != 2 {
			t.Errorf("packets %d bytes %d payload %d messages %d, want 4 2418 2164 2",
				f.Packets, f.Bytes, f.PayloadBytes, f.Messages)
		}
		if f.Transport != "RC" || f.Version != 2 {
			t.Errorf("transport %s version %d", f.Transport, f.Version)
		}
		if math.Abs(f.Gbps-4.836) > 1e-9 || f.DurationSeconds != 4e-6 {
			t.Errorf("gbps %g duration %g", f.Gbps, f.DurationSeconds)
		}
		wantOps := map[string]uint64{
			"RC_RDMA_WRITE_FIRST": 1, "RC_RDMA_WRITE_MIDDLE": 1,
			"RC_RDMA_WRITE_LAST": 1, "RC_SEND_ONLY": 1,
		}
		if !reflect.DeepEqual(f.Opcodes, wantOps) {
			t.Errorf("opcodes %v, want %v", f.Opcodes, wantOps)
		}
		if !slices.Equal(f.SrcPorts, []uint16{49152}) || f.SrcPortsMore != 0 {
			t.Errorf("ports %v +%d", f.SrcPorts, f.SrcPortsMore)
		}
		checkPSN(t, f, psnWant{first: 100, last: 103})
	})
	t.Run("responses", func(t *testing.T) {
		f := flowOf(t, r, hostB, hostA, 0x22)
		if f.Packets != 2 || f.Messages != 0 || f.Bytes != 124 {
			t.Errorf("packets %d messages %d bytes %d, want 2 0 124", f.Packets, f.Messages, f.Bytes)
		}
		if f.NAKs != (NAKCounts{}) {
			t.Errorf("naks %+v", f.NAKs)
		}
	})
	t.Run("order", func(t *testing.T) {
		// By bytes: the request flow (2418) before the ACK flow (124).
		if r.Flows[0].DestQP != 0x11 || r.Flows[1].DestQP != 0x22 {
			t.Errorf("order %s, %s", r.Flows[0].Key(), r.Flows[1].Key())
		}
	})
}

func TestMessages(t *testing.T) {
	tests := []struct {
		name string
		pkts []*dissect.Packet
		want uint64
	}{
		{"send first/middle/last is one", cat(
			one(pkt(0, hostA, hostB, 1, opSendFirst, 1)),
			one(pkt(1, hostA, hostB, 1, opSendMiddle, 2)),
			one(pkt(2, hostA, hostB, 1, opSendLast, 3))), 1},
		{"READ request, atomic, FLUSH, ATOMIC WRITE are one each", cat(
			one(pkt(0, hostA, hostB, 1, opReadRequest, 1, withRETH(8))),
			one(pkt(1, hostA, hostB, 1, opCmpSwap, 2)),
			one(pkt(2, hostA, hostB, 1, opFlush, 3)),
			one(pkt(3, hostA, hostB, 1, opAtomicWrite, 4))), 4},
		{"ACKs, atomic ACKs and CNPs are none", cat(
			one(pkt(0, hostA, hostB, 1, opAck, 1, withAETH(synACK))),
			one(pkt(1, hostA, hostB, 1, opAtomicAck, 2, withAETH(synACK))),
			one(pkt(2, hostA, hostB, 1, opCNP, 0))), 0},
		{"READ response first/middle/last and only", cat(
			one(pkt(0, hostA, hostB, 1, opReadRespFirst, 1)),
			one(pkt(1, hostA, hostB, 1, opReadRespMid, 2)),
			one(pkt(2, hostA, hostB, 1, opReadRespLast, 3)),
			one(pkt(3, hostA, hostB, 1, opReadRespOnly, 4))), 2},
		{"UD SEND ONLY", seq(0, hostA, hostB, 1, opUDSendOnly, 0, 3), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := flowOf(t, run(Options{}, tc.pkts), hostA, hostB, 1)
			if f.Messages != tc.want {
				t.Errorf("messages %d, want %d", f.Messages, tc.want)
			}
		})
	}
}

func TestNAKs(t *testing.T) {
	tests := []struct {
		name string
		syn  []uint8
		want NAKCounts
	}{
		{"ACKs only", []uint8{0x00, synACK, 0x05}, NAKCounts{}},
		{"sequence error", []uint8{synNAKSeq}, NAKCounts{SeqErr: 1}},
		{"RNR with any timer", []uint8{0x20, synRNR, 0x3F}, NAKCounts{RNR: 3}},
		// Codes 1-4 (invalid request, remote access, remote operational,
		// invalid RD request) and a reserved code are "other".
		{"other codes", []uint8{0x61, synNAKAccess, 0x63, 0x64, 0x7F}, NAKCounts{Other: 5}},
		// Syndrome 10x (reserved) is neither.
		{"reserved type", []uint8{0x40, 0x5F}, NAKCounts{}},
		// The reserved top bit does not change the type.
		{"top bit", []uint8{0x80 | synNAKSeq}, NAKCounts{SeqErr: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pkts []*dissect.Packet
			for i, s := range tc.syn {
				pkts = append(pkts, pkt(int64(i), hostB, hostA, 0x22, opAck, 7, withAETH(s)))
			}
			r := run(Options{}, pkts)
			f := flowOf(t, r, hostB, hostA, 0x22)
			if f.NAKs != tc.want {
				t.Errorf("naks %+v, want %+v", f.NAKs, tc.want)
			}
			if r.Clean() != (tc.want == NAKCounts{}) {
				t.Errorf("clean %v with naks %+v; problems %v", r.Clean(), tc.want, r.Problems)
			}
		})
	}
	t.Run("AETH of a READ response is no NAK", func(t *testing.T) {
		r := run(Options{}, one(pkt(0, hostB, hostA, 0x22, opReadRespOnly, 7, withAETH(synNAKSeq))))
		if f := flowOf(t, r, hostB, hostA, 0x22); f.NAKs != (NAKCounts{}) {
			t.Errorf("naks %+v", f.NAKs)
		}
	})
	t.Run("ACK without AETH", func(t *testing.T) {
		p := pkt(0, hostB, hostA, 0x22, opAck, 7)
		p.AETH.Syndrome = synNAKSeq // not flagged in Headers: not decoded
		r := run(Options{}, one(p))
		if f := flowOf(t, r, hostB, hostA, 0x22); f.NAKs != (NAKCounts{}) {
			t.Errorf("naks %+v", f.NAKs)
		}
	})
}

func TestUD(t *testing.T) {
	// UD SEND ONLY to QP 1 with PSNs all over the place: no PSN analysis.
	pkts := cat(
		one(pkt(0, hostA, hostB, 1, opUDSendOnly, 5)),
		one(pkt(1000, hostA, hostB, 1, opUDSendOnly, 900)),
		one(pkt(2000, hostA, hostB, 1, opUDSendOnly, 3)),
	)
	r := run(Options{}, pkts)
	f := flowOf(t, r, hostA, hostB, 1)
	if f.PSN != nil {
		t.Errorf("UD flow has PSN analysis %+v", *f.PSN)
	}
	if f.Transport != "UD" || f.Messages != 3 {
		t.Errorf("transport %s messages %d", f.Transport, f.Messages)
	}
	if !r.Clean() {
		t.Errorf("problems %v", r.Problems)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"psn":null`)) {
		t.Errorf("psn not null in %s", b)
	}
}

func TestMalformedAndVerdicts(t *testing.T) {
	bad := pkt(0, hostA, hostB, 0x11, opSendOnly, 1, withICRC(dissect.ICRCBad))
	cut := pkt(1000, hostA, hostB, 0x11, opSendOnly, 2, withICRC(dissect.ICRCUnverifiable))
	short := pkt(2000, hostA, hostB, 0x11, opSendOnly, 900)
	short.Malformed = "BTH shorter than 12 bytes"
	short2 := pkt(3000, hostA, hostB, 0x11, opSendOnly, 901)
	short2.Malformed = "BTH shorter than 12 bytes"
	odd := pkt(4000, hostA, hostB, 0x11, opSendOnly, 902)
	odd.Malformed = "pad count larger than the payload"
	v1 := pkt(5000, hostA, hostB, 0x11, opSendOnly, 3, withECN(dissect.ECNCE))
	v1.Version = 1
	r := run(Options{}, []*dissect.Packet{bad, cut, short, short2, odd, v1})

	// Six RoCE packets, five RoCEv2 (three malformed) and one RoCEv1.
	want := PacketCounts{Total: 6, RoCE: 6, RoCEv1: 1, RoCEv2: 5, Malformed: 3}
	if r.Packets != want {
		t.Errorf("packets %+v, want %+v", r.Packets, want)
	}
	wantReasons := map[string]uint64{"BTH shorter than 12 bytes": 2, "pad count larger than the payload": 1}
	if !reflect.DeepEqual(r.MalformedReasons, wantReasons) {
		t.Errorf("reasons %v", r.MalformedReasons)
	}
	// Verdicts of every packet, malformed ones included: bad,
	// unverifiable, and four good (the three malformed ones are built
	// with a good ICRC, and the v1 one).
	if r.ICRC != (ICRCCounts{Good: 4, Bad: 1, Unverifiable: 1}) {
		t.Errorf("icrc %+v", r.ICRC)
	}
	// ECN counts RoCEv2 only: the v1 packet's CE is not counted.
	if r.ECN != (ECNCounts{ECT0: 2}) {
		t.Errorf("ecn %+v", r.ECN)
	}
	// Malformed packets stay out of the flows: PSNs 900-902 would be a
	// gap after 2.
	f := flowOf(t, r, hostA, hostB, 0x11)
	if f.Packets != 2 {
		t.Errorf("flow packets %d, want 2", f.Packets)
	}
	checkPSN(t, f, psnWant{first: 1, last: 2})
	if r.Clean() {
		t.Error("bad ICRC and malformed packets reported clean")
	}
	if len(r.Warnings) == 0 {
		t.Error("no warning about the unverifiable ICRC")
	}
	if _, ok := r.Flow(flowKeyString(hostA, hostB, 0x11, 1)); !ok {
		t.Error("RoCEv1 packet not in a flow of its own")
	}
}

func TestMalformedReasonsBounded(t *testing.T) {
	a := New(Options{})
	for i := 0; i < maxMalformedReasons+10; i++ {
		p := pkt(int64(i), hostA, hostB, 1, opSendOnly, 1)
		p.Malformed = "reason " + string(rune('A'+i))
		a.Add(p)
	}
	r := a.Report()
	// 64 distinct reasons kept, the 10 beyond them counted together.
	if len(r.MalformedReasons) != maxMalformedReasons+1 || r.MalformedReasons[otherMalformed] != 10 {
		t.Errorf("%d reasons, %d other", len(r.MalformedReasons), r.MalformedReasons[otherMalformed])
	}
}

func TestFilters(t *testing.T) {
	pkts := []*dissect.Packet{
		pkt(0, hostA, hostB, 0x11, opSendOnly, 1),
		pkt(1, hostB, hostA, 0x22, opAck, 1, withAETH(synACK)),
		pkt(2, hostC, hostB, 0x33, opSendOnly, 1),
		pkt(3, hostB, hostC, 0x44, opAck, 1, withAETH(synACK)),
	}
	tests := []struct {
		name string
		opt  Options
		// Dest QPs kept, in report order: every flow has 100 bytes, so
		// by source then destination address: A>B 0x11, B>A 0x22,
		// B>C 0x44, C>B 0x33.
		flows    []uint32
		filtered uint64
	}{
		{"none", Options{}, []uint32{0x11, 0x22, 0x44, 0x33}, 0},
		{"QPs", Options{QPs: []uint32{0x22, 0x33}}, []uint32{0x22, 0x33}, 2},
		{"hosts", Options{Hosts: []netip.Addr{hostC}}, []uint32{0x44, 0x33}, 2},
		// A host given as an IPv4-mapped IPv6 address matches IPv4.
		{"mapped host", Options{Hosts: []netip.Addr{netip.MustParseAddr("::ffff:10.0.0.3")}}, []uint32{0x44, 0x33}, 2},
		{"both", Options{QPs: []uint32{0x11, 0x44}, Hosts: []netip.Addr{hostA}}, []uint32{0x11}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(tc.opt, pkts)
			var got []uint32
			for _, f := range r.Flows {
				got = append(got, f.DestQP)
			}
			if !slices.Equal(got, tc.flows) {
				t.Errorf("flows %v, want %v", got, tc.flows)
			}
			if r.Packets.Filtered != tc.filtered || r.Packets.Total != 4 || r.Packets.RoCE != 4-tc.filtered {
				t.Errorf("packets %+v", r.Packets)
			}
		})
	}
}

func TestPortsBounded(t *testing.T) {
	// One flow using 20 source ports 1000-1019: 16 listed, 4 more.
	var pkts []*dissect.Packet
	for i := 0; i < 20; i++ {
		pkts = append(pkts, pkt(int64(i), hostA, hostB, 1, opSendOnly, uint32(i), withSrcPort(uint16(1019-i))))
	}
	f := flowOf(t, run(Options{}, pkts), hostA, hostB, 1)
	want := make([]uint16, 16)
	for i := range want {
		want[i] = uint16(1000 + i)
	}
	if !slices.Equal(f.SrcPorts, want) || f.SrcPortsMore != 4 {
		t.Errorf("ports %v +%d, want %v +4", f.SrcPorts, f.SrcPortsMore, want)
	}
}

func TestCongestion(t *testing.T) {
	const (
		q1, p1 = 0x100, 0x200 // connection 1: A's QP p1 <-> B's QP q1
		q2, p2 = 0x101, 0x201 // connection 2
	)
	ce := withECN(dissect.ECNCE)
	// Connection 1: A writes PSNs 1000-1009 at 1 µs steps from t=0;
	// 1003 and 1004 (t = 3 µs, 4 µs) are CE-marked. B acknowledges 1005
	// and 1009 to p1, and sends CNPs to p1 at 5.5 µs and 8 µs.
	// Connection 2: A writes PSNs 500000-500009, B acknowledges 500009
	// to p2; no CE, no CNP. Two connections between the same hosts mean
	// the pairing must come from the PSNs.
	conn1 := seq(0, hostA, hostB, q1, opWriteOnly, 1000, 10)
	conn1[3] = pkt(3000, hostA, hostB, q1, opWriteOnly, 1003, ce)
	conn1[4] = pkt(4000, hostA, hostB, q1, opWriteOnly, 1004, ce)
	pairs := cat(
		conn1,
		seq(0, hostA, hostB, q2, opWriteOnly, 500000, 10),
		one(pkt(5200, hostB, hostA, p1, opAck, 1005, withAETH(synACK))),
		one(pkt(5500, hostB, hostA, p1, opCNP, 0)),
		one(pkt(8000, hostB, hostA, p1, opCNP, 0)),
		one(pkt(9500, hostB, hostA, p1, opAck, 1009, withAETH(synACK))),
		one(pkt(9600, hostB, hostA, p2, opAck, 500009, withAETH(synACK))),
	)

	t.Run("matched by PSN", func(t *testing.T) {
		r := run(Options{}, pairs)
		if len(r.Congestion) != 1 {
			t.Fatalf("congestion entries %d, want 1", len(r.Congestion))
		}
		c := r.Congestion[0]
		// First CE at 3 µs, first CNP to p1 at 5.5 µs: 2.5 µs.
		if c.DestQP != q1 || c.CE != 2 || !c.CNPMatched || c.SenderQP == nil || *c.SenderQP != p1 ||
			c.CNPsBack != 2 || c.CNPsToSenderHost != 2 || c.delayUS() != 2.5 {
			t.Errorf("congestion %+v (sender %v, delay %v)", c, c.SenderQP, c.delayUS())
		}
		if c.FirstCETS != "1970-01-01T00:00:00.000003000Z" {
			t.Errorf("first CE %s", c.FirstCETS)
		}
		if f := flowOf(t, r, hostB, hostA, p1); f.CNP != 2 {
			t.Errorf("CNPs on p1: %d, want 2", f.CNP)
		}
		if f := flowOf(t, r, hostA, hostB, q1); f.ECNCE != 2 || f.ECN.CE != 2 || f.ECN.ECT0 != 8 {
			t.Errorf("ECN of q1: %+v ce %d", f.ECN, f.ECNCE)
		}
		if r.CNP != 2 || r.ECN.CE != 2 {
			t.Errorf("summary cnp %d ce %d", r.CNP, r.ECN.CE)
		}
		if !r.Clean() {
			t.Errorf("congestion is not a problem: %v", r.Problems)
		}
	})
	t.Run("no ACKs: unmatched", func(t *testing.T) {
		// Without the ACKs nothing ties p1 to q1 and there are two
		// flows from A to B: no guess.
		var noACK []*dissect.Packet
		for _, p := range pairs {
			if p.BTH.Opcode != opAck {
				noACK = append(noACK, p)
			}
		}
		r := run(Options{}, noACK)
		c := r.Congestion[0]
		if c.CNPMatched || c.SenderQP != nil || c.CNPsBack != 0 || c.FirstCEToCNPMicros != nil || c.CNPsToSenderHost != 2 {
			t.Errorf("congestion %+v", c)
		}
		if !slices.ContainsFunc(r.Warnings, func(s string) bool { return strings.Contains(s, "could not be tied to the sender") }) {
			t.Errorf("no warning: %v", r.Warnings)
		}
	})
	t.Run("two QPs claim one flow: unmatched", func(t *testing.T) {
		// A second QP at A (0x2FF) also gets an ACK whose PSN, 1007,
		// falls in q1's requests: which of the two sent them is
		// ambiguous, so no pairing.
		r := run(Options{}, cat(pairs, one(pkt(9700, hostB, hostA, 0x2FF, opAck, 1007, withAETH(synACK)))))
		c := r.Congestion[0]
		if c.CNPMatched || c.SenderQP != nil {
			t.Errorf("congestion %+v", c)
		}
	})
	t.Run("ACK PSN in two flows: unmatched", func(t *testing.T) {
		// q2's requests 1003-1012 overlap q1's 1000-1009; B's only ACK,
		// PSN 1005 to p1, fits both. (q2 comes first so that a lookup
		// keeping the last candidate would pick q1.)
		r := run(Options{}, cat(
			seq(0, hostA, hostB, q2, opWriteOnly, 1003, 10),
			conn1,
			one(pkt(5200, hostB, hostA, p1, opAck, 1005, withAETH(synACK))),
			one(pkt(5500, hostB, hostA, p1, opCNP, 0)),
		))
		c := r.Congestion[0]
		if c.CNPMatched || c.SenderQP != nil || c.CNPsToSenderHost != 1 {
			t.Errorf("congestion %+v", c)
		}
	})
	t.Run("single flow fallback", func(t *testing.T) {
		// One UD flow A->B (no PSN pairing possible) with a CE mark at
		// 10 µs, and CNPs only to QP 0x300 at A: a CNP at 2 µs (before
		// the CE, so not the one) and at 14 µs: 4 µs.
		r := run(Options{}, []*dissect.Packet{
			pkt(1000, hostA, hostB, 0x1, opUDSendOnly, 0),
			pkt(2000, hostB, hostA, 0x300, opCNP, 0),
			pkt(10000, hostA, hostB, 0x1, opUDSendOnly, 1, ce),
			pkt(14000, hostB, hostA, 0x300, opCNP, 0),
		})
		c := r.Congestion[0]
		if !c.CNPMatched || *c.SenderQP != 0x300 || c.CNPsBack != 2 || c.delayUS() != 4 {
			t.Errorf("congestion %+v delay %v", c, c.delayUS())
		}
	})
	t.Run("matched, no CNP", func(t *testing.T) {
		var noCNP []*dissect.Packet
		for _, p := range pairs {
			if p.BTH.Opcode != opCNP {
				noCNP = append(noCNP, p)
			}
		}
		r := run(Options{}, noCNP)
		c := r.Congestion[0]
		if !c.CNPMatched || *c.SenderQP != p1 || c.CNPsBack != 0 || c.FirstCEToCNPMicros != nil {
			t.Errorf("congestion %+v", c)
		}
		if !slices.ContainsFunc(r.Warnings, func(s string) bool { return strings.Contains(s, "no CNP back") }) {
			t.Errorf("no warning: %v", r.Warnings)
		}
	})
}

// delayUS returns the CE-to-CNP delay in microseconds, or -1 when there is
// none, to compare in one expression.
func (c CongestionReport) delayUS() float64 {
	if c.FirstCEToCNPMicros == nil {
		return -1
	}
	return *c.FirstCEToCNPMicros
}

func TestReportRepeatable(t *testing.T) {
	a := New(Options{})
	for _, p := range cat(cleanRC(), seq(10_000, hostA, hostB, 0x11, opSendOnly, 110, 3)) {
		a.Add(p)
	}
	r1, r2 := a.Report(), a.Report()
	j1, _ := json.Marshal(r1)
	j2, _ := json.Marshal(r2)
	if !bytes.Equal(j1, j2) || !reflect.DeepEqual(r1, r2) {
		t.Errorf("two reports differ:\n%s\n%s", j1, j2)
	}
	// Reporting did not disturb the analysis: one more in-order packet
	// (113) after the gap 104-109 keeps one gap.
	a.Add(pkt(20_000, hostA, hostB, 0x11, opSendOnly, 113))
	f := flowOf(t, a.Report(), hostA, hostB, 0x11)
	checkPSN(t, f, psnWant{gaps: 1, missing: 6, unrecovered: 6, first: 100, last: 113})
}

func TestLiveAccessors(t *testing.T) {
	a := New(Options{})
	for _, p := range cleanRC() {
		a.Add(p)
	}
	r1 := a.Report()
	a.Add(pkt(7_000, hostA, hostB, 0x11, opSendOnly, 104, withLen(200)))
	r2 := a.Report()
	key := flowKeyString(hostA, hostB, 0x11, 2)
	f1, ok1 := r1.Flow(key)
	f2, ok2 := r2.Flow(key)
	if !ok1 || !ok2 || f1.Key() != key || f2.Key() != key {
		t.Fatalf("flow %q not found in both reports", key)
	}
	if f2.Bytes-f1.Bytes != 200 || f2.Packets-f1.Packets != 1 {
		t.Errorf("delta bytes %d packets %d, want 200 1", f2.Bytes-f1.Bytes, f2.Packets-f1.Packets)
	}
	if _, ok := r1.Flow("nonexistent"); ok {
		t.Error("found a flow that does not exist")
	}
	// A report decoded from JSON has no index yet; Key and Flow rebuild
	// it.
	b, _ := json.Marshal(r2)
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if f, ok := back.Flow(key); !ok || f.Bytes != f2.Bytes {
		t.Errorf("decoded report: flow %v found %v", f, ok)
	}
}

// TestJSONFields decodes the JSON of a report into generic maps and checks
// every documented key is there.
func TestJSONFields(t *testing.T) {
	pkts := cat(cleanRC(),
		one(pkt(7_000, hostA, hostB, 0x11, opSendOnly, 104, withECN(dissect.ECNCE))),
		one(pkt(8_000, hostB, hostA, 0x22, opCNP, 0)),
	)
	b, err := json.Marshal(run(Options{}, pkts))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	obj := func(v any) map[string]any {
		t.Helper()
		o, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%T is not an object", v)
		}
		return o
	}
	first := func(v any) map[string]any {
		t.Helper()
		l, ok := v.([]any)
		if !ok || len(l) == 0 {
			t.Fatalf("%v is not a non-empty array", v)
		}
		return obj(l[0])
	}
	has := func(name string, o map[string]any, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if _, ok := o[k]; !ok {
				t.Errorf("%s: no key %q", name, k)
			}
		}
	}
	has("report", m, "schema_version", "packets", "malformed_reasons", "icrc", "ecn", "cnp", "fecn",
		"becn", "first_ts", "last_ts", "span_seconds", "bytes", "gbps", "pmtu", "flows", "flow_count",
		"congestion", "ecmp", "warnings", "problems")
	if m["schema_version"] != 1.0 {
		t.Errorf("schema_version %v", m["schema_version"])
	}
	has("packets", obj(m["packets"]), "total", "roce", "rocev1", "rocev2", "malformed", "not_roce")
	has("icrc", obj(m["icrc"]), "good", "bad", "unverifiable")
	has("ecn", obj(m["ecn"]), "not_ect", "ect0", "ect1", "ce")
	fl := first(m["flows"])
	has("flow", fl, "src_ip", "dst_ip", "dest_qp", "version", "transport", "packets", "bytes",
		"payload_bytes", "messages", "src_ports", "src_ports_more", "opcodes", "first_ts", "last_ts",
		"duration_seconds", "gbps", "icrc", "ecn", "ecn_ce", "cnp", "fecn", "becn", "psn", "naks")
	if fl["src_ip"] != "10.0.0.1" || fl["dest_qp"] != float64(0x11) {
		t.Errorf("flow address %v QP %v", fl["src_ip"], fl["dest_qp"])
	}
	if _, ok := fl["src_ports"].([]any); !ok {
		t.Errorf("src_ports is %T, want an array", fl["src_ports"])
	}
	has("psn", obj(fl["psn"]), "gaps", "missing", "retransmitted", "unrecovered", "ranges_dropped", "first", "last")
	has("naks", obj(fl["naks"]), "seq_err", "rnr", "other")
	has("congestion", first(m["congestion"]), "flow", "ce", "cnps_back", "cnp_matched", "first_ce_to_cnp_us")
	e := obj(m["ecmp"])
	has("ecmp", e, "flows", "distinct_src_ports", "flow_entropy_bits", "max_entropy_bits",
		"colliding_flows", "paths", "path_flows", "path_bytes", "path_imbalance", "host_pairs")
	has("host pair", first(e["host_pairs"]), "src_ip", "dst_ip", "flows", "distinct_src_ports",
		"flow_entropy_bits", "max_entropy_bits", "colliding_flows")
	for _, k := range []string{"warnings", "problems"} {
		if _, ok := m[k].([]any); !ok {
			t.Errorf("%s is %T, want an array", k, m[k])
		}
	}
}

func TestEmptyReport(t *testing.T) {
	r := New(Options{}).Report()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() || r.FlowCount != 0 || r.FirstTS != "" || r.ECMP.Paths != DefaultECMPPaths {
		t.Errorf("empty report %s", b)
	}
	if !bytes.Contains(b, []byte(`"flows":[]`)) || !bytes.Contains(b, []byte(`"problems":[]`)) {
		t.Errorf("empty lists not [] in %s", b)
	}
}

func TestTransportNames(t *testing.T) {
	tests := []struct {
		ops  []layers.Opcode
		want string
	}{
		{[]layers.Opcode{opSendOnly, opAck}, "RC"},
		{[]layers.Opcode{opCNP}, "CNP"},
		{[]layers.Opcode{opAck, opCNP}, "RC"},
		{[]layers.Opcode{opUDSendOnly, opSendOnly}, "RC+UD"},
		{[]layers.Opcode{opXRCWriteOnly}, "XRC"},
		{[]layers.Opcode{opUCSendOnly}, "UC"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			var pkts []*dissect.Packet
			for i, op := range tc.ops {
				pkts = append(pkts, pkt(int64(i), hostA, hostB, 9, op, uint32(i), withAETH(synACK)))
			}
			if f := flowOf(t, run(Options{}, pkts), hostA, hostB, 9); f.Transport != tc.want {
				t.Errorf("transport %q, want %q", f.Transport, tc.want)
			}
		})
	}
}

// TestAddAllocs proves Add allocates nothing for packets of known flows.
func TestAddAllocs(t *testing.T) {
	const q, p = 0x11, 0x22
	a := New(Options{PMTU: 1024})
	req := pkt(0, hostA, hostB, q, opWriteOnly, 0)
	read := pkt(0, hostA, hostB, q, opReadRequest, 0, withRETH(4096))
	ack := pkt(0, hostB, hostA, p, opAck, 0, withAETH(synNAKSeq))
	cnp := pkt(0, hostB, hostA, p, opCNP, 0)
	ceReq := pkt(0, hostA, hostB, q, opWriteOnly, 0, withECN(dissect.ECNCE))
	bad := pkt(0, hostA, hostB, q, opWriteOnly, 0)
	bad.Malformed = "BTH shorter than 12 bytes"
	// Create the flows and one malformed reason; the request flow's next
	// PSN is 1.
	for _, x := range []*dissect.Packet{req, ack, cnp, bad} {
		a.Add(x)
	}
	psn := uint32(1)
	allocs := testing.AllocsPerRun(1000, func() {
		req.BTH.PSN = psn
		a.Add(req)
		ceReq.BTH.PSN = psn + 1
		a.Add(ceReq)
		read.BTH.PSN = psn + 2
		a.Add(read) // 4096/1024 = 4 PSNs: psn+2 to psn+5
		ack.BTH.PSN = psn
		a.Add(ack)
		a.Add(cnp)
		a.Add(bad)
		a.NotRoCE()
		psn += 6
	})
	if allocs != 0 {
		t.Errorf("Add allocates %v times per run, want 0", allocs)
	}
	f := flowOf(t, a.Report(), hostA, hostB, q)
	if f.PSN.Gaps != 0 {
		t.Errorf("the allocation loop itself has %d gaps", f.PSN.Gaps)
	}
}

func BenchmarkAdd(b *testing.B) {
	// 32 QPs between two hosts, round robin, WRITE MIDDLE packets of 1 KiB
	// with an ACK every 8 packets.
	const qps = 32
	a := New(Options{})
	reqs := make([]*dissect.Packet, qps)
	acks := make([]*dissect.Packet, qps)
	for i := range reqs {
		reqs[i] = pkt(0, hostA, hostB, uint32(0x100+i), opWriteMiddle, 0, withLen(1082), withPayload(1024),
			withSrcPort(uint16(49152+i)))
		acks[i] = pkt(0, hostB, hostA, uint32(0x200+i), opAck, 0, withLen(62), withAETH(synACK))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		i := n % qps
		r := reqs[i]
		r.Timestamp = int64(n)
		r.BTH.PSN = uint32(n/qps) & psnMask
		a.Add(r)
		if n%8 == 7 {
			acks[i].BTH.PSN = r.BTH.PSN
			a.Add(acks[i])
		}
	}
}

// TestJudgement checks the one-line findings.
func TestJudgement(t *testing.T) {
	const q, p = 0x11, 0x22
	tests := []struct {
		name     string
		pkts     []*dissect.Packet
		problems []string
		warnings []string // substrings, in order
	}{
		{
			// 10, 11, 14, 15 then a NAK and 12-16: the go-back-N case.
			name: "loss repaired",
			pkts: cat(
				seq(0, hostA, hostB, q, opSendOnly, 10, 2),
				seq(10000, hostA, hostB, q, opSendOnly, 14, 2),
				one(pkt(20000, hostB, hostA, p, opAck, 12, withAETH(synNAKSeq))),
				seq(30000, hostA, hostB, q, opSendOnly, 12, 5),
			),
			problems: []string{
				"1 PSN gap in 1 flow, 2 PSNs missing (most in 10.0.0.1 > 10.0.0.2 QP 0x000011 v2: 2)",
				"4 requests retransmitted in 1 flow (most in 10.0.0.1 > 10.0.0.2 QP 0x000011 v2: 4)",
				"1 NAK in 1 flow: 1 PSN sequence error, 0 receiver not ready, 0 other (most in 10.0.0.2 > 10.0.0.1 QP 0x000022 v2: 1)",
			},
		},
		{
			// Gaps in two RC flows (3 and 1 PSNs), nothing resent, no NAK:
			// the capture missed packets.
			name: "capture missed packets",
			pkts: cat(
				one(pkt(0, hostA, hostB, q, opSendOnly, 1)),
				one(pkt(1, hostA, hostB, q, opSendOnly, 5)),
				one(pkt(2, hostB, hostA, p, opSendOnly, 1)),
				one(pkt(3, hostB, hostA, p, opSendOnly, 3)),
			),
			problems: []string{
				"2 PSN gaps in 2 flows, 4 PSNs missing (most in 10.0.0.1 > 10.0.0.2 QP 0x000011 v2: 3)",
				"4 missing PSNs in 2 flows never showed up later in the capture (most in 10.0.0.1 > 10.0.0.2 QP 0x000011 v2: 3)",
			},
			warnings: []string{"the PSN gaps of reliable flows are most likely packets the capture missed"},
		},
		{
			// The same gap on UC: no resend is expected, no such warning.
			name: "UC loss",
			pkts: cat(
				one(pkt(0, hostA, hostB, q, opUCSendOnly, 1)),
				one(pkt(1, hostA, hostB, q, opUCSendOnly, 3)),
			),
			problems: []string{
				"1 PSN gap in 1 flow, 1 PSN missing (most in 10.0.0.1 > 10.0.0.2 QP 0x000011 v2: 1)",
				"1 missing PSN in 1 flow never showed up later in the capture (most in 10.0.0.1 > 10.0.0.2 QP 0x000011 v2: 1)",
			},
		},
		{
			// Two ranges of one PSN, limit 1: one forgotten.
			name: "lower bound",
			pkts: cat(
				one(pkt(0, hostA, hostB, q, opUCSendOnly, 1)),
				one(pkt(1, hostA, hostB, q, opUCSendOnly, 3)),
				one(pkt(2, hostA, hostB, q, opUCSendOnly, 5)),
			),
			problems: []string{
				"2 PSN gaps in 1 flow, 2 PSNs missing (most in 10.0.0.1 > 10.0.0.2 QP 0x000011 v2: 2)",
				"at least 1 missing PSN in 1 flow never showed up later in the capture (most in 10.0.0.1 > 10.0.0.2 QP 0x000011 v2: 1)",
			},
		},
		{
			// Connection management to QP 1 shares the data QP's port:
			// not an ECMP finding.
			name: "GSI QP left out of ECMP warnings",
			pkts: cat(
				one(pkt(0, hostA, hostB, 1, opUDSendOnly, 0)),
				one(pkt(1, hostA, hostB, q, opSendOnly, 0)),
			),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{}
			if tc.name == "lower bound" {
				o.MaxMissingRanges = 1
			}
			r := run(o, tc.pkts)
			if !slices.Equal(r.Problems, append([]string{}, tc.problems...)) {
				t.Errorf("problems\n%q\nwant\n%q", r.Problems, tc.problems)
			}
			if len(r.Warnings) != len(tc.warnings) {
				t.Fatalf("warnings %q, want %d", r.Warnings, len(tc.warnings))
			}
			for i, w := range tc.warnings {
				if !strings.Contains(r.Warnings[i], w) {
					t.Errorf("warning %q does not say %q", r.Warnings[i], w)
				}
			}
			if r.Clean() != (len(tc.problems) == 0) {
				t.Errorf("clean %v with problems %q", r.Clean(), r.Problems)
			}
		})
	}
}
