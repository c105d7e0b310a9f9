package capture

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
)

// source turns the bytes of a file into a Reader in one of the ways a capture
// can arrive: whole in memory, in dribbles like a pipe, compressed, or
// through a window much smaller than its records.
type source struct {
	name string
	open func(t *testing.T, b []byte) (*Reader, error)
}

func sources() []source {
	return []source{
		{"memory", func(t *testing.T, b []byte) (*Reader, error) {
			return NewReader(bytes.NewReader(b), "mem")
		}},
		{"one byte per read", func(t *testing.T, b []byte) (*Reader, error) {
			return NewReader(iotest.OneByteReader(bytes.NewReader(b)), "mem")
		}},
		{"os pipe", func(t *testing.T, b []byte) (*Reader, error) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				pw.Write(b)
				pw.Close()
			}()
			t.Cleanup(func() { pr.Close() })
			r, err := NewReader(pr, "pipe")
			if err == nil && r.Size() != -1 {
				t.Errorf("Size of a pipe = %d, want -1", r.Size())
			}
			return r, err
		}},
		{"gzip", func(t *testing.T, b []byte) (*Reader, error) {
			return NewReader(bytes.NewReader(gzipped(t, b)), "mem")
		}},
		{"gzip one byte per read", func(t *testing.T, b []byte) (*Reader, error) {
			return NewReader(iotest.OneByteReader(bytes.NewReader(gzipped(t, b))), "mem")
		}},
		{"64-byte window", func(t *testing.T, b []byte) (*Reader, error) {
			return newReader(bytes.NewReader(b), "mem", 64)
		}},
		{"64-byte window, halves", func(t *testing.T, b []byte) (*Reader, error) {
			return newReader(iotest.HalfReader(bytes.NewReader(b)), "mem", 64)
		}},
		{"gzip 64-byte window", func(t *testing.T, b []byte) (*Reader, error) {
			return newReader(bytes.NewReader(gzipped(t, b)), "mem", 64)
		}},
	}
}

// compareFrames reports every difference between two frame lists.
func compareFrames(t *testing.T, gotFrames, want []got) {
	t.Helper()
	if len(gotFrames) != len(want) {
		t.Errorf("read %d frames, want %d", len(gotFrames), len(want))
	}
	for i := range min(len(gotFrames), len(want)) {
		g, w := gotFrames[i], want[i]
		if !bytes.Equal(g.Data, w.Data) {
			t.Errorf("frame %d: data differs (got %d bytes, want %d)", i+1, len(g.Data), len(w.Data))
		}
		if g.CapLen != len(g.Data) {
			t.Errorf("frame %d: CapLen %d but %d bytes of data", i+1, g.CapLen, len(g.Data))
		}
		g.Data, w.Data = nil, nil
		if g.Timestamp != w.Timestamp || g.CapLen != w.CapLen || g.Len != w.Len ||
			g.LinkType != w.LinkType || g.Index != w.Index || g.Offset != w.Offset || g.Interface != w.Interface {
			t.Errorf("frame %d:\n got %+v\nwant %+v", i+1, g, w)
		}
	}
}

