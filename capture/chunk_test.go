package capture

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestChunksMatchNext checks the pieces API against Next on classic pcap
// files of both byte orders and timestamp resolutions: PcapRecord decodes
// every record header into the fields Next gives, and Resume at any record
// makes Next go on with the same frames, numbered and placed as before.
func TestChunksMatchNext(t *testing.T) {
	for _, tc := range []struct {
		name     string
		be, nano bool
	}{{"le-micro", false, false}, {"be-micro", true, false}, {"le-nano", false, true}, {"be-nano", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var file []byte
			file = append(file, pcapHeader(tc.be, tc.nano, 65535, 1)...)
			for i := range 40 {
				data := bytes.Repeat([]byte{byte(i)}, 60+i*7)
				file = append(file, pcapRecord(tc.be, uint32(1700000000+i), uint32(i*1000), uint32(len(data)), uint32(len(data)+i%3), data)...)
			}
			path := filepath.Join(t.TempDir(), "f.pcap")
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { r.Close() }()
			want, err := readAll(r)
			if err != io.EOF || len(want) != 40 {
				t.Fatalf("%d frames, %v; want 40 and EOF", len(want), err)
			}
			r.Close()
			if r, err = Open(path); err != nil {
				t.Fatal(err)
			}
			c, ok := r.Chunks()
			if !ok {
				t.Fatal("Chunks: not ok for a classic pcap file")
			}
			if c.DataStart() != 24 {
				t.Errorf("DataStart %d, want 24", c.DataStart())
			}
			for i, w := range want {
				var h [PcapRecordHeaderLen]byte
				if _, err := c.ReadAt(h[:], w.Offset); err != nil {
					t.Fatal(err)
				}
				var f Frame
				incl, ok := c.PcapRecord(h[:], w.Offset, &f)
				f.Index, f.Data = w.Index, w.Data
				if !ok || incl != w.CapLen || !reflect.DeepEqual(gotFrame(f), w) {
					t.Fatalf("record %d: PcapRecord = %d, %v, %+v; Next gave %+v", i+1, incl, ok, f, w)
				}
			}
			for _, at := range []int{0, 1, 17, 39} {
				if err := c.Resume(want[at].Offset, at); err != nil {
					t.Fatal(err)
				}
				for i := at; i < len(want); i++ {
					var f Frame
					if err := r.Next(&f); err != nil {
						t.Fatalf("resumed at %d: frame %d: %v", at, i+1, err)
					}
					if !reflect.DeepEqual(gotFrame(f), want[i]) {
						t.Fatalf("resumed at %d: frame %+v, want %+v", at, f, want[i])
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

// TestChunksOnlyForPcapFiles checks that Chunks refuses what cannot be read
// in pieces at offsets: pcapng, gzip, a stream, and a file already being
// read.
func TestChunksOnlyForPcapFiles(t *testing.T) {
	dir := t.TempDir()
	pcap := append(pcapHeader(false, false, 65535, 1), pcapRecord(false, 1, 2, 4, 4, []byte{1, 2, 3, 4})...)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(pcap)
	zw.Close()
	ng := append(ngSHB(false), ngIDB(false, 1, 0)...)
	files := map[string][]byte{"a.pcapng": ng, "a.pcap.gz": gz.Bytes(), "a.pcap": pcap}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]bool{"a.pcapng": false, "a.pcap.gz": false, "a.pcap": true} {
		r, err := Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Chunks(); ok != want {
			t.Errorf("%s: Chunks ok = %v, want %v", name, ok, want)
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
