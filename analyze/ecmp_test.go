package analyze

import (
	"hash/crc32"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"roce-inspect/dissect"
)

// qpsWithPorts returns one SEND ONLY of 100 bytes per QP from src to dst,
// QP 0x100+i using source port ports[i].
func qpsWithPorts(src, dst netip.Addr, ports ...uint16) []*dissect.Packet {
	var out []*dissect.Packet
	for i, sp := range ports {
		out = append(out, pkt(int64(i), src, dst, uint32(0x100+i), opSendOnly, 1, withSrcPort(sp)))
	}
	return out
}

func TestECMPEntropy(t *testing.T) {
	same := make([]uint16, 32)
	for i := range same {
		same[i] = 49152
	}
	spread := []uint16{49152, 49153, 49154, 49155, 49156, 49157, 49158, 49159}
	tests := []struct {
		name      string
		pkts      []*dissect.Packet
		flows     int
		ports     int
		entropy   float64
		max       float64
		colliding int
		warning   string // a substring of one warning; "" for none
	}{
		{
			// 32 flows on one port: a single-valued distribution has
			// entropy 0 of a possible log2(32) = 5 bits, and every flow
			// collides.
			name: "one port for all QPs", pkts: qpsWithPorts(hostA, hostB, same...),
			flows: 32, ports: 1, entropy: 0, max: 5, colliding: 32,
			warning: "all 32 QPs between 10.0.0.1 and 10.0.0.2 use UDP source port 49152: ECMP sends them all down one path",
		},
		{
			// 8 flows on 8 ports: uniform, log2(8) = 3 bits.
			name: "spread ports", pkts: qpsWithPorts(hostA, hostB, spread...),
			flows: 8, ports: 8, entropy: 3, max: 3,
		},
		{
			// Ports 1, 1, 2, 3 over 4 flows: p = 1/2, 1/4, 1/4, so
			// H = 1/2*1 + 2*(1/4*2) = 1.5 bits; the two flows on port 1
			// collide.
			name: "partial collision", pkts: qpsWithPorts(hostA, hostB, 1, 1, 2, 3),
			flows: 4, ports: 3, entropy: 1.5, max: 2, colliding: 2,
			warning: "2 of 4 QPs between 10.0.0.1 and 10.0.0.2 share their UDP source port with another QP",
		},
		{
			// The same port from two different sources is two 5-tuples:
			// no collision. Two flows, one port: entropy 0, max 1.
			name:  "same port, different hosts",
			pkts:  cat(qpsWithPorts(hostA, hostB, 7), qpsWithPorts(hostC, hostB, 7)),
			flows: 2, ports: 1, entropy: 0, max: 1,
		},
		{
			// A flow that used ports 1 and 2 and one that used 3: three
			// (flow, port) pairs, one each: log2(3) bits, above log2(2).
			name: "flow with two ports",
			pkts: cat(qpsWithPorts(hostA, hostB, 1, 3),
				one(pkt(9, hostA, hostB, 0x100, opSendOnly, 2, withSrcPort(2)))),
			flows: 2, ports: 3, entropy: math.Log2(3), max: 1,
		},
		{
			// RoCEv1 has no UDP header: not part of the ECMP analysis.
			name: "RoCEv1 left out",
			pkts: func() []*dissect.Packet {
				p := qpsWithPorts(hostA, hostB, 0, 0)
				for _, x := range p {
					x.Version = 1
				}
				return p
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(Options{}, tc.pkts)
			e := r.ECMP
			if e.Flows != tc.flows || e.DistinctSrcPorts != tc.ports || e.CollidingFlows != tc.colliding {
				t.Errorf("flows %d ports %d colliding %d, want %d %d %d",
					e.Flows, e.DistinctSrcPorts, e.CollidingFlows, tc.flows, tc.ports, tc.colliding)
			}
			if math.Abs(e.FlowEntropyBits-tc.entropy) > 1e-12 || math.Abs(e.MaxEntropyBits-tc.max) > 1e-12 {
				t.Errorf("entropy %g max %g, want %g %g", e.FlowEntropyBits, e.MaxEntropyBits, tc.entropy, tc.max)
			}
			found := slices.ContainsFunc(r.Warnings, func(s string) bool { return tc.warning != "" && strings.Contains(s, tc.warning) })
			if tc.warning != "" && !found {
				t.Errorf("no warning %q in %q", tc.warning, r.Warnings)
			}
			if tc.warning == "" && len(r.Warnings) != 0 {
				t.Errorf("unexpected warnings %q", r.Warnings)
			}
		})
	}
}