func TestPcapRoundTrip(t *testing.T) {
	// ts values with digits below the microsecond, to show the truncation
	// of microsecond files.
	type in struct {
		ts      int64
		data    []byte
		origLen int
	}
	frames := []in{
		{1_700_000_000_123_456_789, u8s(1, 60), 0},
		{1_700_000_000_123_457_001, nil, 0},                // empty frame
		{1_700_000_001_000_000_999, u8s(7, 100), 1500},     // cut by the capture
		{0, u8s(9, 1), 0},                                  // the epoch
		{4_294_967_295_999_999_999, u8s(3, 9000), 0},       // last representable ns
		{1_700_000_002_500_000_000, u8s(5, 300), 100},      // orig below data: raised
		{1_700_000_003_000_000_000, u8s(11, 70000), 70000}, // larger than the windows
	}
	for _, nano := range []bool{false, true} {
		var buf bytes.Buffer
		w, err := NewPcapWriter(&buf, 1, 0, nano)
		if err != nil {
			t.Fatal(err)
		}
		var want []got
		off := int64(24)
		for i, fr := range frames {
			if err := w.WriteFrame(fr.ts, fr.data, fr.origLen); err != nil {
				t.Fatal(err)
			}
			ts := fr.ts
			if !nano {
				ts -= ts % 1000
			}
			want = append(want, got{fr.data, ts, len(fr.data), max(fr.origLen, len(fr.data)), 1, i + 1, off, 0})
			off += 16 + int64(len(fr.data))
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		file := buf.Bytes()
		wantFormat := map[bool]string{false: "pcap", true: "pcap-ns"}[nano]
		for _, src := range sources() {
			t.Run(wantFormat+"/"+src.name, func(t *testing.T) {
				r, err := src.open(t, file)
				if err != nil {
					t.Fatal(err)
				}
				format := wantFormat
				if bytes.Contains([]byte(src.name), []byte("gzip")) {
					format += "+gzip"
				}
				if r.Format() != format {
					t.Errorf("Format() = %q, want %q", r.Format(), format)
				}
				frames, err := readAll(r)
				if err != io.EOF {
					t.Fatalf("read ended with %v, want io.EOF", err)
				}
				compareFrames(t, frames, want)
			})
		}
	}
}

func TestPcapWriterSnapLen(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewPcapWriter(&buf, 101, 64, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFrame(5_000_000_000, u8s(0, 100), 0); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	frames, err := readBytes(buf.Bytes())
	if err != io.EOF {
		t.Fatal(err)
	}
	compareFrames(t, frames, []got{{u8s(0, 64), 5_000_000_000, 64, 100, 101, 1, 24, 0}})
}

func TestWriterRejects(t *testing.T) {
	pw, _ := NewPcapWriter(io.Discard, 1, 0, true)
	ngw, _ := NewPcapngWriter(io.Discard, []Interface{{LinkType: 1}})
	tests := []struct {
		name string
		err  error
	}{
		{"pcap negative timestamp", pw.WriteFrame(-1, nil, 0)},
		{"pcap timestamp after 2106", pw.WriteFrame(4_294_967_296_000_000_000, nil, 0)},
		{"pcapng negative timestamp", ngw.WriteFrame(0, -5, nil, 0)},
		{"pcapng unknown interface", ngw.WriteFrame(1, 0, nil, 0)},
		{"pcapng negative interface", ngw.WriteFrame(-1, 0, nil, 0)},
		{"pcapng stats unknown interface", ngw.WriteStats(2, 0, 1, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, ErrInvalidFrame) {
				t.Errorf("got %v, want ErrInvalidFrame", tt.err)
			}
		})
	}
	ctor := []struct {
		name string
		err  error
	}{
		{"pcap negative snap length", func() error { _, err := NewPcapWriter(io.Discard, 1, -1, false); return err }()},
		{"pcap snap length over the limit", func() error { _, err := NewPcapWriter(io.Discard, 1, MaxCapLen+1, false); return err }()},
		{"pcapng 17-bit link type", func() error { _, err := NewPcapngWriter(io.Discard, []Interface{{LinkType: 1 << 16}}); return err }()},
		{"pcapng negative snap length", func() error { _, err := NewPcapngWriter(io.Discard, []Interface{{SnapLen: -1}}); return err }()},
	}
	for _, tt := range ctor {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestPcapngRoundTrip(t *testing.T) {
	ifaces := []Interface{
		{Name: "eth0", LinkType: 1},
		{Name: "roce-raw-ip", LinkType: 101, SnapLen: 64}, // name needs padding
	}
	var buf bytes.Buffer
	w, err := NewPcapngWriter(&buf, ifaces)
	if err != nil {
		t.Fatal(err)
	}
	// Block sizes by the specification: SHB 28; IDB 20 + if_name
	// (4 + padded name) + if_tsresol 8 + end 4; EPB 32 + padded data;
	// ISB 52.
	off := int64(28 + (20 + 4 + 4 + 8 + 4) + (20 + 4 + 12 + 8 + 4))
	var want []got
	type in struct {
		iface   int
		ts      int64
		data    []byte
		origLen int
	}
	frames := []in{
		{0, 1_700_000_000_123_456_789, u8s(1, 61), 0},
		{1, 1_700_000_000_223_456_789, u8s(2, 100), 0}, // cut to 64
		{0, 0, nil, 0},
		{1, 1, u8s(4, 3), 9},
		{0, 9_223_372_036_854_775_807, u8s(5, 70001), 0}, // largest int64 ns
	}
	for i, fr := range frames {
		if i == 2 {
			if err := w.WriteStats(1, 1_700_000_000_300_000_000, 10, 2); err != nil {
				t.Fatal(err)
			}
			off += 52
		}
		if err := w.WriteFrame(fr.iface, fr.ts, fr.data, fr.origLen); err != nil {
			t.Fatal(err)
		}
		capLen := len(fr.data)
		if s := ifaces[fr.iface].SnapLen; s > 0 {
			capLen = min(capLen, s)
		}
		want = append(want, got{fr.data[:capLen], fr.ts, capLen, max(fr.origLen, len(fr.data)),
			ifaces[fr.iface].LinkType, i + 1, off, fr.iface})
		off += 32 + int64((capLen+3)&^3)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != off {
		t.Fatalf("file is %d bytes, the block sizes add up to %d", buf.Len(), off)
	}
	for _, src := range sources() {
		t.Run(src.name, func(t *testing.T) {
			r, err := src.open(t, buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			frames, err := readAll(r)
			if err != io.EOF {
				t.Fatalf("read ended with %v, want io.EOF", err)
			}
			compareFrames(t, frames, want)
		})
	}
}

// TestHandBuiltPcap reads pcap files written byte by byte in both byte
// orders and both resolutions.
func TestHandBuiltPcap(t *testing.T) {
	tests := []struct {
		name   string
		be     bool
		nano   bool
		format string
	}{
		{"little-endian microseconds", false, false, "pcap"},
		{"little-endian nanoseconds", false, true, "pcap-ns"},
		{"big-endian microseconds", true, false, "pcap"},
		{"big-endian nanoseconds", true, true, "pcap-ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Link type 0x10000071: LINKTYPE_LINUX_SLL (113) with the
			// FCS-present bit set, which the reader must mask off.
			file := cat(
				pcapHeader(tt.be, tt.nano, 65535, 0x10000071),
				pcapRecord(tt.be, 1_600_000_000, 999_999, 20, 20, u8s(0, 20)),
				pcapRecord(tt.be, 4_000_000_000, 1, 3, 0, u8s(50, 3)), // orig 0: raised
				pcapRecord(tt.be, 7, 0, 0, 1514, nil),
			)
			mul := int64(1000)
			if tt.nano {
				mul = 1
			}
			want := []got{
				{u8s(0, 20), 1_600_000_000_000_000_000 + 999_999*mul, 20, 20, 113, 1, 24, 0},
				{u8s(50, 3), 4_000_000_000_000_000_000 + 1*mul, 3, 3, 113, 2, 24 + 36, 0},
				{nil, 7_000_000_000, 0, 1514, 113, 3, 24 + 36 + 19, 0},
			}
			r, err := NewReader(bytes.NewReader(file), "mem")
			if err != nil {
				t.Fatal(err)
			}
			if r.Format() != tt.format {
				t.Errorf("Format() = %q, want %q", r.Format(), tt.format)
			}
			frames, err := readAll(r)
			if err != io.EOF {
				t.Fatalf("got %v, want io.EOF", err)
			}
			compareFrames(t, frames, want)
		})
	}
}

// ngFeatureFile builds a pcapng file of three sections that uses every block
// type and timestamp option the reader handles, and returns it with the
// frames a correct reader delivers. The expected timestamps are worked out by
// hand in the comments.
func ngFeatureFile() ([]byte, []got) {
	var file []byte
	var want []got
	add := func(b []byte) int64 {
		off := int64(len(file))
		file = append(file, b...)
		return off
	}
	le, be := false, true

	// Section 1, little-endian.
	add(ngSHB(le))
	// Interface 0: Ethernet, microseconds (if_tsresol 6).
	add(ngIDB(le, 1, 0, ngOpt(le, 9, []byte{6})))
	// Name resolution: one IPv4 record (10.0.0.1 "host") and the end
	// record.
	add(ngBlock(le, 4, []byte{1, 0, 9, 0, 10, 0, 0, 1, 'h', 'o', 's', 't', 0, 0, 0, 0, 0, 0, 0, 0}))
	// Interface 1: raw IP, snap 128, nanoseconds, if_tsoffset 10 s,
	// with an if_name option first to be skipped.
	tsoff := make([]byte, 8)
	order(le).PutUint64(tsoff, 10)
	add(ngIDB(le, 101, 128, ngOpt(le, 2, []byte("ib0")), ngOpt(le, 9, []byte{9}), ngOpt(le, 14, tsoff)))
	// 1_700_000_000_123_456 us = 1_700_000_000_123_456_000 ns.
	off := add(ngEPB(le, 0, 1_700_000_000_123_456, 61, 61, u8s(1, 61)))
	want = append(want, got{u8s(1, 61), 1_700_000_000_123_456_000, 61, 61, 1, 1, off, 0})
	add(ngBlock(le, 5, make([]byte, 12))) // interface statistics
	// 1_700_000_000_987_654_321 ns + 10 s of if_tsoffset.
	off = add(ngEPB(le, 1, 1_700_000_000_987_654_321, 40, 1000, u8s(2, 40)))
	want = append(want, got{u8s(2, 40), 1_700_000_010_987_654_321, 40, 1000, 101, 2, off, 1})
	add(ngBlock(le, 0x0a, make([]byte, 20)))      // decryption secrets
	add(ngBlock(le, 0x00000bad, make([]byte, 8))) // custom
	// Simple packet: interface 0 (snap 0 = unlimited), no timestamp.
	off = add(ngSPB(le, 70, u8s(3, 70)))
	want = append(want, got{u8s(3, 70), 0, 70, 70, 1, 3, off, 0})
	// Obsolete packet block on interface 1: 5 ns + 10 s.
	off = add(ngOPB(le, 1, 5, 4, 4, u8s(4, 4)))
	want = append(want, got{u8s(4, 4), 10_000_000_005, 4, 4, 101, 4, off, 1})
	add(ngBlock(le, 0x12345678, nil)) // unknown type, minimal length

	// Section 2, big-endian; its interfaces are 2 and 3 of the file.
	add(ngSHB(be))
	// Interface 0 (global 2): IPv4, if_tsresol 2^-10 (1/1024 s),
	// if_tsoffset -1 s.
	minus1 := make([]byte, 8)
	order(be).PutUint64(minus1, 0xffffffffffffffff)
	add(ngIDB(be, 228, 0, ngOpt(be, 9, []byte{0x80 | 10}), ngOpt(be, 14, minus1)))
	// Interface 1 (global 3): Ethernet, milliseconds, snap 16.
	add(ngIDB(be, 1, 16, ngOpt(be, 9, []byte{3})))
	// 5*1024 + 512 units of 1/1024 s = 5.5 s, less 1 s.
	off = add(ngEPB(be, 0, 5*1024+512, 8, 8, u8s(5, 8)))
	want = append(want, got{u8s(5, 8), 4_500_000_000, 8, 8, 228, 5, off, 2})
	// 1 unit of 1/1024 s = 976562.5 ns, truncated, less 1 s. (tshark
	// shows this time as "-1.000976562": -1 s plus 976562 ns.)
	off = add(ngEPB(be, 0, 1, 1, 1, []byte{0xee}))
	want = append(want, got{[]byte{0xee}, 976_562 - 1_000_000_000, 1, 1, 228, 6, off, 2})
	// 1_700_000_000_001 ms.
	off = add(ngEPB(be, 1, 1_700_000_000_001, 16, 60, u8s(6, 16)))
	want = append(want, got{u8s(6, 16), 1_700_000_000_001_000_000, 16, 60, 1, 7, off, 3})
	// Simple packet on interface 0 of this section (snap 0).
	off = add(ngSPB(be, 12, u8s(7, 12)))
	want = append(want, got{u8s(7, 12), 0, 12, 12, 228, 8, off, 2})

	// Section 3, little-endian again: a fresh interface list (global 4).
	add(ngSHB(le))
	add(ngIDB(le, 1, 16)) // no options: microseconds; snap 16
	off = add(ngEPB(le, 0, 1, 2, 2, []byte{0xaa, 0xbb}))
	want = append(want, got{[]byte{0xaa, 0xbb}, 1000, 2, 2, 1, 9, off, 4})
	// A simple packet of 20 bytes on the wire holds the first 16, the
	// interface's snap length.
	off = add(ngSPB(le, 20, u8s(8, 16)))
	want = append(want, got{u8s(8, 16), 0, 16, 20, 1, 10, off, 4})
	return file, want
}

func TestPcapngFeatures(t *testing.T) {
	file, want := ngFeatureFile()
	for _, src := range sources() {
		t.Run(src.name, func(t *testing.T) {
			r, err := src.open(t, file)
			if err != nil {
				t.Fatal(err)
			}
			frames, err := readAll(r)
			if err != io.EOF {
				t.Fatalf("read ended with %v, want io.EOF", err)
			}
			compareFrames(t, frames, want)
		})
	}
}

func TestHandBuiltPcapngBigEndian(t *testing.T) {
	file := cat(ngSHB(true), ngIDB(true, 1, 0), ngEPB(true, 0, 0x0000000100000002, 5, 9, u8s(1, 5)))
	// 0x100000002 us = 4294967298 us.
	want := []got{{u8s(1, 5), 4_294_967_298_000, 5, 9, 1, 1, 28 + 20, 0}}
	r, err := NewReader(bytes.NewReader(file), "mem")
	if err != nil {
		t.Fatal(err)
	}
	if r.Format() != "pcapng" {
		t.Errorf("Format() = %q", r.Format())
	}
	frames, err := readAll(r)
	if err != io.EOF {
		t.Fatal(err)
	}
	compareFrames(t, frames, want)
}

// TestLargeFrames reads frames larger than the default 1 MiB window.
func TestLargeFrames(t *testing.T) {
	big1, big3 := u8s(1, 3<<20+1), u8s(3, 5<<20)
	var buf bytes.Buffer
	w, err := NewPcapngWriter(&buf, []Interface{{LinkType: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range [][]byte{u8s(0, 100), big1, u8s(2, 60), big3, u8s(4, 1<<20), u8s(5, 10)} {
		if err := w.WriteFrame(0, 1, d, 0); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	var pbuf bytes.Buffer
	pw, err := NewPcapWriter(&pbuf, 1, MaxCapLen, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range [][]byte{u8s(0, 100), big1, u8s(2, 60), big3, u8s(4, 1<<20-16), u8s(5, 10)} {
		pw.WriteFrame(1, d, 0)
	}
	pw.Flush()
	wantLens := []int{100, len(big1), 60, len(big3), 1 << 20, 10}
	pcapLens := []int{100, len(big1), 60, len(big3), 1<<20 - 16, 10}
	for _, tt := range []struct {
		name string
		file []byte
		lens []int
	}{{"pcapng", buf.Bytes(), wantLens}, {"pcap", pbuf.Bytes(), pcapLens}} {
		t.Run(tt.name, func(t *testing.T) {
			frames, err := readBytes(tt.file)
			if err != io.EOF {
				t.Fatal(err)
			}
			if len(frames) != len(tt.lens) {
				t.Fatalf("%d frames, want %d", len(frames), len(tt.lens))
			}
			for i, f := range frames {
				if len(f.Data) != tt.lens[i] || f.Data[0] != byte(i) || f.Data[len(f.Data)-1] != byte(i)+byte(len(f.Data)-1) {
					t.Errorf("frame %d: %d bytes, want %d with the pattern intact", i+1, len(f.Data), tt.lens[i])
				}
			}
		})
	}
}

func TestStickyErrors(t *testing.T) {
	file := cat(pcapHeader(false, false, 65535, 1), pcapRecord(false, 1, 0, 4, 4, u8s(0, 4)))
	t.Run("EOF", func(t *testing.T) {
		r, _ := NewReader(bytes.NewReader(file), "mem")
		var f Frame
		if err := r.Next(&f); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := r.Next(&f); err != io.EOF {
				t.Fatalf("got %v, want io.EOF again", err)
			}
		}
	})
	t.Run("truncation", func(t *testing.T) {
		r, _ := NewReader(bytes.NewReader(file[:len(file)-1]), "mem")
		var f Frame
		first := r.Next(&f)
		if !errors.Is(first, ErrTruncated) {
			t.Fatalf("got %v, want ErrTruncated", first)
		}
		if again := r.Next(&f); again != first {
			t.Fatalf("second call returned %v, want the same error", again)
		}
	})
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := cat(pcapHeader(false, true, 65535, 1), pcapRecord(false, 1, 2, 3, 3, u8s(0, 3)))
	plain := filepath.Join(dir, "a.pcap")
	zipped := filepath.Join(dir, "a.pcap.gz")
	gz := gzipped(t, file)
	if err := os.WriteFile(plain, file, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(zipped, gz, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path   string
		size   int64
		format string
	}{
		{plain, int64(len(file)), "pcap-ns"},
		{zipped, int64(len(gz)), "pcap-ns+gzip"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			r, err := Open(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Name() != tt.path || r.Size() != tt.size || r.Format() != tt.format {
				t.Errorf("Name, Size, Format = %q, %d, %q; want %q, %d, %q",
					r.Name(), r.Size(), r.Format(), tt.path, tt.size, tt.format)
			}
			frames, err := readAll(r)
			if err != io.EOF || len(frames) != 1 || frames[0].Timestamp != 1_000_000_002 {
				t.Errorf("frames %+v, err %v", frames, err)
			}
			if r.Consumed() != tt.size {
				t.Errorf("Consumed() = %d at the end, want the file size %d", r.Consumed(), tt.size)
			}
			if err := r.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}

	t.Run("stdin", func(t *testing.T) {
		f, err := os.Open(plain)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		saved := os.Stdin
		os.Stdin = f
		defer func() { os.Stdin = saved }()
		r, err := Open("-")
		if err != nil {
			t.Fatal(err)
		}
		// Standard input redirected from a regular file has a size.
		if r.Name() != "stdin" || r.Size() != int64(len(file)) {
			t.Errorf("Name, Size = %q, %d", r.Name(), r.Size())
		}
		if frames, err := readAll(r); err != io.EOF || len(frames) != 1 {
			t.Errorf("%d frames, err %v", len(frames), err)
		}
		r.Close()
		// Close must leave standard input open.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Errorf("standard input was closed: %v", err)
		}
	})
}
