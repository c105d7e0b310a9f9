package pipeline

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"roce-inspect/analyze"
	"roce-inspect/capture"
	"roce-inspect/dissect"
	"roce-inspect/gen"
	"roce-inspect/internal/testref"
)

// outcome is everything a run hands out: a digest of every frame and packet
// as the callback saw them, the analysis, and how the run ended.
type outcome struct {
	frames  int
	digests [][32]byte
	report  []byte
	stopped bool
	err     string
	// consumed is what the reader counted as read, for the progress bar.
	consumed int64
}

// runFile reads path with Run and records what it hands out, stopping after
// stopAt frames when stopAt > 0.
func runFile(t *testing.T, path string, opt Options, stopAt int) outcome {
	t.Helper()
	return runWith(t, path, stopAt, func(r *capture.Reader, fn Func) (bool, error) { return Run(r, opt, fn) })
}

// runSized reads path in the parallel mode with n workers and the given
// piece sizes; the file must be one capture.Reader.Chunks takes.
func runSized(t *testing.T, path string, n int, sizes pieceSizes, stopAt int) outcome {
	t.Helper()
	return runWith(t, path, stopAt, func(r *capture.Reader, fn Func) (bool, error) {
		c, ok := r.Chunks()
		if !ok {
			t.Fatalf("%s: not readable in pieces", path)
		}
		return chunked(r, c, n, sizes, nil, fn)
	})
}

// runWith reads path with run and records what it hands out.
func runWith(t *testing.T, path string, stopAt int, run func(*capture.Reader, Func) (bool, error)) outcome {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer r.Close()
	a := analyze.New(analyze.Options{})
	var o outcome
	o.stopped, err = run(r, func(f *capture.Frame, p *dissect.Packet, k dissect.Kind) bool {
		o.frames++
		// The frame's bytes and every field of the packet, taken while
		// they are valid: the slices alias buffers that are reused.
		h := sha256.New()
		fc := *f
		fc.Data = nil
		fmt.Fprintf(h, "%d %+v|%+v", k, fc, *p)
		h.Write(f.Data)
		o.digests = append(o.digests, [32]byte(h.Sum(nil)))
		if k == dissect.RoCE {
			a.Add(p)
		} else {
			a.NotRoCE()
		}
		return stopAt <= 0 || o.frames < stopAt
	})
	if err != nil {
		o.err = err.Error()
	}
	o.consumed = r.Consumed()
	if o.report, err = json.Marshal(a.Report()); err != nil {
		t.Fatal(err)
	}
	return o
}

// compareOutcomes fails the test at the first difference.
func compareOutcomes(t *testing.T, serial, parallel outcome) {
	t.Helper()
	if serial.frames != parallel.frames {
		t.Fatalf("serial handed out %d frames, parallel %d", serial.frames, parallel.frames)
	}
	for i := range serial.digests {
		if serial.digests[i] != parallel.digests[i] {
			t.Fatalf("frame %d differs between serial and parallel", i+1)
		}
	}
	if serial.stopped != parallel.stopped || serial.err != parallel.err {
		t.Fatalf("serial ended (stopped %v, %q), parallel (stopped %v, %q)", serial.stopped, serial.err, parallel.stopped, parallel.err)
	}
	if serial.err == io.EOF.Error() && serial.consumed != parallel.consumed {
		t.Fatalf("serial counted %d bytes read, parallel %d", serial.consumed, parallel.consumed)
	}
	if !bytes.Equal(serial.report, parallel.report) {
		t.Fatalf("analysis differs:\nserial   %s\nparallel %s", serial.report, parallel.report)
	}
}

