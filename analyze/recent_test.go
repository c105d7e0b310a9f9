package analyze

import (
	"net/netip"
	"testing"
)

// TestRecentFlowsCollide checks the flow cache in front of the flow map with
// flows that share their cache slot: the same QP number and UDP source port
// between different host pairs, and RoCEv1 and RoCEv2 between the same hosts,
// interleaved packet by packet, and one flow whose source port changes. Each
// flow must count exactly its own packets and keep its own PSN sequence.
func TestRecentFlowsCollide(t *testing.T) {
	hostD := netip.MustParseAddr("10.0.0.4")
	pairs := [][2]netip.Addr{{hostA, hostB}, {hostC, hostB}, {hostA, hostD}, {hostB, hostA}}
	const qp, rounds = 0x42, 300
	a := New(Options{})
	for i := range rounds {
		for j, hp := range pairs {
			a.Add(pkt(int64(i*10+j), hp[0], hp[1], qp, opSendOnly, uint32(i)))
		}
		// The same hosts and QP over RoCEv1: another flow, same slot.
		v1 := pkt(int64(i*10+8), hostA, hostB, qp, opSendOnly, uint32(i))
		v1.Version, v1.SrcPort = 1, 0
		a.Add(v1)
		// One flow spread over several source ports.
		a.Add(pkt(int64(i*10+9), hostC, hostD, qp+1, opSendOnly, uint32(i), withSrcPort(uint16(49152+i%5))))
	}
	r := a.Report()
	if r.FlowCount != len(pairs)+2 {
		t.Fatalf("%d flows, want %d", r.FlowCount, len(pairs)+2)
	}
	for _, hp := range pairs {
		f := flowOf(t, r, hp[0], hp[1], qp)
		if f.Packets != rounds || f.PSN == nil || f.PSN.Gaps != 0 || f.PSN.Retransmitted != 0 {
			t.Errorf("%v > %v: %d packets, PSN %+v; want %d packets in sequence", hp[0], hp[1], f.Packets, f.PSN, rounds)
		}
	}
	v1, ok := r.Flow(flowKeyString(hostA, hostB, qp, 1))
	if !ok || v1.Packets != rounds {
		t.Errorf("RoCEv1 flow: found %v, %+v; want %d packets", ok, v1, rounds)
	}
	spread := flowOf(t, r, hostC, hostD, qp+1)
	if spread.Packets != rounds || spread.PSN.Gaps != 0 || len(spread.SrcPorts) != 5 {
		t.Errorf("spread flow: %d packets, %d gaps, ports %v; want %d packets, no gap, 5 ports",
			spread.Packets, spread.PSN.Gaps, spread.SrcPorts, rounds)
	}
}

// TestRecentSlotSpreads checks that the slot hash tells apart the QPs of a
// typical host, numbered consecutively, so that the cache spares the map.
func TestRecentSlotSpreads(t *testing.T) {
	used := map[uint]bool{}
	for qp := uint32(0x100); qp < 0x100+recentFlows/2; qp++ {
		used[recentSlot(qp, 2, uint16(49152+qp))] = true
	}
	// 128 keys in 256 slots: a random hash would leave about 100
	// distinct; a hash that ignored the QP would leave one.
	if len(used) < recentFlows/4 {
		t.Errorf("%d consecutive QPs use only %d slots", recentFlows/2, len(used))
	}
}
