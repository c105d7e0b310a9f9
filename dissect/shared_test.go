package dissect

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/bits"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"roce-inspect/capture"
	"roce-inspect/internal/testref"
)

// decoded is what the dissector made of one frame.
type decoded struct {
	kind      Kind
	bth       bool
	opcode    uint8
	destQP    uint32
	psn       uint32
	icrc      ICRCVerdict
	icrcWire  uint32 // the ICRC bytes read in wire order, as Wireshark shows them
	hasICRC   bool
	malformed string
}

// decodeFile decodes every frame of a capture file.
func decodeFile(t *testing.T, path string) []decoded {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d := NewDecoder()
	var (
		f   capture.Frame
		p   Packet
		out []decoded
	)
	for {
		err := r.Next(&f)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		k := d.Decode(&f, &p)
		out = append(out, decoded{
			kind: k, bth: len(p.BTH.Contents) != 0, opcode: uint8(p.BTH.Opcode),
			destQP: p.BTH.DestQP, psn: p.BTH.PSN, icrc: p.ICRC, malformed: p.Malformed,
			icrcWire: bits.ReverseBytes32(p.ICRCFound), hasICRC: p.ICRC != ICRCUnverifiable,
		})
	}
}

// TestSharedICRCVerdicts checks the ICRC verdict counts of every reference
// capture against the counts its README gives, which were computed
// independently of this project.
func TestSharedICRCVerdicts(t *testing.T) {
	shared := testref.SharedCaptures(t)
	// frames, RoCE packets, good, bad, unverifiable: from the captures'
	// README table.
	want := []struct {
		file                                  string
		frames, roce, good, bad, unverifiable int
	}{
		{"real/mlx-rocev2.pcap", 708, 708, 708, 0, 0},
		{"real/mlx-rocev2-2.pcap", 641, 641, 641, 0, 0},
		{"real/mlx-rocev1.pcap", 2468, 2468, 2468, 0, 0},
		{"real/mlx-rocev1-v2-mixed.pcap", 624, 624, 624, 0, 0},
		{"real/mlx-send-bw.pcap", 45, 10, 10, 0, 0},
		{"real/ibdump-write.pcap", 17, 17, 17, 0, 0},
		{"real/ibdump-read.pcap", 16, 13, 13, 0, 0},
		{"real/ibdump-send.pcap", 9, 9, 9, 0, 0},
		{"real/nvmeof-discover.pcap", 65, 61, 61, 0, 0},
		{"real/nvmeof-discover2.pcap", 31, 31, 31, 0, 0},
		{"real/nvmeof-echo.pcap", 45, 45, 45, 0, 0},
		{"real/nvmeof-idle.pcap", 4, 4, 4, 0, 0},
		{"real/mlx5-dc.pcap", 19, 19, 0, 19, 0},
		{"real/mlx5-dc-2.pcap", 29, 29, 0, 29, 0},
		{"real/mlx5-rc-mirror.pcap", 21, 21, 0, 21, 0},
		{"real/mlx5-uc-sg.pcap", 17, 17, 0, 17, 0},
		{"real/nccl-uc-truncated.pcap", 520, 509, 0, 20, 489},
		{"real/rxe-read-request.pcap", 1, 1, 1, 0, 0},
		{"vectors/vectors.pcap", 6, 6, 5, 1, 0},
		{"vectors/ops.pcap", 9, 9, 9, 0, 0},
	}
	for _, w := range want {
		t.Run(w.file, func(t *testing.T) {
			frames := decodeFile(t, filepath.Join(shared, w.file))
			var roce, verdicts [3]int
			for _, d := range frames {
				if d.kind == RoCE {
					roce[0]++
					verdicts[d.icrc]++
				}
			}
			got := [5]int{len(frames), roce[0], verdicts[ICRCGood], verdicts[ICRCBad], verdicts[ICRCUnverifiable]}
			exp := [5]int{w.frames, w.roce, w.good, w.bad, w.unverifiable}
			if got != exp {
				t.Errorf("frames, RoCE, good, bad, unverifiable = %v, want %v", got, exp)
			}
		})
	}
}