// generated writes captures that stress the parallel mode: several pieces of
// small packets and of large ones, in pcap and in pcapng, records larger
// than a reader window and than spillMax, files cut in the middle of a
// record, a record over the snap length past the first pieces, and gzip.
func generated(t testing.TB) []string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, cfg gen.Config) []byte {
		var buf bytes.Buffer
		if _, err := gen.Write(&buf, cfg); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	small := write("small.pcap", gen.Config{Scenario: "bench", Packets: smallFrames, Seed: 1, ECN: true})
	large := write("large.pcap", gen.Config{Scenario: "bench", Packets: 2000, Payload: 1024, Seed: 2, ECN: true, BadEvery: 97})
	write("mixed.pcapng", gen.Config{Scenario: "mixed", Seed: 3, ECN: true, Pcapng: true})
	write("small.pcapng", gen.Config{Scenario: "bench", Packets: smallFrames, Seed: 4, ECN: true, Pcapng: true})
	largeNg := write("large.pcapng", gen.Config{Scenario: "bench", Packets: 2000, Payload: 1024, Seed: 5, ECN: true, BadEvery: 89, Pcapng: true})
	if err := os.WriteFile(filepath.Join(dir, "cut.pcapng"), largeNg[:len(largeNg)*3/4+7], 0o644); err != nil {
		t.Fatal(err)
	}

	// Cut in the middle of a record, well past the first window.
	if err := os.WriteFile(filepath.Join(dir, "cut.pcap"), large[:len(large)*2/3+5], 0o644); err != nil {
		t.Fatal(err)
	}
	// A record claiming more than the snap length, past the first piece.
	bad := bytes.Clone(large)
	off := 24
	for range 1500 {
		off += 16 + int(binary.LittleEndian.Uint32(bad[off+8:]))
	}
	binary.LittleEndian.PutUint32(bad[off+8:], 1<<30)
	if err := os.WriteFile(filepath.Join(dir, "bad-length.pcap"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(small)
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "small.pcap.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	// RoCE frames around records larger than a reader window.
	var huge bytes.Buffer
	w, err := capture.NewPcapWriter(&huge, 1, capture.MaxCapLen, true)
	if err != nil {
		t.Fatal(err)
	}
	r, err := capture.NewReader(bytes.NewReader(large), "large")
	if err != nil {
		t.Fatal(err)
	}
	var f capture.Frame
	for i := 0; r.Next(&f) == nil; i++ {
		if err := w.WriteFrame(f.Timestamp, f.Data, f.Len); err != nil {
			t.Fatal(err)
		}
		if i%900 == 3 {
			big := bytes.Repeat([]byte{byte(i)}, 1<<20+12345)
			if err := w.WriteFrame(f.Timestamp, big, len(big)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "huge-records.pcap"), huge.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// smallFrames is the number of ACK-sized frames of small.pcap: over a
// megabyte, two pieces and more.
const smallFrames = 12305

// allCaptures lists the repository's testdata (damaged files included), the
// shared reference captures when present, and the generated stress files.
func allCaptures(t *testing.T) []string {
	t.Helper()
	var files []string
	walk := func(dir string) {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(d.Name(), ".pcap") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	walk(testref.Testdata(t))
	if dir, ok := testref.HaveSharedCaptures(t); ok {
		walk(dir)
	} else {
		t.Log("reference captures absent: comparing on the repository's testdata and generated files only")
	}
	return append(files, generated(t)...)
}

// TestParallelMatchesSerial runs every capture through both modes and checks
// that the callback sees the same frames and packets, field for field, that
// the analysis JSON is byte for byte the same, and that both end alike.
func TestParallelMatchesSerial(t *testing.T) {
	for _, path := range allCaptures(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, err := capture.Open(path); err != nil {
				t.Skipf("not readable as a capture (%v): nothing to compare", err)
			}
			serial := runFile(t, path, Options{}, 0)
			parallel := runFile(t, path, Options{Parallel: true}, 0)
			compareOutcomes(t, serial, parallel)
			if serial.frames == 0 {
				t.Log("no frames")
			}
		})
	}
}

// TestSmallPieces runs the pcap and pcapng files through the parallel mode with
// pieces so small that records run over piece ends all the time and records
// of a kilobyte over spill (which hands the rest of the file to the serial
// loop), on one, two and three workers, against the serial loop.
func TestSmallPieces(t *testing.T) {
	for _, path := range allCaptures(t) {
		if !readableInPieces(path) {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			serial := runFile(t, path, Options{}, 0)
			for _, sizes := range []pieceSizes{{4096, 2048}, {1500, 200}, {64 << 10, 16 << 10}} {
				for _, n := range []int{1, 2, 3} {
					t.Run(fmt.Sprintf("%d-%d-%d", sizes.piece, sizes.spill, n), func(t *testing.T) {
						compareOutcomes(t, serial, runSized(t, path, n, sizes, 0))
					})
				}
			}
		})
	}
}

// readableInPieces says whether path opens as a capture file that the
// parallel mode reads in pieces.
func readableInPieces(path string) bool {
	r, err := capture.Open(path)
	if err != nil {
		return false
	}
	defer r.Close()
	_, ok := r.Chunks()
	return ok
}

// TestStopEarly stops the callback at the first frames and at frames in and
// around later pieces: both modes must hand out exactly the frames up to it
// and report a stop.
func TestStopEarly(t *testing.T) {
	var small string
	for _, p := range generated(t) {
		if filepath.Base(p) == "small.pcap" {
			small = p
		}
	}
	for _, at := range []int{1, 2, 5000, 6000, 6001, smallFrames - 1} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			serial := runFile(t, small, Options{}, at)
			parallel := runFile(t, small, Options{Parallel: true}, at)
			compareOutcomes(t, serial, parallel)
			if !parallel.stopped || parallel.frames != at || parallel.err != "" {
				t.Errorf("stopped %v after %d frames with %q, want a stop after %d", parallel.stopped, parallel.frames, parallel.err, at)
			}
		})
	}
}

