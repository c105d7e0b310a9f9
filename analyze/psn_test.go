package analyze

import (
	"slices"
	"testing"

	"roce-inspect/dissect"
)

// cat joins packet sequences.
func cat(parts ...[]*dissect.Packet) []*dissect.Packet { return slices.Concat(parts...) }

// one wraps a single packet as a sequence.
func one(p *dissect.Packet) []*dissect.Packet { return []*dissect.Packet{p} }

func TestPSNAnalysis(t *testing.T) {
	const q, p = 0x11, 0x22 // QP q at B receives A's requests; QP p at A gets B's responses
	tests := []struct {
		name string
		opt  Options
		pkts []*dissect.Packet
		want psnWant // for the flow A > B QP q
	}{
		{
			// WRITE FIRST/MIDDLE/LAST at 100-102, SEND ONLY 103, WRITE
			// ONLY 104; B acknowledges 102 and 104 only (coalesced). Every
			// request is the previous + 1.
			name: "clean RC with coalesced ACKs",
			pkts: cat(
				one(pkt(1000, hostA, hostB, q, opWriteFirst, 100, withRETH(3000), withPayload(1024))),
				one(pkt(2000, hostA, hostB, q, opWriteMiddle, 101, withPayload(1024))),
				one(pkt(3000, hostA, hostB, q, opWriteLast, 102, withPayload(952))),
				one(pkt(4000, hostB, hostA, p, opAck, 102, withAETH(synACK))),
				one(pkt(5000, hostA, hostB, q, opSendOnly, 103, withPayload(64))),
				one(pkt(6000, hostA, hostB, q, opWriteOnly, 104, withRETH(8), withPayload(8))),
				one(pkt(7000, hostB, hostA, p, opAck, 104, withAETH(synACK))),
			),
			want: psnWant{first: 100, last: 104},
		},
		{
			// 10, 11, then 14: 12 and 13 lost (one gap, two missing). B
			// NAKs with PSN 12; A goes back to 12 and resends 12, 13, 14,
			// 15 behind the expected 16 (four retransmitted, which repair
			// 12 and 13), then carries on with 16.
			name: "loss, NAK sequence error, go-back-N",
			pkts: cat(
				seq(0, hostA, hostB, q, opSendOnly, 10, 2),
				seq(10000, hostA, hostB, q, opSendOnly, 14, 2),
				one(pkt(20000, hostB, hostA, p, opAck, 12, withAETH(synNAKSeq))),
				seq(30000, hostA, hostB, q, opSendOnly, 12, 5),
			),
			want: psnWant{gaps: 1, missing: 2, retrans: 4, first: 10, last: 16},
		},
		{
			// 10, 11, 15, 16: 12-14 skipped and never sent again.
			name: "loss never repaired",
			pkts: cat(
				seq(0, hostA, hostB, q, opWriteOnly, 10, 2),
				seq(10000, hostA, hostB, q, opWriteOnly, 15, 2),
			),
			want: psnWant{gaps: 1, missing: 3, unrecovered: 3, first: 10, last: 16},
		},
		{
			// 0xFFFFFE, 0xFFFFFF, 0, 1: consecutive modulo 2^24.
			name: "PSN wrap",
			pkts: seq(0, hostA, hostB, q, opSendOnly, 0xFFFFFE, 4),
			want: psnWant{first: 0xFFFFFE, last: 1},
		},
		{
			// Wrap with a loss across it: 0xFFFFFE then 1 skips
			// 0xFFFFFF and 0 (two missing, one range crossing 0).
			name: "gap across the wrap",
			pkts: cat(
				one(pkt(0, hostA, hostB, q, opSendOnly, 0xFFFFFE)),
				one(pkt(1000, hostA, hostB, q, opSendOnly, 1)),
			),
			want: psnWant{gaps: 1, missing: 2, unrecovered: 2, first: 0xFFFFFE, last: 1},
		},
		{
			// SEND ONLY 50 draws an RNR NAK; A sends 50 again (behind the
			// expected 51: one retransmission), then 51.
			name: "RNR NAK and resend",
			pkts: cat(
				one(pkt(0, hostA, hostB, q, opSendOnly, 50)),
				one(pkt(1000, hostB, hostA, p, opAck, 50, withAETH(synRNR))),
				one(pkt(2000, hostA, hostB, q, opSendOnly, 50)),
				one(pkt(3000, hostB, hostA, p, opAck, 50, withAETH(synACK))),
				one(pkt(4000, hostA, hostB, q, opSendOnly, 51)),
			),
			want: psnWant{retrans: 1, first: 50, last: 51},
		},
		{
			// Duplicate delivery of 7 counts as a retransmission; the
			// sequence goes on at 8.
			name: "duplicate",
			pkts: cat(
				seq(0, hostA, hostB, q, opSendOnly, 6, 2),
				one(pkt(5000, hostA, hostB, q, opSendOnly, 7)),
				one(pkt(6000, hostA, hostB, q, opSendOnly, 8)),
			),
			want: psnWant{retrans: 1, first: 6, last: 8},
		},
		{
			// Missing 10-19 (one range of ten); 15 alone comes back, which
			// splits the range into 10-14 and 16-19: nine unrecovered.
			name: "repair in the middle of a range",
			pkts: cat(
				one(pkt(0, hostA, hostB, q, opSendOnly, 9)),
				one(pkt(1000, hostA, hostB, q, opSendOnly, 20)),
				one(pkt(2000, hostA, hostB, q, opSendOnly, 15)),
			),
			want: psnWant{gaps: 1, missing: 10, retrans: 1, unrecovered: 9, first: 9, last: 20},
		},
		{
			// Three gaps at 0, 2, 4, 6 miss 1, 3 and 5; only two ranges
			// are kept, so {1} is forgotten (one dropped, two
			// unrecovered); 3 then comes back: one left.
			name: "MaxMissingRanges",
			opt:  Options{MaxMissingRanges: 2},
			pkts: cat(
				one(pkt(0, hostA, hostB, q, opSendOnly, 0)),
				one(pkt(1000, hostA, hostB, q, opSendOnly, 2)),
				one(pkt(2000, hostA, hostB, q, opSendOnly, 4)),
				one(pkt(3000, hostA, hostB, q, opSendOnly, 6)),
				one(pkt(4000, hostA, hostB, q, opSendOnly, 3)),
			),
			want: psnWant{gaps: 3, missing: 3, retrans: 1, unrecovered: 1, dropped: 1, first: 0, last: 6},
		},
		{
			// UC has PSNs too: 5 then 7 misses 6.
			name: "UC gap",
			pkts: cat(
				one(pkt(0, hostA, hostB, q, opUCSendOnly, 5)),
				one(pkt(1000, hostA, hostB, q, opUCSendOnly, 7)),
			),
			want: psnWant{gaps: 1, missing: 1, unrecovered: 1, first: 5, last: 7},
		},
		{
			// XRC: 3 then 4, in order.
			name: "XRC in order",
			pkts: seq(0, hostA, hostB, q, opXRCWriteOnly, 3, 2),
			want: psnWant{first: 3, last: 4},
		},
		{
			// Atomics, FLUSH and ATOMIC WRITE take one PSN each: 30-33.
			name: "single-PSN requests",
			pkts: cat(
				one(pkt(0, hostA, hostB, q, opCmpSwap, 30)),
				one(pkt(1000, hostA, hostB, q, opFlush, 31)),
				one(pkt(2000, hostA, hostB, q, opAtomicWrite, 32)),
				one(pkt(3000, hostA, hostB, q, opReadRequest, 33, withRETH(0))),
				one(pkt(4000, hostA, hostB, q, opSendOnly, 34)),
			),
			want: psnWant{first: 30, last: 34},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(tc.opt, tc.pkts)
			checkPSN(t, flowOf(t, r, hostA, hostB, q), tc.want)
		})
	}
}