// TestSharedAgainstTshark checks, for every frame of every reference
// capture, that the frames tshark decodes as InfiniBand are the ones the
// dissector takes as RoCE, with the same opcode, destination QP and PSN.
func TestSharedAgainstTshark(t *testing.T) {
	shared := testref.SharedCaptures(t)
	testref.Tshark(t)
	files, err := filepath.Glob(filepath.Join(shared, "*", "*.pcap"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures under %s: %v", shared, err)
	}
	for _, file := range files {
		rel, _ := filepath.Rel(shared, file)
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			crossCheck(t, file)
		})
	}
}

// TestTestdataAgainstTshark runs the same cross-check on the writer-made
// captures in testdata: tshark must read what the writer meant, and so must
// the dissector.
func TestTestdataAgainstTshark(t *testing.T) {
	testref.Tshark(t)
	files, err := filepath.Glob(filepath.Join("..", "testdata", "*.pcap"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures in testdata: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			crossCheck(t, file)
		})
	}
}

// crossCheck compares the dissector with tshark frame by frame: the frames
// tshark decodes as InfiniBand are the ones taken as RoCE, with the same
// opcode, destination QP, PSN and ICRC bytes.
func crossCheck(t *testing.T, file string) {
	ours := decodeFile(t, file)
	theirs := tsharkBTH(t, file)
	if len(theirs) != len(ours) {
		t.Fatalf("tshark read %d frames, we read %d", len(theirs), len(ours))
	}
	for i, th := range theirs {
		o := ours[i]
		if th.bth != (o.kind == RoCE && o.bth) {
			t.Errorf("frame %d: tshark decodes a BTH: %v; we do: %v (kind %d, malformed %q)", i+1, th.bth, o.bth, o.kind, o.malformed)
			continue
		}
		if th.bth && (th.opcode != o.opcode || th.destQP != o.destQP || th.psn != o.psn) {
			t.Errorf("frame %d: tshark opcode %d QP %#x PSN %d; we %d %#x %d", i+1, th.opcode, th.destQP, th.psn, o.opcode, o.destQP, o.psn)
		}
		// Wireshark shows the ICRC trailer it found; where we could
		// check it, we must have read the same four bytes.
		if th.hasICRC && o.hasICRC && th.icrcWire != o.icrcWire {
			t.Errorf("frame %d: tshark ICRC %#08x, we read %#08x", i+1, th.icrcWire, o.icrcWire)
		}
	}
}

// tsharkBTH runs tshark over a file and returns its BTH fields per frame.
func tsharkBTH(t *testing.T, file string) []decoded {
	t.Helper()
	cmd := exec.Command("tshark", "-n", "-r", file, "-T", "fields", "-E", "separator=/t",
		"-e", "frame.number", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn", "-e", "infiniband.invariant.crc")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v: %s", err, stderr.String())
	}
	var frames []decoded
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 5 {
			t.Fatalf("tshark line %q: want 5 fields", sc.Text())
		}
		var d decoded
		if f[1] != "" {
			// A frame with several BTHs (never in these captures)
			// would list them comma-separated; take the first.
			op, err1 := strconv.ParseUint(first(f[1]), 0, 8)
			qp, err2 := strconv.ParseUint(first(f[2]), 0, 24)
			psn, err3 := strconv.ParseUint(first(f[3]), 0, 24)
			if err := errors.Join(err1, err2, err3); err != nil {
				t.Fatalf("tshark line %q: %v", sc.Text(), err)
			}
			d = decoded{bth: true, opcode: uint8(op), destQP: uint32(qp), psn: uint32(psn)}
			if f[4] != "" {
				crc, err := strconv.ParseUint(first(f[4]), 0, 32)
				if err != nil {
					t.Fatalf("tshark line %q: %v", sc.Text(), err)
				}
				d.icrcWire, d.hasICRC = uint32(crc), true
			}
		}
		frames = append(frames, d)
	}
	return frames
}

func first(s string) string {
	if i := strings.IndexByte(s, ','); i >= 0 {
		return s[:i]
	}
	return s
}
