package analyze

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"roce-inspect/capture"
	"roce-inspect/dissect"
	"roce-inspect/internal/testref"
	"roce-inspect/layers"
)

// tsharkTally is what tshark's fields say of a capture: packets and opcode
// counts per flow, and ECN codepoints of the RoCEv2 packets.
type tsharkTally struct {
	flows map[string]map[string]uint64 // flow key -> opcode name -> count
	ecn   [4]uint64
}

// TestFlowsAgainstTshark reads each capture with tshark and checks the
// analyzer's flows (packets and opcode counts per source, destination and
// destination QP) and ECN counts against tshark's reading. Frames the
// dissector finds malformed are left out of both sides: the analyzer does
// not put them in flows, and the dissector is checked against tshark frame
// by frame elsewhere.
func TestFlowsAgainstTshark(t *testing.T) {
	testref.Tshark(t)
	files, _ := filepath.Glob(filepath.Join(testref.Testdata(t), "*.pcap"))
	if shared, ok := testref.HaveSharedCaptures(t); ok {
		more, _ := filepath.Glob(filepath.Join(shared, "*", "*.pcap"))
		files = append(files, more...)
	} else {
		t.Log("reference captures not found: checking testdata only")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			r := analyzeCapture(t, data, Options{})
			want := tsharkFlows(t, file, malformedFrames(t, data))
			if len(r.Flows) != len(want.flows) {
				t.Errorf("%d flows, tshark %d", len(r.Flows), len(want.flows))
			}
			for key, ops := range want.flows {
				f, ok := r.Flow(key)
				if !ok {
					t.Errorf("tshark flow %s missing", key)
					continue
				}
				var total uint64
				for name, n := range ops {
					total += n
					if f.Opcodes[name] != n {
						t.Errorf("%s: %d %s, tshark %d", key, f.Opcodes[name], name, n)
					}
				}
				if f.Packets != total {
					t.Errorf("%s: %d packets, tshark %d", key, f.Packets, total)
				}
			}
			got := [4]uint64{r.ECN.NotECT, r.ECN.ECT1, r.ECN.ECT0, r.ECN.CE}
			if got != want.ecn {
				t.Errorf("ECN not-ECT/ECT1/ECT0/CE %v, tshark %v", got, want.ecn)
			}
		})
	}
}

// malformedFrames returns the frame numbers the dissector finds malformed.
func malformedFrames(t *testing.T, data []byte) map[int]bool {
	t.Helper()
	rd, err := capture.NewReader(bytes.NewReader(data), "mem")
	if err != nil {
		t.Fatal(err)
	}
	d := dissect.NewDecoder()
	var (
		f   capture.Frame
		p   dissect.Packet
		bad = map[int]bool{}
	)
	for {
		err := rd.Next(&f)
		if errors.Is(err, io.EOF) {
			return bad
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.Decode(&f, &p) == dissect.RoCE && p.Malformed != "" {
			bad[f.Index] = true
		}
	}
}

// tsharkFlows tallies tshark's fields over a capture.
func tsharkFlows(t *testing.T, file string, skip map[int]bool) tsharkTally {
	t.Helper()
	fields := []string{"frame.number", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst",
		"infiniband.grh.sgid", "infiniband.grh.dgid", "infiniband.bth.opcode", "infiniband.bth.destqp",
		"ip.dsfield.ecn", "ipv6.tclass.ecn", "udp.dstport"}
	args := []string{"-n", "-r", file, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, err := exec.Command("tshark", args...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	tally := tsharkTally{flows: map[string]map[string]uint64{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		v := strings.Split(sc.Text(), "\t")
		if len(v) != len(fields) {
			t.Fatalf("tshark line %q", sc.Text())
		}
		frame, _ := strconv.Atoi(v[0])
		if v[7] == "" || skip[frame] {
			continue // not InfiniBand, or malformed
		}
		version := 2
		src, dst := v[1], v[2]
		switch {
		case v[5] != "":
			version, src, dst = 1, v[5], v[6]
		case src == "":
			src, dst = v[3], v[4]
		}
		op, err1 := strconv.ParseUint(v[7], 0, 8)
		qp, err2 := strconv.ParseUint(v[8], 0, 24)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("tshark line %q: %v", sc.Text(), err)
		}
		key := flowKeyString(netip.MustParseAddr(src), netip.MustParseAddr(dst), uint32(qp), version)
		if tally.flows[key] == nil {
			tally.flows[key] = map[string]uint64{}
		}
		tally.flows[key][layers.Opcode(op).String()]++
		if version == 2 {
			ecn := v[9]
			if ecn == "" {
				ecn = v[10]
			}
			n, err := strconv.ParseUint(ecn, 0, 2)
			if err != nil {
				t.Fatalf("tshark ECN %q in line %q", ecn, sc.Text())
			}
			tally.ecn[n]++
		}
	}
	return tally
}