// TestREADReservation checks that an RDMA READ's PSNs (one per PMTU of its
// DMA length) are not mistaken for a gap.
func TestREADReservation(t *testing.T) {
	const q, p = 0x11, 0x22
	// A READ of 10000 bytes at PSN 200 takes ceil(10000/1024) = 10 PSNs
	// with a 1024-byte PMTU (200-209): the next request is 210.
	read := pkt(10000, hostA, hostB, q, opReadRequest, 200, withRETH(10000))
	// Earlier WRITE FIRST/MIDDLE packets of one PMTU each teach the PMTU
	// (1024); the WRITE LAST is shorter and does not count. PSNs 197-199.
	writes := cat(
		one(pkt(0, hostA, hostB, q, opWriteFirst, 197, withRETH(2500), withPayload(1024))),
		one(pkt(1000, hostA, hostB, q, opWriteMiddle, 198, withPayload(1024))),
		one(pkt(2000, hostA, hostB, q, opWriteLast, 199, withPayload(452))),
	)
	// The READ's responses: FIRST 200 and MIDDLE 201-208 of 1024 bytes,
	// LAST 209 of 10000-9*1024 = 784 bytes.
	responses := cat(
		one(pkt(11000, hostB, hostA, p, opReadRespFirst, 200, withAETH(synACK), withPayload(1024))),
		seq(12000, hostB, hostA, p, opReadRespMid, 201, 8, withPayload(1024)),
		one(pkt(21000, hostB, hostA, p, opReadRespLast, 209, withAETH(synACK), withPayload(784))),
	)
	next := func(psn uint32) []*dissect.Packet {
		return one(pkt(30000, hostA, hostB, q, opSendOnly, psn))
	}
	// An unrelated flow whose one FIRST packet has 4096 bytes: another
	// host pair's PMTU must not be used for A and B.
	other := one(pkt(5000, hostC, hostB, 0x33, opSendFirst, 1, withPayload(4096)))

	tests := []struct {
		name     string
		opt      Options
		pkts     []*dissect.Packet
		want     psnWant
		wantPMTU int
	}{
		{
			name:     "PMTU learned from requests",
			pkts:     cat(other, writes, one(read), next(210)),
			want:     psnWant{first: 197, last: 210},
			wantPMTU: 4096, // the report's PMTU is the largest learned
		},
		{
			// Same, but the next request lands at 215: 210-214 missing.
			name:     "PMTU learned, gap after the READ",
			pkts:     cat(writes, one(read), next(215)),
			want:     psnWant{gaps: 1, missing: 5, unrecovered: 5, first: 197, last: 215},
			wantPMTU: 1024,
		},
		{
			// No FIRST/MIDDLE request before the READ, but its own
			// responses (FIRST and MIDDLE are one PMTU too) arrive before
			// the next request.
			name:     "PMTU learned from the READ responses",
			pkts:     cat(one(read), responses, next(210)),
			want:     psnWant{first: 200, last: 210},
			wantPMTU: 1024,
		},
		{
			name:     "PMTU given",
			opt:      Options{PMTU: 1024},
			pkts:     cat(one(read), next(210)),
			want:     psnWant{first: 200, last: 210},
			wantPMTU: 1024,
		},
		{
			// With a 4096 PMTU given, the READ takes ceil(10000/4096) =
			// 3 PSNs (200-202): 210 skips 203-209.
			name:     "PMTU given, larger",
			opt:      Options{PMTU: 4096},
			pkts:     cat(one(read), next(210)),
			want:     psnWant{gaps: 1, missing: 7, unrecovered: 7, first: 200, last: 210},
			wantPMTU: 4096,
		},
		{
			// No PMTU anywhere: the READ may have taken up to
			// ceil(10000/256) = 40 PSNs, so 210 is within reach.
			name: "no PMTU, jump within the smallest MTU's count",
			pkts: cat(one(read), next(210)),
			want: psnWant{first: 200, last: 210},
		},
		{
			// ...and 240 (200 + 40) is the farthest; 241 skips 240.
			name: "no PMTU, farthest jump",
			pkts: cat(one(read), next(240)),
			want: psnWant{first: 200, last: 240},
		},
		{
			name: "no PMTU, beyond the farthest",
			pkts: cat(one(read), next(241)),
			want: psnWant{gaps: 1, missing: 1, unrecovered: 1, first: 200, last: 241},
		},
		{
			// A 1500-byte FIRST payload is not an IBTA MTU and teaches
			// nothing; the READ falls back to the 256-byte bound.
			name: "non-IBTA payload ignored",
			pkts: cat(
				one(pkt(0, hostA, hostB, q, opSendFirst, 199, withPayload(1500))),
				one(read), next(240),
			),
			want: psnWant{first: 199, last: 240},
		},
		{
			// A READ at 0xFFFFFE of 4096 bytes with a 1024 PMTU takes 4
			// PSNs: 0xFFFFFE, 0xFFFFFF, 0, 1; the next request is 2.
			name:     "READ across the wrap",
			opt:      Options{PMTU: 1024},
			pkts:     cat(one(pkt(0, hostA, hostB, q, opReadRequest, 0xFFFFFE, withRETH(4096))), next(2)),
			want:     psnWant{first: 0xFFFFFE, last: 2},
			wantPMTU: 1024,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(tc.opt, tc.pkts)
			checkPSN(t, flowOf(t, r, hostA, hostB, q), tc.want)
			if r.PMTU != tc.wantPMTU {
				t.Errorf("pmtu %d, want %d", r.PMTU, tc.wantPMTU)
			}
		})
	}
}