// TestErrorsReachTheCaller checks that the read error which ends a damaged
// file is returned, after its frames, in both modes.
func TestErrorsReachTheCaller(t *testing.T) {
	for _, p := range generated(t) {
		if filepath.Base(p) != "cut.pcap" {
			continue
		}
		for _, par := range []bool{false, true} {
			r, err := capture.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			stopped, err := Run(r, Options{Parallel: par}, func(*capture.Frame, *dissect.Packet, dissect.Kind) bool { n++; return true })
			r.Close()
			if stopped || !errors.Is(err, capture.ErrTruncated) || n == 0 {
				t.Errorf("parallel %v: stopped %v, err %v after %d frames; want a truncation after some frames", par, stopped, err, n)
			}
		}
		return
	}
	t.Fatal("no cut.pcap generated")
}

// TestNoAllocationPerFrame counts the heap allocations of whole runs over a
// capture and over one eight times as long: the parallel mode allocates its
// buffers and frame lists once per worker, so the count must not grow with
// the frames.
func TestNoAllocationPerFrame(t *testing.T) {
	dir := t.TempDir()
	count := func(frames int, par bool) uint64 {
		path := filepath.Join(dir, fmt.Sprintf("bench-%d.pcap", frames))
		if _, err := os.Stat(path); err != nil {
			var buf bytes.Buffer
			if _, err := gen.Write(&buf, gen.Config{Scenario: "bench", Packets: frames, Payload: 256, Seed: 1, ECN: true}); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r, err := capture.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		n := 0
		if _, err := Run(r, Options{Parallel: par}, func(*capture.Frame, *dissect.Packet, dissect.Kind) bool { n++; return true }); err != io.EOF {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if n != frames {
			t.Fatalf("%d frames read, want %d", n, frames)
		}
		return after.Mallocs - before.Mallocs
	}
	for _, par := range []bool{false, true} {
		short, long := count(20000, par), count(160000, par)
		// A handful of allocations per window of the longer file is
		// allowed for the runtime's own bookkeeping; per frame would be
		// 140000 more.
		if long > short+200 {
			t.Errorf("parallel %v: %d allocations for 20000 frames, %d for 160000: they grow with the frames", par, short, long)
		}
	}
}

// BenchmarkRun reads a capture of ACK-sized packets and one of 1 KiB
// payloads through both modes, with the analysis as the callback; the bytes
// per second count the whole file.
func BenchmarkRun(b *testing.B) {
	dir := b.TempDir()
	for _, size := range []struct {
		name    string
		payload int
		packets int
	}{{"small", 0, 400000}, {"1KiB", 1024, 40000}} {
		var buf bytes.Buffer
		if _, err := gen.Write(&buf, gen.Config{Scenario: "bench", Packets: size.packets, Payload: size.payload, Seed: 1, ECN: true}); err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(dir, size.name+".pcap")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		for _, mode := range []struct {
			name string
			opt  Options
		}{{"serial", Options{}}, {"parallel", Options{Parallel: true}}} {
			b.Run(size.name+"/"+mode.name, func(b *testing.B) {
				b.SetBytes(int64(buf.Len()))
				b.ReportAllocs()
				for b.Loop() {
					r, err := capture.Open(path)
					if err != nil {
						b.Fatal(err)
					}
					a := analyze.New(analyze.Options{})
					_, err = Run(r, mode.opt, func(_ *capture.Frame, p *dissect.Packet, k dissect.Kind) bool {
						if k == dissect.RoCE {
							a.Add(p)
						} else {
							a.NotRoCE()
						}
						return true
					})
					r.Close()
					if err != io.EOF {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size.packets)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
			})
		}
	}
}
