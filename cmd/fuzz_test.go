package cmd

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"roce-inspect/capture"
	"roce-inspect/internal/testref"
)

// FuzzPipeline feeds arbitrary bytes, as a capture file, through the whole
// command line: decode (JSON, text and verbose), analyze (JSON and table) and
// check. Whatever the bytes, no command may panic or hang, each exits with a
// status it documents, JSON output parses, and every diagnostic is one line
// that names the file (see rbPipeline).
//
// Each input costs a few milliseconds (six command lines), so the default
// minute the fuzzer spends minimizing every new input dominates a short
// run; for one of a few minutes:
//
//	go test ./cmd -run '^$' -fuzz FuzzPipeline -fuzztime 5m -fuzzminimizetime 2s
func FuzzPipeline(f *testing.F) {
	for _, seed := range pipelineSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.pcap")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := rbPipeline(path, true); err != nil {
			t.Fatal(err)
		}
	})
}

// pipelineSeeds returns the hand-built captures (pcap, pcapng, gzip, one of
// malformed packets), the regression inputs of testdata/corrupt, and the
// first frames of the captures in testdata and of the reference captures
// beside the repository when they are there. Long captures are cut to their
// first frames, rewritten as a whole file: every mutation of a large seed
// costs time, and the first frames hold the same structures.
func pipelineSeeds(f *testing.F) [][]byte {
	good := rbGoodFrames(f)
	seeds := [][]byte{
		rbPcap(f, 0, good),
		rbPcapng(f, good),
		rbHandPcapng(good[:3]),
		rbGzip(f, rbPcap(f, 0, good[:4])),
		rbPcap(f, 0, rbMalformedFrames(f)),
	}
	root := testref.RepoRoot(f)
	var paths []string
	for _, pattern := range []string{
		filepath.Join(root, "testdata", "corrupt", "*"),
		filepath.Join(root, "testdata", "*.pcap"),
		filepath.Join(root, "..", "shared", "captures", "*", "*.pcap"),
	} {
		m, _ := filepath.Glob(pattern)
		paths = append(paths, m...)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if len(b) > 16<<10 {
			if b = firstFrames(p, 12); b == nil {
				continue
			}
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// firstFrames rewrites the first n frames of a capture as a pcap file; nil
// when the capture cannot be read.
func firstFrames(path string, n int) []byte {
	r, err := capture.Open(path)
	if err != nil {
		return nil
	}
	defer r.Close()
	var buf bytes.Buffer
	var w *capture.PcapWriter
	var fr capture.Frame
	for i := 0; i < n; i++ {
		err := r.Next(&fr)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil
		}
		if w == nil {
			if w, err = capture.NewPcapWriter(&buf, fr.LinkType, 0, true); err != nil {
				return nil
			}
		}
		if err := w.WriteFrame(fr.Timestamp, fr.Data, fr.Len); err != nil {
			return nil
		}
	}
	if w == nil || w.Flush() != nil {
		return nil
	}
	return buf.Bytes()
}
