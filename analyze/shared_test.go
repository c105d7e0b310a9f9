package analyze

import (
	"errors"
	"io"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"roce-inspect/capture"
	"roce-inspect/dissect"
	"roce-inspect/internal/testref"
)

// analyzeFile decodes a capture and analyzes every frame of it.
func analyzeFile(t *testing.T, path string, o Options) *Report {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d := dissect.NewDecoder()
	a := New(o)
	var (
		f capture.Frame
		p dissect.Packet
	)
	for {
		err := r.Next(&f)
		if errors.Is(err, io.EOF) {
			return a.Report()
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if d.Decode(&f, &p) == dissect.RoCE {
			a.Add(&p)
		} else {
			a.NotRoCE()
		}
	}
}

// TestSharedCaptures analyzes reference captures. The expected numbers come
// from the captures' README and from an independent pass over tshark 4.0's
// decoding of the same files (ip.src, ip.dst, bth.destqp, bth.opcode,
// bth.psn, frame.len), counting each flow's packets and checking that every
// request PSN is the previous plus one.
func TestSharedCaptures(t *testing.T) {
	shared := testref.SharedCaptures(t)
	type flowWant struct {
		src, dst      string
		qp            uint32
		packets       uint64
		bytes         uint64
		messages      uint64
		gaps, missing uint64
		first, last   uint32
	}
	tests := []struct {
		file        string
		packets     PacketCounts
		icrc        ICRCCounts
		ecn         ECNCounts
		flows       int
		gaps        uint64 // over all flows
		missing     uint64
		retrans     uint64
		flow        []flowWant
		hostPairs   int     // RoCEv2 host pairs
		entropy     float64 // of every host pair
		warnings    []string
		clean       bool
		problemsHas string
	}{
		{
			// ConnectX RC SENDs both ways between two hosts, 16 QPs each
			// way on 16 source ports. The capture misses packets: PSNs
			// jump forward in every flow, and nothing is ever NAKed or
			// resent.
			file:    "mlx-rocev2.pcap",
			packets: PacketCounts{Total: 708, RoCE: 708, RoCEv2: 708},
			icrc:    ICRCCounts{Good: 708},
			ecn:     ECNCounts{ECT0: 708},
			flows:   32, gaps: 311, missing: 6912,
			flow: []flowWant{
				{"172.17.242.47", "172.17.242.56", 340, 27, 26154, 5, 13, 224, 9007157, 9007404},
				{"172.17.242.56", "172.17.242.47", 285, 20, 18580, 5, 10, 134, 7259999, 7260149},
			},
			hostPairs: 2, entropy: 4,
			warnings:    []string{"most likely packets the capture missed"},
			problemsHas: "311 PSN gaps in 32 flows, 6912 PSNs missing",
		},
		{
			// NVMe over RoCE: CM to QP 1, SENDs, WRITEs and one READ of
			// 1024 bytes, all in order.
			file:    "nvmeof-discover.pcap",
			packets: PacketCounts{Total: 65, RoCE: 61, RoCEv2: 61, NotRoCE: 4},
			icrc:    ICRCCounts{Good: 61},
			ecn:     ECNCounts{NotECT: 5, ECT1: 56},
			flows:   4,
			flow: []flowWant{
				{"2.2.2.3", "2.2.2.1", 220, 30, 8184, 15, 0, 0, 97325, 97343},
				{"2.2.2.1", "2.2.2.3", 141, 26, 3296, 12, 0, 0, 14432175, 14432185},
			},
			// One port for both QPs of each direction: entropy 0, but one
			// of them is the CM's QP 1, so no warning.
			hostPairs: 2, entropy: 0,
			clean: true,
		},
		{
			// NCCL over UC, cut to 243 bytes: 22 QPs from .220 to .221
			// and 2 back, all from UDP source port 4791.
			file:      "nccl-uc-truncated.pcap",
			packets:   PacketCounts{Total: 520, RoCE: 509, RoCEv2: 509, NotRoCE: 11},
			icrc:      ICRCCounts{Bad: 20, Unverifiable: 489},
			ecn:       ECNCounts{ECT0: 509},
			flows:     24,
			hostPairs: 2, entropy: 0,
			warnings: []string{
				"489 packets were cut by the capture's snap length",
				"all 22 QPs between 10.22.116.220 and 10.22.116.221 use UDP source port 4791: ECMP sends them all down one path",
				"all 2 QPs between 10.22.116.221 and 10.22.116.220 use UDP source port 4791",
			},
			problemsHas: "20 packets have a bad ICRC",
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := analyzeFile(t, filepath.Join(shared, "real", tc.file), Options{})
			if r.Packets != tc.packets || r.ICRC != tc.icrc || r.ECN != tc.ecn {
				t.Errorf("packets %+v icrc %+v ecn %+v", r.Packets, r.ICRC, r.ECN)
			}
			if r.FlowCount != tc.flows {
				t.Errorf("%d flows, want %d", r.FlowCount, tc.flows)
			}
			var gaps, missing, retrans, unrecovered uint64
			for _, f := range r.Flows {
				if f.PSN != nil {
					gaps += f.PSN.Gaps
					missing += f.PSN.Missing
					retrans += f.PSN.Retransmitted
					unrecovered += f.PSN.Unrecovered
				}
			}
			// Nothing is resent, so every missing PSN stays missing.
			if gaps != tc.gaps || missing != tc.missing || retrans != tc.retrans || unrecovered != tc.missing {
				t.Errorf("gaps %d missing %d retransmitted %d unrecovered %d, want %d %d %d %d",
					gaps, missing, retrans, unrecovered, tc.gaps, tc.missing, tc.retrans, tc.missing)
			}
			for _, w := range tc.flow {
				src, dst := netip.MustParseAddr(w.src), netip.MustParseAddr(w.dst)
				f := flowOf(t, r, src, dst, w.qp)
				if f.Packets != w.packets || f.Bytes != w.bytes || f.Messages != w.messages {
					t.Errorf("%s: packets %d bytes %d messages %d, want %d %d %d",
						f.Key(), f.Packets, f.Bytes, f.Messages, w.packets, w.bytes, w.messages)
				}
				checkPSN(t, f, psnWant{gaps: w.gaps, missing: w.missing, unrecovered: w.missing, first: w.first, last: w.last})
			}
			if len(r.ECMP.HostPairs) != tc.hostPairs {
				t.Errorf("%d host pairs, want %d", len(r.ECMP.HostPairs), tc.hostPairs)
			}
			for _, hp := range r.ECMP.HostPairs {
				if hp.FlowEntropyBits != tc.entropy {
					t.Errorf("%s > %s: entropy %g, want %g", hp.SrcIP, hp.DstIP, hp.FlowEntropyBits, tc.entropy)
				}
			}
			if len(r.Warnings) != len(tc.warnings) {
				t.Errorf("warnings %q, want %d", r.Warnings, len(tc.warnings))
			}
			for _, w := range tc.warnings {
				if !slices.ContainsFunc(r.Warnings, func(s string) bool { return strings.Contains(s, w) }) {
					t.Errorf("no warning saying %q in %q", w, r.Warnings)
				}
			}
			if r.Clean() != tc.clean {
				t.Errorf("clean %v, problems %q", r.Clean(), r.Problems)
			}
			if tc.problemsHas != "" && !slices.ContainsFunc(r.Problems, func(s string) bool { return strings.Contains(s, tc.problemsHas) }) {
				t.Errorf("no problem saying %q in %q", tc.problemsHas, r.Problems)
			}
		})
	}
}
