package capture

import (
	"io"
	"testing"
)

// endless replays a capture's records forever after its header, so that a
// benchmark measures the reader in its steady state, with no end of file
// and no new Reader to build.
type endless struct {
	head, body []byte
	pos        int // in head, then in body modulo its length
}

func (e *endless) Read(p []byte) (int, error) {
	if e.pos < len(e.head) {
		n := copy(p, e.head[e.pos:])
		e.pos += n
		return n, nil
	}
	i := (e.pos - len(e.head)) % len(e.body)
	n := copy(p, e.body[i:])
	e.pos += n
	return n, nil
}

func benchRead(b *testing.B, file []byte, headLen, frameBytes int) {
	r, err := NewReader(&endless{head: file[:headLen], body: file[headLen:]}, "mem")
	if err != nil {
		b.Fatal(err)
	}
	var f Frame
	// Let the window reach its full size before timing.
	for range 1 << 16 {
		if err := r.Next(&f); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(frameBytes))
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Next(&f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadPcap reads an in-memory pcap; the bytes per operation count
// the 16-byte record header.
func BenchmarkReadPcap(b *testing.B) {
	for _, tt := range []struct {
		name string
		size int
	}{{"1KiB", 1024}, {"64B", 64}} {
		file := pcapFile(b, 1000, tt.size)
		b.Run(tt.name, func(b *testing.B) { benchRead(b, file, 24, tt.size+16) })
	}
}

// BenchmarkReadPcapng is BenchmarkReadPcap for enhanced packet blocks (32
// bytes of block around each frame).
func BenchmarkReadPcapng(b *testing.B) {
	for _, tt := range []struct {
		name string
		size int
	}{{"1KiB", 1024}, {"64B", 64}} {
		file := pcapngFile(b, 1000, tt.size)
		// Section header 28 bytes, two interface descriptions of 32.
		b.Run(tt.name, func(b *testing.B) { benchRead(b, file, 28+2*32, tt.size+32) })
	}
}

// BenchmarkWritePcap writes 1 KiB frames to io.Discard.
func BenchmarkWritePcap(b *testing.B) {
	w, err := NewPcapWriter(io.Discard, 1, 0, true)
	if err != nil {
		b.Fatal(err)
	}
	data := u8s(0, 1024)
	b.SetBytes(1024 + 16)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.WriteFrame(1, data, 0); err != nil {
			b.Fatal(err)
		}
	}
}
