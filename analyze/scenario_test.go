package analyze

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"roce-inspect/capture"
	"roce-inspect/dissect"
	"roce-inspect/gen"
)

// analyzeCapture runs a capture held in memory through the reader, the
// dissector and the analyzer, as the CLI does.
func analyzeCapture(t *testing.T, data []byte, opt Options) *Report {
	t.Helper()
	r, err := capture.NewReader(bytes.NewReader(data), "mem")
	if err != nil {
		t.Fatal(err)
	}
	a := New(opt)
	d := dissect.NewDecoder()
	var (
		f capture.Frame
		p dissect.Packet
	)
	for {
		err := r.Next(&f)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Decode(&f, &p) == dissect.RoCE {
			a.Add(&p)
		} else {
			a.NotRoCE()
		}
	}
	return a.Report()
}

// TestScenariosAgainstGroundTruth analyzes every capture-writer scenario and
// compares the report with what the writer knows it wrote: it simulates the
// requesters and responders, so it knows which packets it lost, resent,
// NAKed, CE-marked and corrupted, without any PSN arithmetic of the
// analyzer's.
func TestScenariosAgainstGroundTruth(t *testing.T) {
	for _, name := range gen.ScenarioNames() {
		for _, variant := range []string{"ipv4", "ipv6", "rocev1"} {
			cfg := gen.DefaultConfig()
			cfg.Scenario, cfg.Seed = name, 1
			switch variant {
			case "ipv6":
				cfg.IPv6 = true
			case "rocev1":
				cfg.RoCEv1 = true
			}
			if name == "bench" {
				cfg.Packets = 2000
			}
			if gen.Validate(cfg) != nil {
				continue // e.g. CNPs over RoCEv1
			}
			t.Run(name+"/"+variant, func(t *testing.T) {
				var buf bytes.Buffer
				st, err := gen.Write(&buf, cfg)
				if err != nil {
					t.Fatal(err)
				}
				checkScenarioShows(t, name, &st)
				r := analyzeCapture(t, buf.Bytes(), Options{})
				checkGroundTruth(t, r, &st)
			})
		}
	}
}

// checkScenarioShows makes sure a scenario holds what it exists for, so that
// agreeing with the ground truth is not agreeing on zero.
func checkScenarioShows(t *testing.T, name string, st *gen.Stats) {
	t.Helper()
	var shows bool
	switch name {
	case "loss-gbn":
		shows = st.LostCount > 0 && st.NAKs > 0 && st.Retransmitted > 0 && st.Unrecovered == 0
	case "loss-unrecovered":
		shows = st.Unrecovered > 0 && st.Retransmitted == 0
	case "rnr":
		shows = st.RNRNAKs > 0 && st.Retransmitted > 0
	case "ecn-cnp":
		shows = st.CEMarked > 0 && st.CNPs > 0
	case "bad-icrc":
		shows = st.BadICRCCount > 0
	case "rc-read":
		shows = st.ReadResponses > 0
	case "atomic":
		shows = st.AtomicACKs > 0
	case "ud":
		shows = st.UDSends > 0
	default:
		shows = st.Frames > 0
	}
	if !shows {
		t.Fatalf("the %s capture lacks what the scenario is for: %+v", name, st)
	}
}

func checkGroundTruth(t *testing.T, r *Report, st *gen.Stats) {
	t.Helper()
	frames := uint64(st.Frames)
	if r.Packets.Total != frames || r.Packets.RoCE != frames || r.Packets.Malformed != 0 {
		t.Errorf("packets %+v, want %d RoCE frames, none malformed", r.Packets, frames)
	}
	bad := uint64(st.BadICRCCount)
	if r.ICRC != (ICRCCounts{Good: frames - bad, Bad: bad}) {
		t.Errorf("icrc %+v, want %d good and %d bad", r.ICRC, frames-bad, bad)
	}
	if r.ECN.CE != uint64(st.CEMarked) || r.CNP != uint64(st.CNPs) {
		t.Errorf("CE %d CNP %d, want %d and %d", r.ECN.CE, r.CNP, st.CEMarked, st.CNPs)
	}
	if len(r.Flows) != len(st.Flows) {
		t.Errorf("%d flows, want %d", len(r.Flows), len(st.Flows))
	}
	var seqErr, rnr, retrans, missing, unrecovered uint64
	for _, gf := range st.Flows {
		f, ok := r.Flow(flowKeyString(gf.Src, gf.Dst, gf.DestQP, flowVersion(r)))
		if !ok {
			t.Errorf("flow %s > %s QP %#x missing from the report", gf.Src, gf.Dst, gf.DestQP)
			continue
		}
		if f.Packets != uint64(gf.Frames) || f.Bytes != uint64(gf.Bytes) {
			t.Errorf("%s: %d packets %d bytes, want %d and %d", f.Key(), f.Packets, f.Bytes, gf.Frames, gf.Bytes)
		}
		for op, n := range gf.Opcodes {
			if f.Opcodes[op.String()] != uint64(n) {
				t.Errorf("%s: %d %s, want %d", f.Key(), f.Opcodes[op.String()], op, n)
			}
		}
		if f.Transport != gf.Transport && !(gf.Transport == "RC" && f.Transport == "CNP") {
			t.Errorf("%s: transport %s, want %s", f.Key(), f.Transport, gf.Transport)
		}
		seqErr += f.NAKs.SeqErr
		rnr += f.NAKs.RNR
		if f.PSN != nil {
			retrans += f.PSN.Retransmitted
			missing += f.PSN.Missing
			unrecovered += f.PSN.Unrecovered
		}
	}
	if seqErr != uint64(st.NAKs) || rnr != uint64(st.RNRNAKs) {
		t.Errorf("NAKs: %d sequence error, %d RNR; want %d and %d", seqErr, rnr, st.NAKs, st.RNRNAKs)
	}
	if retrans != uint64(st.Retransmitted) {
		t.Errorf("%d retransmitted, want %d", retrans, st.Retransmitted)
	}
	if missing != uint64(st.LostCount) || unrecovered != uint64(st.Unrecovered) {
		t.Errorf("%d missing, %d unrecovered; want %d lost, %d never resent", missing, unrecovered, st.LostCount, st.Unrecovered)
	}
}

// flowVersion is the RoCE version of the report's flows (the writer makes
// captures of one version).
func flowVersion(r *Report) int {
	if r.Packets.RoCEv1 > 0 {
		return 1
	}
	return 2
}