// TestPSNResponsesIgnored checks that responses jumping forward (coalesced
// ACKs, READ responses) are not gaps, and that their flow shows no
// requests.
func TestPSNResponsesIgnored(t *testing.T) {
	r := run(Options{}, cat(
		one(pkt(0, hostB, hostA, 0x22, opAck, 100, withAETH(synACK))),
		one(pkt(1000, hostB, hostA, 0x22, opAck, 500, withAETH(synACK))),
		one(pkt(2000, hostB, hostA, 0x22, opReadRespOnly, 9000, withAETH(synACK))),
		one(pkt(3000, hostB, hostA, 0x22, opAtomicAck, 20000, withAETH(synACK))),
	))
	f := flowOf(t, r, hostB, hostA, 0x22)
	s := psnOf(t, f)
	if s.Requests != 0 || s.Gaps != 0 || s.First != nil || s.Last != nil {
		t.Errorf("responses analyzed as requests: %+v", *s)
	}
	if !r.Clean() {
		t.Errorf("problems: %v", r.Problems)
	}
}

// TestPSNTrackerRanges exercises the missing-range bookkeeping directly.
func TestPSNTrackerRanges(t *testing.T) {
	tests := []struct {
		name        string
		max         int
		psns        []uint32
		unrecovered uint64
		dropped     uint64
		ranges      []psnRange
	}{
		// 0 then 10: missing 1-9; 1 and 9 come back (ends trimmed).
		{"trim ends", 4, []uint32{0, 10, 1, 9}, 7, 0, []psnRange{{2, 8}}},
		// 0 then 3: missing 1-2; both come back: the range goes.
		{"fully repaired", 4, []uint32{0, 3, 1, 2}, 0, 0, []psnRange{}},
		// 0, 4, 8: ranges 1-3, 5-7 at the limit of 2; 2 comes back and
		// splits 1-3, so the oldest piece (1) goes.
		{"split at the limit", 2, []uint32{0, 4, 8, 2}, 4, 1, []psnRange{{3, 3}, {5, 7}}},
		// The range 0xFFFFFE-1 crosses 0; 0 comes back.
		{"split across the wrap", 4, []uint32{0xFFFFFD, 2, 0}, 3, 0, []psnRange{{0xFFFFFE, 0xFFFFFF}, {1, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := psnTracker{maxRanges: tc.max}
			for _, p := range tc.psns {
				tr.request(p, false, 0, 0)
			}
			if got := tr.unrecovered(); got != tc.unrecovered {
				t.Errorf("unrecovered %d, want %d", got, tc.unrecovered)
			}
			if tr.dropped != tc.dropped {
				t.Errorf("dropped %d, want %d", tr.dropped, tc.dropped)
			}
			got := tr.ranges
			if got == nil {
				got = []psnRange{}
			}
			if !slices.Equal(got, tc.ranges) {
				t.Errorf("ranges %v, want %v", got, tc.ranges)
			}
		})
	}
}
