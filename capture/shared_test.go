package capture

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"roce-inspect/internal/testref"
)

// epochNs converts tshark's frame.time_epoch text ("1695804035.428757000")
// to nanoseconds without going through floating point.
func epochNs(t *testing.T, s string) int64 {
	t.Helper()
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 9 {
		t.Fatalf("bad epoch %q", s)
	}
	a, err1 := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad epoch %q", s)
	}
	return a*1e9 + b
}

// TestSharedCaptures reads every reference capture. The frame counts are the
// README's; the first and last timestamps are what
// `tshark -r F -T fields -e frame.time_epoch` prints for them. When capinfos
// is installed, its count is checked as well.
func TestSharedCaptures(t *testing.T) {
	dir := testref.SharedCaptures(t)
	capinfos, _ := exec.LookPath("capinfos")
	if capinfos == "" {
		t.Log("capinfos not installed: frame counts are checked against the README only")
	}
	tests := []struct {
		file        string
		frames      int
		first, last string
	}{
		{"real/mlx-rocev2.pcap", 708, "1695280510.874489000", "1695280510.875699000"},
		{"real/mlx-rocev2-2.pcap", 641, "1695280901.870730000", "1695280901.871918000"},
		{"real/mlx-rocev1.pcap", 2468, "1691462372.676394000", "1691462372.680536000"},
		{"real/mlx-rocev1-v2-mixed.pcap", 624, "1695280113.817713000", "1695280113.818966000"},
		{"real/mlx-send-bw.pcap", 45, "1695610854.358842000", "1695610854.381792000"},
		{"real/ibdump-write.pcap", 17, "1695800540.094391000", "1695800540.126821000"},
		{"real/ibdump-read.pcap", 16, "1695804035.428757000", "1695804036.337279000"},
		{"real/ibdump-send.pcap", 9, "1695809191.659571000", "1695809191.669768000"},
		{"real/nvmeof-discover.pcap", 65, "1487678062.290277000", "1487678250.021025000"},
		{"real/nvmeof-discover2.pcap", 31, "1610460788.385480000", "1610460798.894337000"},
		{"real/nvmeof-echo.pcap", 45, "1695783643.887653000", "1695783681.098285000"},
		{"real/nvmeof-idle.pcap", 4, "1695780536.049302000", "1695780536.049304000"},
		{"real/mlx5-dc.pcap", 19, "1750822807.234689000", "1750822807.234708000"},
		{"real/mlx5-dc-2.pcap", 29, "1750822830.851669000", "1750822830.851766000"},
		{"real/mlx5-rc-mirror.pcap", 21, "1750823433.356028000", "1750823433.356060000"},
		{"real/mlx5-uc-sg.pcap", 17, "1752131078.418825000", "1752131078.418853000"},
		{"real/nccl-uc-truncated.pcap", 520, "1754379714.056366000", "1754379714.195599000"},
		{"real/rxe-read-request.pcap", 1, "0.000000000", "0.000000000"},
		{"vectors/vectors.pcap", 6, "1000.000000000", "1005.000000000"},
		{"vectors/ops.pcap", 9, "1796037832.199699000", "1796037832.204833000"},
	}
	countRE := regexp.MustCompile(`(?m)^Number of packets:\s+(\d+)\s*$`)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			frames, err := readAll(r)
			if err != io.EOF {
				t.Fatalf("read ended with %v after %d frames", err, len(frames))
			}
			if len(frames) != tt.frames {
				t.Errorf("%d frames, the README says %d", len(frames), tt.frames)
			}
			if len(frames) > 0 {
				if got, want := frames[0].Timestamp, epochNs(t, tt.first); got != want {
					t.Errorf("first timestamp %d, tshark says %d", got, want)
				}
				if got, want := frames[len(frames)-1].Timestamp, epochNs(t, tt.last); got != want {
					t.Errorf("last timestamp %d, tshark says %d", got, want)
				}
			}
			for _, f := range frames {
				if f.LinkType != 1 || f.CapLen > f.Len || f.Interface != 0 {
					t.Errorf("frame %d: link type %d, %d of %d bytes, interface %d",
						f.Index, f.LinkType, f.CapLen, f.Len, f.Interface)
					break
				}
			}
			if r.Consumed() != r.Size() {
				t.Errorf("consumed %d of %d bytes", r.Consumed(), r.Size())
			}
			if capinfos != "" {
				out, err := exec.Command(capinfos, "-c", "-M", path).Output()
				if err != nil {
					t.Fatalf("capinfos: %v", err)
				}
				m := countRE.FindSubmatch(out)
				if m == nil {
					t.Fatalf("no packet count in capinfos output %q", out)
				}
				if n, _ := strconv.Atoi(string(m[1])); n != len(frames) {
					t.Errorf("%d frames, capinfos counts %d", len(frames), n)
				}
			}

			// The same file gzipped gives the same frames.
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			zr, err := NewReader(bytes.NewReader(gzipped(t, raw)), "gz")
			if err != nil {
				t.Fatal(err)
			}
			zframes, err := readAll(zr)
			if err != io.EOF {
				t.Fatalf("gzipped: read ended with %v", err)
			}
			compareFrames(t, zframes, frames)
		})
	}
}

