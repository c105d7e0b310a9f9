package capture

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestChunksMatchNext checks the pieces API against Next on pcap files of
// both byte orders and timestamp resolutions and on pcapng files of both byte
// orders with enhanced, simple and obsolete packet blocks and interface
// statistics at the end: walking the records with RecordLen and Record
// gives every frame Next gives, field for field, and Resume at any record
// makes Next go on with the same frames, numbered and placed as before.
func TestChunksMatchNext(t *testing.T) {
	data := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 60+i*7) }
	const frames = 40
	for _, tc := range []struct {
		name     string
		be, nano bool
		ng       bool
	}{
		{"pcap-le-micro", false, false, false}, {"pcap-be-micro", true, false, false},
		{"pcap-le-nano", false, true, false}, {"pcap-be-nano", true, true, false},
		{"pcapng-le", false, false, true}, {"pcapng-be", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var file []byte
			var dataStart int
			if tc.ng {
				file = append(ngSHB(tc.be), ngIDB(tc.be, 1, 0, ngOpt(tc.be, 9, []byte{9}))...)
				file = append(file, ngIDB(tc.be, 101, 200)...)
				dataStart = len(file)
				for i := range frames {
					d := data(i)
					// Interface 0 counts nanoseconds, 1 microseconds.
					iface := uint32(i % 2)
					ts := uint64(1.7e18) + uint64(i)*1000
					if iface == 1 {
						ts = uint64(1.7e15) + uint64(i)
					}
					switch i % 4 {
					case 1:
						file = append(file, ngSPB(tc.be, uint32(len(d)), d)...)
					case 2:
						file = append(file, ngOPB(tc.be, uint16(iface), ts, uint32(len(d)), uint32(len(d)), d)...)
					default:
						file = append(file, ngEPB(tc.be, iface, ts, uint32(len(d)), uint32(len(d)+i%3), d)...)
					}
				}
				file = append(file, ngBlock(tc.be, 5, make([]byte, 12))...) // interface statistics
			} else {
				file = pcapHeader(tc.be, tc.nano, 65535, 1)
				dataStart = len(file)
				for i := range frames {
					d := data(i)
					file = append(file, pcapRecord(tc.be, uint32(1700000000+i), uint32(i*1000), uint32(len(d)), uint32(len(d)+i%3), d)...)
				}
			}
			path := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { r.Close() }()
			want, err := readAll(r)
			if err != io.EOF || len(want) != frames {
				t.Fatalf("%d frames, %v; want %d and EOF", len(want), err, frames)
			}
			r.Close()
			if r, err = Open(path); err != nil {
				t.Fatal(err)
			}
			c, ok := r.Chunks()
			if !ok {
				t.Fatal("Chunks: not ok")
			}
			if c.DataStart() != int64(dataStart) {
				t.Errorf("DataStart %d, want %d", c.DataStart(), dataStart)
			}
			if got := r.Consumed(); got != c.DataStart() {
				t.Errorf("Consumed %d after Chunks, want %d: the read-ahead counted", got, c.DataStart())
			}
			off := c.DataStart()
			for i, w := range want {
				if off != w.Offset {
					t.Fatalf("record %d at offset %d, Next says %d", i+1, off, w.Offset)
				}
				f, n, ok := readRecord(t, c, off)
				f.Index = w.Index
				if !ok || !reflect.DeepEqual(gotFrame(f), w) {
					t.Fatalf("record %d: %v, %+v; Next gave %+v", i+1, ok, gotFrame(f), w)
				}
				off += int64(n)
			}
			if int(off) < len(file) {
				// The statistics block is no record: Next reads it.
				if _, _, ok := readRecord(t, c, off); ok {
					t.Errorf("the block at %d, after the packets, taken as a record", off)
				}
			}
			for _, at := range []int{0, 1, 17, frames - 1} {
				if err := c.Resume(want[at].Offset, at); err != nil {
					t.Fatal(err)
				}
				for i := at; i < len(want); i++ {
					var f Frame
					if err := r.Next(&f); err != nil {
						t.Fatalf("resumed at %d: frame %d: %v", at, i+1, err)
					}
					if !reflect.DeepEqual(gotFrame(f), want[i]) {
						t.Fatalf("resumed at %d: frame %+v, want %+v", at, gotFrame(f), want[i])
					}
				}
				var f Frame
				if err := r.Next(&f); err != io.EOF {
					t.Fatalf("resumed at %d: after the last frame: %v, want EOF", at, err)
				}
			}
		})
	}
}

// readRecord reads the record at off with RecordLen and Record; ok is false
// when either refuses it.
func readRecord(t *testing.T, c *Chunks, off int64) (f Frame, n int, ok bool) {
	t.Helper()
	h := make([]byte, c.HeaderLen())
	if _, err := c.ReadAt(h, off); err != nil {
		t.Fatal(err)
	}
	if n, ok = c.RecordLen(h); !ok {
		return f, 0, false
	}
	b := make([]byte, n)
	if _, err := c.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return f, n, c.Record(b, off, &f)
}

// TestChunksOnlyForFiles checks that Chunks refuses what cannot be read in
// pieces at offsets: gzip, a stream, a file already being read, and a
// pcapng file whose interface description is broken, which Next then
// reports.
func TestChunksOnlyForFiles(t *testing.T) {
	dir := t.TempDir()
	pcap := append(pcapHeader(false, false, 65535, 1), pcapRecord(false, 1, 2, 4, 4, []byte{1, 2, 3, 4})...)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(pcap)
	zw.Close()
	ng := cat(ngSHB(false), ngIDB(false, 1, 0), ngEPB(false, 0, 1, 4, 4, []byte{1, 2, 3, 4}))
	badNg := append(ngSHB(false), ngIDB(false, 1, 0, ngOpt(false, 9, []byte{6, 0}))...)
	files := map[string][]byte{"a.pcapng": ng, "bad.pcapng": badNg, "a.pcap.gz": gz.Bytes(), "a.pcap": pcap}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]bool{"a.pcapng": true, "bad.pcapng": false, "a.pcap.gz": false, "a.pcap": true} {
		r, err := Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Chunks(); ok != want {
			t.Errorf("%s: Chunks ok = %v, want %v", name, ok, want)
		}
		var f Frame
		err = r.Next(&f)
		if name == "bad.pcapng" && !errors.Is(err, ErrBadBlock) {
			t.Errorf("%s: Next after Chunks: %v, want the interface description's error", name, err)
		}
		r.Close()
	}
	r, err := NewReader(bytes.NewReader(pcap), "mem")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Chunks(); ok {
		t.Error("a stream given to NewReader: Chunks ok")
	}
	r, err = Open(filepath.Join(dir, "a.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var f Frame
	if err := r.Next(&f); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Chunks(); ok {
		t.Error("after Next: Chunks ok")
	}
}

// gotFrame is f as readAll records it.
func gotFrame(f Frame) got {
	return got{bytes.Clone(f.Data), f.Timestamp, f.CapLen, f.Len, f.LinkType, f.Index, f.Offset, f.Interface}
}
