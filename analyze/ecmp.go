package analyze

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"net/netip"
	"slices"
)

// udpProto is the IP protocol number of UDP, part of the ECMP 5-tuple.
const udpProto = 17

// fiveTuple is what a switch hashes to choose among equal-cost paths.
type fiveTuple struct {
	src, dst         netip.Addr
	srcPort, dstPort uint16
}

// ecmpPath returns the simulated path of a 5-tuple: CRC-32 (IEEE) over
// source address (4 bytes for IPv4, 16 for IPv6), destination address,
// protocol 17, source port and destination port (big-endian), modulo n.
// Real switches use their own hash functions and seeds; a CRC is a common
// choice and shows the same clumping when ports are few.
func ecmpPath(t fiveTuple, n int) int {
	var buf [16 + 16 + 1 + 2 + 2]byte
	b := buf[:0]
	b = append(b, t.src.AsSlice()...)
	b = append(b, t.dst.AsSlice()...)
	b = append(b, udpProto)
	b = binary.BigEndian.AppendUint16(b, t.srcPort)
	b = binary.BigEndian.AppendUint16(b, t.dstPort)
	return int(crc32.ChecksumIEEE(b) % uint32(n))
}

// entropyBits returns the Shannon entropy, base 2, of a distribution given
// as counts. The terms are summed in a fixed order (map order varies) so
// that two reports of the same state agree to the last bit.
func entropyBits(counts map[uint16]int) float64 {
	total := 0
	cs := make([]int, 0, len(counts))
	for _, c := range counts {
		total += c
		cs = append(cs, c)
	}
	if total == 0 {
		return 0
	}
	slices.Sort(cs)
	h := 0.0
	for _, c := range cs {
		if c > 0 {
			q := float64(c) / float64(total)
			h -= q * math.Log2(q)
		}
	}
	// Rounding can leave -0 or a hair below 0 for a single port.
	return math.Max(h, 0)
}

// log2Flows returns log2(n), 0 for no flows.
func log2Flows(n int) float64 {
	if n <= 0 {
		return 0
	}
	return math.Log2(float64(n))
}

// spread accumulates the ECMP measures of a set of flows.
type spread struct {
	flows     int
	portFlows map[uint16]int // source port -> flows using it
	tuples    map[fiveTuple][]*flow
	pathFlows []int
	pathBytes []uint64
	bytes     uint64
}

func newSpread(paths int) *spread {
	return &spread{
		portFlows: make(map[uint16]int),
		tuples:    make(map[fiveTuple][]*flow),
		pathFlows: make([]int, paths),
		pathBytes: make([]uint64, paths),
	}
}

// add accounts for one RoCEv2 flow.
func (s *spread) add(f *flow) {
	s.flows++
	for _, sp := range f.srcPorts() {
		s.portFlows[sp]++
	}
	f.eachPort(func(k uint32, n uint64) {
		t := fiveTuple{src: f.key.src, dst: f.key.dst, srcPort: uint16(k >> 16), dstPort: uint16(k)}
		if l := s.tuples[t]; len(l) == 0 || l[len(l)-1] != f {
			s.tuples[t] = append(l, f)
		}
		p := ecmpPath(t, len(s.pathFlows))
		s.pathFlows[p]++
		s.pathBytes[p] += n
		s.bytes += n
	})
}

// colliding returns the number of flows sharing a 5-tuple with another.
func (s *spread) colliding() int {
	hit := make(map[*flow]bool)
	for _, fl := range s.tuples {
		if len(fl) > 1 {
			for _, f := range fl {
				hit[f] = true
			}
		}
	}
	return len(hit)
}

// imbalance returns the bytes of the busiest path over the mean of all.
func (s *spread) imbalance() float64 {
	if s.bytes == 0 || len(s.pathBytes) == 0 {
		return 0
	}
	mean := float64(s.bytes) / float64(len(s.pathBytes))
	return float64(slices.Max(s.pathBytes)) / mean
}

// gsiQP is the General Services QP: connection management MADs go to it,
// typically from one fixed source port. It is left out of the ECMP warnings
// (not of the measures), which are about the QPs that carry data.
const gsiQP = 1

// ecmp measures the spread of the RoCEv2 flows, overall and per host pair,
// and explains poor spreads in plain words.
func (a *Analyzer) ecmp() (ECMPReport, []string) {
	paths := a.opt.ECMPPaths
	all := newSpread(paths)
	pairs := make([]*hostPair, 0, len(a.pairs))
	for _, hp := range a.pairs {
		if hp.key.version == 2 {
			pairs = append(pairs, hp)
		}
	}
	slices.SortFunc(pairs, func(x, y *hostPair) int {
		if c := x.key.src.Compare(y.key.src); c != 0 {
			return c
		}
		return x.key.dst.Compare(y.key.dst)
	})
	rep := ECMPReport{Paths: paths, HostPairs: []HostPairECMP{}}
	var warnings []string
	for _, hp := range pairs {
		s := newSpread(paths)
		data := newSpread(paths)
		for _, f := range hp.flows {
			s.add(f)
			all.add(f)
			if f.key.qp != gsiQP {
				data.add(f)
			}
		}
		rep.HostPairs = append(rep.HostPairs, HostPairECMP{
			SrcIP:            hp.key.src,
			DstIP:            hp.key.dst,
			Flows:            s.flows,
			DistinctSrcPorts: len(s.portFlows),
			FlowEntropyBits:  entropyBits(s.portFlows),
			MaxEntropyBits:   log2Flows(s.flows),
			CollidingFlows:   s.colliding(),
			Bytes:            s.bytes,
			PathImbalance:    s.imbalance(),
		})
		if w := data.warning(hp.key.src, hp.key.dst); w != "" {
			warnings = append(warnings, w)
		}
	}
	rep.Flows = all.flows
	rep.DistinctSrcPorts = len(all.portFlows)
	rep.FlowEntropyBits = entropyBits(all.portFlows)
	rep.MaxEntropyBits = log2Flows(all.flows)
	rep.CollidingFlows = all.colliding()
	rep.PathFlows = all.pathFlows
	rep.PathBytes = all.pathBytes
	rep.PathImbalance = all.imbalance()
	return rep, warnings
}

// warning describes, for the flows from src to dst in s, QPs that ECMP
// cannot tell apart; "" when there are none.
func (s *spread) warning(src, dst netip.Addr) string {
	n := s.colliding()
	if s.flows < 2 || n == 0 {
		return ""
	}
	if len(s.portFlows) == 1 {
		var port uint16
		for p := range s.portFlows {
			port = p
		}
		return fmt.Sprintf("all %d QPs between %s and %s use UDP source port %d: ECMP sends them all down one path",
			s.flows, src, dst, port)
	}
	return fmt.Sprintf("%d of %d QPs between %s and %s share their UDP source port with another QP: ECMP cannot separate them",
		n, s.flows, src, dst)
}