// TestWrittenFilesReadByTshark checks the writers' output with an
// independent reader when tshark is installed.
func TestWrittenFilesReadByTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed")
	}
	if testing.Short() {
		t.Skip("runs tshark; skipped in short mode")
	}
	dir := t.TempDir()
	type frame struct {
		iface int
		ts    int64
		data  []byte
		orig  int
	}
	frames := []frame{
		{0, 1_700_000_000_123_456_789, u8s(1, 61), 0},
		{1, 1_700_000_000_223_456_789, u8s(2, 100), 0},
		{0, 1_700_000_001_000_000_001, u8s(3, 7), 1500},
	}
	write := func(name string, fn func(f *os.File) error) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name string
		path string
		want string // tshark fields: number, epoch, cap_len, len, interface
	}{
		{"pcap microseconds", write("us.pcap", func(f *os.File) error {
			w, err := NewPcapWriter(f, 1, 0, false)
			if err != nil {
				return err
			}
			for _, fr := range frames {
				w.WriteFrame(fr.ts, fr.data, fr.orig)
			}
			return w.Flush()
		}), "1\t1700000000.123456000\t61\t61\t\n" +
			"2\t1700000000.223456000\t100\t100\t\n" +
			"3\t1700000001.000000000\t7\t1500\t\n"},
		{"pcap nanoseconds", write("ns.pcap", func(f *os.File) error {
			w, err := NewPcapWriter(f, 1, 0, true)
			if err != nil {
				return err
			}
			for _, fr := range frames {
				w.WriteFrame(fr.ts, fr.data, fr.orig)
			}
			return w.Flush()
		}), "1\t1700000000.123456789\t61\t61\t\n" +
			"2\t1700000000.223456789\t100\t100\t\n" +
			"3\t1700000001.000000001\t7\t1500\t\n"},
		{"pcapng", write("a.pcapng", func(f *os.File) error {
			w, err := NewPcapngWriter(f, []Interface{{Name: "eth0", LinkType: 1}, {Name: "ib", LinkType: 101, SnapLen: 64}})
			if err != nil {
				return err
			}
			for i, fr := range frames {
				if i == 1 {
					w.WriteStats(1, fr.ts, 5, 1)
				}
				w.WriteFrame(fr.iface, fr.ts, fr.data, fr.orig)
			}
			return w.Flush()
		}), "1\t1700000000.123456789\t61\t61\t0\n" +
			"2\t1700000000.223456789\t64\t100\t1\n" +
			"3\t1700000001.000000001\t7\t1500\t0\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(tshark, "-r", tt.path, "-T", "fields", "-e", "frame.number",
				"-e", "frame.time_epoch", "-e", "frame.cap_len", "-e", "frame.len", "-e", "frame.interface_id").Output()
			if err != nil {
				t.Fatalf("tshark: %v", err)
			}
			if string(out) != tt.want {
				t.Errorf("tshark reads\n%s\nwant\n%s", out, tt.want)
			}
		})
	}
}
