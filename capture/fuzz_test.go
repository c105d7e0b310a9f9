package capture

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"roce-inspect/internal/testref"
)

// FuzzReader feeds arbitrary bytes through NewReader and Next until an error.
// Besides not panicking, the reader must keep its promises: every error but
// io.EOF is an *Error, errors are sticky, frames are numbered 1, 2, 3... at
// increasing offsets with CapLen == len(Data) <= Len, and an uncompressed
// input cannot yield more frames than it has room for.
func FuzzReader(f *testing.F) {
	pcap := cat(pcapHeader(false, false, 65535, 1),
		pcapRecord(false, 1, 2, 4, 4, u8s(0, 4)), pcapRecord(false, 3, 4, 0, 9, nil))
	pcapBE := cat(pcapHeader(true, true, 128, 101), pcapRecord(true, 1, 2, 3, 3, u8s(0, 3)))
	ng, _ := ngFeatureFile()
	for _, seed := range [][]byte{pcap, pcapBE, ng, gzipped(f, pcap), gzipped(f, ng), pcapFile(f, 3, 70), pcapngFile(f, 3, 70)} {
		f.Add(seed)
	}
	if dir, ok := testref.HaveSharedCaptures(f); ok {
		for _, sub := range []string{"real", "vectors"} {
			paths, _ := filepath.Glob(filepath.Join(dir, sub, "*.pcap"))
			for _, p := range paths {
				// Large seeds slow every mutation down; the small
				// captures cover the same structures.
				if st, err := os.Stat(p); err == nil && st.Size() <= 32<<10 {
					if b, err := os.ReadFile(p); err == nil {
						f.Add(b)
					}
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A small window drives the paths for records larger than it;
		// the default one the ordinary paths.
		for _, window := range []int{64, defaultBufSize} {
			checkReader(t, data, window)
		}
	})
}

func checkReader(t *testing.T, data []byte, window int) {
	r, err := newReader(bytes.NewReader(data), "fuzz", window)
	if err != nil {
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("NewReader error %T is not an *Error: %v", err, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line message %q", err)
		}
		return
	}
	gz := strings.HasSuffix(r.Format(), "+gzip")
	var fr Frame
	lastOff := int64(-1)
	n := 0
	for {
		err := r.Next(&fr)
		if err != nil {
			if err != io.EOF {
				var ce *Error
				if !errors.As(err, &ce) {
					t.Fatalf("Next error %T is not an *Error: %v", err, err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("multi-line message %q", err)
				}
			}
			if again := r.Next(&fr); again != err {
				t.Fatalf("error not sticky: %v then %v", err, again)
			}
			return
		}
		n++
		if fr.Index != n || fr.Offset <= lastOff || fr.CapLen != len(fr.Data) || fr.CapLen > fr.Len || fr.CapLen > MaxCapLen {
			t.Fatalf("frame %d: index %d, offset %d after %d, caplen %d, %d bytes, len %d",
				n, fr.Index, fr.Offset, lastOff, fr.CapLen, len(fr.Data), fr.Len)
		}
		lastOff = fr.Offset
		// Every packet record takes at least 16 bytes.
		if !gz && (n*16 > len(data) || fr.Offset+int64(fr.CapLen) > int64(len(data))) {
			t.Fatalf("frame %d at offset %d of %d bytes from a %d-byte input", n, fr.Offset, fr.CapLen, len(data))
		}
	}
}
