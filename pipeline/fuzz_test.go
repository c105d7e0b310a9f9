package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"roce-inspect/gen"
)

// FuzzChunked feeds any bytes, as a file, to the parallel mode with tiny
// pieces and to the serial loop: whatever the records' lengths say, both
// must hand out the same frames and packets and end the same way, and the
// parallel mode must neither panic nor hang.
func FuzzChunked(f *testing.F) {
	for _, cfg := range []gen.Config{
		{Scenario: "bench", Packets: 12, Seed: 1},
		{Scenario: "mixed", Seed: 2, ECN: true},
		{Scenario: "bench", Packets: 12, Seed: 3, Pcapng: true},
	} {
		var buf bytes.Buffer
		if _, err := gen.Write(&buf, cfg); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes(), uint16(300), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, piece uint16, workers uint8) {
		path := filepath.Join(t.TempDir(), "f.pcap")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if !readableInPieces(path) {
			return
		}
		// Pieces of 32 bytes to 64 KiB, spill half a piece, one to four
		// workers.
		sizes := pieceSizes{piece: 32 + int(piece), spill: (32 + int(piece)) / 2}
		n := 1 + int(workers%4)
		compareOutcomes(t, runFile(t, path, Options{}, 0), runSized(t, path, n, sizes, 0))
	})
}
