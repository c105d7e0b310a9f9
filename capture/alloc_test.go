package capture

import (
	"bytes"
	"io"
	"runtime"
	"testing"
)

// pcapFile builds an in-memory pcap of n frames of size bytes.
func pcapFile(tb testing.TB, n, size int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := NewPcapWriter(&buf, 1, 0, true)
	if err != nil {
		tb.Fatal(err)
	}
	data := u8s(0, size)
	for i := range n {
		if err := w.WriteFrame(int64(i)*1000, data, 0); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// pcapngFile builds an in-memory pcapng of n frames of size bytes on two
// interfaces.
func pcapngFile(tb testing.TB, n, size int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := NewPcapngWriter(&buf, []Interface{{LinkType: 1}, {LinkType: 101}})
	if err != nil {
		tb.Fatal(err)
	}
	data := u8s(0, size)
	for i := range n {
		if err := w.WriteFrame(i%2, int64(i)*1000, data, 0); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestNextAllocs(t *testing.T) {
	const runs = 2000
	tests := []struct {
		name   string
		file   []byte
		window int
		gzip   bool
	}{
		// Enough frames that the window refills several times.
		{"pcap", pcapFile(t, 3*runs, 1000), defaultBufSize, false},
		{"pcapng", pcapngFile(t, 3*runs, 1000), defaultBufSize, false},
		{"pcap gzip", pcapFile(t, 3*runs, 1000), defaultBufSize, true},
		// Every frame larger than the window: the scratch buffer is
		// reused once it has grown.
		{"pcap through a small window", pcapFile(t, 3*runs, 1000), 256, false},
		{"pcapng through a small window", pcapngFile(t, 3*runs, 1000), 256, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.file
			if tt.gzip {
				in = gzipped(t, in)
			}
			r, err := newReader(bytes.NewReader(in), "mem", tt.window)
			if err != nil {
				t.Fatal(err)
			}
			var f Frame
			var nextErr error
			allocs := testing.AllocsPerRun(runs, func() {
				if err := r.Next(&f); err != nil && nextErr == nil {
					nextErr = err
				}
			})
			if nextErr != nil {
				t.Fatal(nextErr)
			}
			if allocs != 0 {
				t.Errorf("%.2f allocations per frame, want 0", allocs)
			}
			if f.Index != runs+1 || len(f.Data) != 1000 {
				t.Errorf("last frame: index %d, %d bytes", f.Index, len(f.Data))
			}
		})
	}
}

func TestWriteAllocs(t *testing.T) {
	data := u8s(0, 1000)
	pw, err := NewPcapWriter(io.Discard, 1, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	ngw, err := NewPcapngWriter(io.Discard, []Interface{{LinkType: 1}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		fn   func()
	}{
		{"pcap", func() { pw.WriteFrame(1, data, 0) }},
		{"pcapng", func() { ngw.WriteFrame(0, 1, data[:999], 0) }},
		{"pcapng stats", func() { ngw.WriteStats(0, 1, 5, 0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if allocs := testing.AllocsPerRun(1000, tt.fn); allocs != 0 {
				t.Errorf("%.2f allocations per frame, want 0", allocs)
			}
		})
	}
}

// TestLengthFieldsDoNotSizeBuffers feeds records whose length fields claim
// megabytes while the input holds a few bytes, and checks that reading them
// allocates little.
func TestLengthFieldsDoNotSizeBuffers(t *testing.T) {
	le := false
	tests := []struct {
		name string
		in   []byte
	}{
		{"pcap record of 16 MiB", cat(pcapHeader(le, false, MaxCapLen, 1), pcapRecord(le, 1, 0, MaxCapLen, MaxCapLen, u8s(0, 100)))},
		{"pcapng packet of 16 MiB", cat(ngSHB(le), ngIDB(le, 1, 0), patch32(ngEPB(le, 0, 1, MaxCapLen, MaxCapLen, u8s(0, 100)), 4, MaxCapLen+32))},
		{"pcapng skipped block of 17 MiB", cat(ngSHB(le), ngIDB(le, 1, 0), patch32(ngBlock(le, 5, make([]byte, 100)), 4, maxBlockLen))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tt.in), "mem")
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var f Frame
			err = r.Next(&f)
			runtime.ReadMemStats(&after)
			if !isAll(err, ErrTruncated) {
				t.Errorf("got %v, want ErrTruncated", err)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
				t.Errorf("allocated %d bytes for a %d-byte input", n, len(tt.in))
			}
		})
	}
}

// TestConsumedWhileReading polls Consumed from another goroutine while the
// reader runs, as a progress display does; run with -race to check it.
func TestConsumedWhileReading(t *testing.T) {
	file := gzipped(t, pcapFile(t, 5000, 200))
	r, err := NewReader(bytes.NewReader(file), "mem")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan int64)
	go func() {
		var last int64
		for {
			n := r.Consumed()
			if n < last {
				t.Errorf("Consumed went back from %d to %d", last, n)
			}
			last = n
			select {
			case <-stop:
				done <- last
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	frames, err := readAll(r)
	close(stop)
	<-done
	if err != io.EOF || len(frames) != 5000 {
		t.Errorf("%d frames, %v", len(frames), err)
	}
	if n := r.Consumed(); n != int64(len(file)) {
		t.Errorf("Consumed ended at %d, want %d", n, len(file))
	}
}
