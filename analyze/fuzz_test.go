package analyze

import (
	"bytes"
	"encoding/json"
	"math"
	"net/netip"
	"testing"

	"roce-inspect/dissect"
	"roce-inspect/layers"
)

// fuzzHosts are the addresses fuzzed packets travel between; an IPv6 one
// exercises 16-byte hashing.
var fuzzHosts = [4]netip.Addr{hostA, hostB, hostC, netip.MustParseAddr("fd00::9")}

// fuzzPackets turns arbitrary bytes into packets, eight bytes each:
//
//	0    opcode
//	1-3  PSN
//	4    bits 0-1 ECN, 2 RoCEv1, 3 malformed, 4 FECN, 5 BECN, 6-7 source host
//	5    bits 0-2 QP, 3-4 ICRC verdict (3 is out of range), 5 AETH
//	     present, 6 RETH present, 7 destination host shifted by one
//	6    AETH syndrome
//	7    payload and DMA length scale, source port, timestamp jitter
func fuzzPackets(data []byte) []*dissect.Packet {
	var out []*dissect.Packet
	for i := 0; i+8 <= len(data); i += 8 {
		b := data[i : i+8]
		src := fuzzHosts[b[4]>>6]
		dst := fuzzHosts[(int(b[4]>>6)+1+int(b[5]>>7))%len(fuzzHosts)]
		p := &dissect.Packet{
			Frame:      i/8 + 1,
			Timestamp:  int64(i)*1000 - int64(b[7]>>6)*3000,
			Len:        int(b[7]) * 17,
			Version:    2,
			SrcIP:      src,
			DstIP:      dst,
			SrcPort:    49152 + uint16(b[7]&3),
			DstPort:    4791,
			ECN:        dissect.ECN(b[4] & 3),
			ICRC:       dissect.ICRCVerdict(b[5] >> 3 & 3),
			PayloadLen: 256 << (b[7] & 7) >> (b[7] >> 5 & 1),
		}
		if b[4]&4 != 0 {
			p.Version = 1
		}
		if b[4]&8 != 0 {
			p.Malformed = "fuzzed fault " + string(rune('a'+b[6]%3))
		}
		p.BTH.Opcode = layers.Opcode(b[0])
		p.BTH.PSN = uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		p.BTH.DestQP = uint32(b[5] & 7)
		p.BTH.FECN = b[4]&16 != 0
		p.BTH.BECN = b[4]&32 != 0
		p.BTH.PadCount = b[6] & 3
		if b[5]&32 != 0 {
			p.Headers |= layers.HasAETH
			p.AETH.Syndrome = b[6]
		}
		if b[5]&64 != 0 {
			p.Headers |= layers.HasRETH
			p.RETH.DMALength = uint32(b[7]) * uint32(b[6]) * 997
		}
		out = append(out, p)
	}
	return out
}

func FuzzAnalyzer(f *testing.F) {
	// Seeds: a clean RC exchange, a gap with go-back-N, a READ, CNPs.
	f.Add(uint8(0), uint8(0), []byte{
		0x0A, 0, 0, 10, 0x02, 0x01, 0, 0x20,
		0x0A, 0, 0, 11, 0x02, 0x01, 0, 0x20,
		0x11, 0, 0, 11, 0x42, 0x22, 0x1F, 0x02,
	})
	f.Add(uint8(1), uint8(2), []byte{
		0x04, 0, 0, 10, 0x02, 0x01, 0, 0x20,
		0x04, 0, 0, 14, 0x03, 0x01, 0, 0x20,
		0x11, 0, 0, 12, 0x42, 0x22, 0x60, 0x02,
		0x04, 0, 0, 12, 0x02, 0x01, 0, 0x20,
		0x04, 0, 0, 15, 0x02, 0x01, 0, 0x20,
		0x81, 0, 0, 0, 0x42, 0x02, 0, 0x02,
	})
	f.Add(uint8(0), uint8(1), []byte{
		0x0C, 0xFF, 0xFF, 0xFE, 0x02, 0x41, 0x40, 0xFF,
		0x0D, 0xFF, 0xFF, 0xFE, 0x42, 0x21, 0x00, 0x03,
		0x04, 0, 0, 5, 0x02, 0x01, 0, 0x20,
		0x64, 0x12, 0x34, 0x56, 0x03, 0x09, 0, 0x01,
	})
	f.Fuzz(func(t *testing.T, pmtuSel, rangesSel uint8, data []byte) {
		opt := Options{
			PMTU:             []int{0, 256, 1024, 4096, 1500}[int(pmtuSel)%5],
			ECMPPaths:        int(pmtuSel>>4) % 9,
			MaxMissingRanges: int(rangesSel % 5),
		}
		pkts := fuzzPackets(data)
		a := New(opt)
		var wellFormed uint64
		// Report a few times midway (not per packet: the fuzzer grows
		// inputs to thousands of packets).
		every := max(len(pkts)/4, 1)
		for i, p := range pkts {
			if i%7 == 6 {
				a.NotRoCE()
			}
			a.Add(p)
			if p.Malformed == "" {
				wellFormed++
			}
			if i%every == every-1 {
				a.Report() // reporting midway must not disturb anything
			}
		}
		r := a.Report()
		j1, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("report does not marshal: %v", err)
		}
		if j2, _ := json.Marshal(a.Report()); !bytes.Equal(j1, j2) {
			t.Fatal("two reports differ")
		}
		var packets uint64
		for _, fl := range r.Flows {
			packets += fl.Packets
			if s := fl.PSN; s != nil {
				if s.Unrecovered > s.Missing {
					t.Errorf("%s: unrecovered %d > missing %d", fl.Key(), s.Unrecovered, s.Missing)
				}
				if s.Gaps > s.Requests || s.Retransmitted > s.Requests || s.Gaps > s.Missing {
					t.Errorf("%s: %+v", fl.Key(), *s)
				}
				if (s.First == nil) != (s.Requests == 0) {
					t.Errorf("%s: first %v with %d requests", fl.Key(), s.First, s.Requests)
				}
			}
			if fl.DurationSeconds < 0 || fl.Gbps < 0 {
				t.Errorf("%s: duration %g gbps %g", fl.Key(), fl.DurationSeconds, fl.Gbps)
			}
		}
		if packets != wellFormed || r.Packets.RoCE != uint64(len(pkts)) || r.Packets.Malformed != uint64(len(pkts))-wellFormed {
			t.Errorf("flows hold %d packets, %d well-formed; counts %+v", packets, wellFormed, r.Packets)
		}
		// Every RoCE packet has a verdict, malformed ones included.
		if i := r.ICRC; i.Good+i.Bad+i.Unverifiable > r.Packets.RoCE {
			t.Errorf("icrc %+v for %d packets", i, r.Packets.RoCE)
		}
		e := r.ECMP
		if e.CollidingFlows > e.Flows || e.FlowEntropyBits < 0 ||
			e.FlowEntropyBits > math.Log2(float64(max(e.DistinctSrcPorts, 1)))+1e-9 {
			t.Errorf("ecmp %+v", e)
		}
		for _, c := range r.Congestion {
			if c.FirstCEToCNPMicros != nil && *c.FirstCEToCNPMicros < 0 {
				t.Errorf("negative CE to CNP delay in %+v", c)
			}
			if c.CNPMatched != (c.SenderQP != nil) {
				t.Errorf("matched %v with sender %v", c.CNPMatched, c.SenderQP)
			}
		}
	})
}