func TestECMPHostPairs(t *testing.T) {
	// A>B: 4 QPs on one port; A>C: 2 QPs on two ports; B>A: one QP.
	r := run(Options{}, cat(
		qpsWithPorts(hostA, hostB, 5, 5, 5, 5),
		qpsWithPorts(hostA, hostC, 6, 7),
		qpsWithPorts(hostB, hostA, 5),
	))
	want := []HostPairECMP{
		{SrcIP: hostA, DstIP: hostB, Flows: 4, DistinctSrcPorts: 1, FlowEntropyBits: 0, MaxEntropyBits: 2, CollidingFlows: 4, Bytes: 400, PathImbalance: 8},
		{SrcIP: hostA, DstIP: hostC, Flows: 2, DistinctSrcPorts: 2, FlowEntropyBits: 1, MaxEntropyBits: 1, CollidingFlows: 0, Bytes: 200},
		{SrcIP: hostB, DstIP: hostA, Flows: 1, DistinctSrcPorts: 1, FlowEntropyBits: 0, MaxEntropyBits: 0, CollidingFlows: 0, Bytes: 100, PathImbalance: 8},
	}
	got := r.ECMP.HostPairs
	if len(got) != len(want) {
		t.Fatalf("%d host pairs, want %d", len(got), len(want))
	}
	for i := range want {
		g := got[i]
		// The A>C imbalance depends on where the two ports hash; checked
		// in TestECMPPaths.
		if i == 1 {
			g.PathImbalance = 0
		}
		if g != want[i] {
			t.Errorf("host pair %d: %+v, want %+v", i, g, want[i])
		}
	}
	// Overall: 7 flows, ports {5, 6, 7}, pairs per port 5:5, 6:1, 7:1.
	// H = -(5/7 log2 5/7 + 2/7 log2 1/7).
	h := -(5.0/7*math.Log2(5.0/7) + 2.0/7*math.Log2(1.0/7))
	e := r.ECMP
	if e.Flows != 7 || e.DistinctSrcPorts != 3 || e.CollidingFlows != 4 || math.Abs(e.FlowEntropyBits-h) > 1e-12 {
		t.Errorf("overall %+v, want entropy %g", e, h)
	}
}

// handPath hashes the 5-tuple the way the report documents it, written out
// byte by byte.
func handPath(src, dst []byte, sport, dport uint16, n int) int {
	b := append(append([]byte{}, src...), dst...)
	b = append(b, 17, byte(sport>>8), byte(sport), byte(dport>>8), byte(dport))
	return int(crc32.ChecksumIEEE(b) % uint32(n))
}

func TestECMPPaths(t *testing.T) {
	v6a := netip.MustParseAddr("fd00::1")
	v6b := netip.MustParseAddr("fd00::2")
	tests := []struct {
		name     string
		paths    int
		src, dst netip.Addr
		srcB     []byte // the address bytes as they go into the hash
		dstB     []byte
	}{
		{"IPv4, 8 paths", 0, hostA, hostB, []byte{10, 0, 0, 1}, []byte{10, 0, 0, 2}},
		{"IPv4, 5 paths", 5, hostA, hostB, []byte{10, 0, 0, 1}, []byte{10, 0, 0, 2}},
		{"IPv6, 8 paths", 8, v6a, v6b,
			[]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
			[]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}},
	}
	// Three flows: ports 49152 (100 bytes), 49153 (300 bytes), 50000 (two
	// packets, 600 bytes).
	type fl struct {
		port  uint16
		bytes []int
	}
	flows := []fl{{49152, []int{100}}, {49153, []int{300}}, {50000, []int{200, 400}}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.paths
			if n == 0 {
				n = DefaultECMPPaths
			}
			var pkts []*dissect.Packet
			wantFlows := make([]int, n)
			wantBytes := make([]uint64, n)
			var total uint64
			for i, f := range flows {
				path := handPath(tc.srcB, tc.dstB, f.port, 4791, n)
				wantFlows[path]++
				for j, l := range f.bytes {
					pkts = append(pkts, pkt(int64(j), tc.src, tc.dst, uint32(i+1), opSendOnly, uint32(j),
						withSrcPort(f.port), withLen(l)))
					wantBytes[path] += uint64(l)
					total += uint64(l)
				}
			}
			e := run(Options{ECMPPaths: tc.paths}, pkts).ECMP
			if e.Paths != n || !slices.Equal(e.PathFlows, wantFlows) || !slices.Equal(e.PathBytes, wantBytes) {
				t.Errorf("paths %d flows %v bytes %v, want %d %v %v", e.Paths, e.PathFlows, e.PathBytes, n, wantFlows, wantBytes)
			}
			imb := float64(slices.Max(wantBytes)) / (float64(total) / float64(n))
			if math.Abs(e.PathImbalance-imb) > 1e-12 {
				t.Errorf("imbalance %g, want %g", e.PathImbalance, imb)
			}
		})
	}
	t.Run("CRC-32 is IEEE", func(t *testing.T) {
		// The standard check value of CRC-32/IEEE.
		if got := crc32.ChecksumIEEE([]byte("123456789")); got != 0xCBF43926 {
			t.Errorf("crc32 check %#x", got)
		}
	})
}

// TestEntropyDeterministic checks that the entropy does not depend on map
// iteration order: floating-point sums do, unless the order is fixed, and a
// live display comparing two reports would see the last bit flicker.
func TestEntropyDeterministic(t *testing.T) {
	counts := make(map[uint16]int)
	for i := 0; i < 200; i++ {
		counts[uint16(i)] = 1 + i*i%37
	}
	want := entropyBits(counts)
	for i := 0; i < 50; i++ {
		if got := entropyBits(counts); got != want {
			t.Fatalf("entropy %v then %v", want, got)
		}
	}
}
