package gen

import (
	"io"
	"testing"
)

// countingWriter counts what passes through it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// BenchmarkWriteBench measures the bench scenario: one op is one frame, and
// the bytes are those of the capture file, pcap record headers included.
func BenchmarkWriteBench(b *testing.B) {
	for _, tc := range []struct {
		name    string
		payload int
	}{
		{"1KiB", 1024},
		{"small", 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var w countingWriter
			b.ReportAllocs()
			b.ResetTimer()
			if _, err := Write(&w, Config{Scenario: "bench", Seed: 1, Packets: b.N, Payload: tc.payload, ECN: true}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(w.n / int64(b.N))
		})
	}
}

// BenchmarkWriteSimulated measures the simulated scenarios' path (every
// frame serialized through the layers) on a large rc-write capture.
func BenchmarkWriteSimulated(b *testing.B) {
	var w countingWriter
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := Write(&w, Config{Scenario: "rc-write", Seed: 1, Packets: b.N, ECN: true}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(w.n / int64(b.N))
}

// TestNoPerFrameAllocations checks that writing more frames does not
// allocate more: the allocations of a run are its setup, whatever its size.
func TestNoPerFrameAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	tests := []struct {
		name     string
		cfg      Config
		perFrame float64 // allowed allocations per extra frame
	}{
		// A per-frame allocation would show as 1 or more per frame; the
		// allowance absorbs the odd allocation of the runtime.
		{"bench 1KiB", Config{Scenario: "bench", Payload: 1024}, 0.001},
		{"bench small", Config{Scenario: "bench"}, 0.001},
		{"bench small ipv6", Config{Scenario: "bench", IPv6: true}, 0.001},
		{"bench rocev1", Config{Scenario: "bench", RoCEv1: true, Payload: 1024}, 0.001},
		{"rc-write", Config{Scenario: "rc-write"}, 0.001},
		{"ecn-cnp", Config{Scenario: "ecn-cnp"}, 0.001},
		{"loss-gbn ipv6", Config{Scenario: "loss-gbn", IPv6: true}, 0.001},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			allocs := func(n int) float64 {
				cfg := tc.cfg
				cfg.Seed, cfg.Packets = 1, n
				return testing.AllocsPerRun(2, func() {
					if _, err := Write(io.Discard, cfg); err != nil {
						t.Fatal(err)
					}
				})
			}
			const small, big = 4000, 40000
			a, b := allocs(small), allocs(big)
			t.Logf("%.0f allocations for %d frames, %.0f for %d", a, small, b, big)
			if extra := (b - a) / (big - small); extra > tc.perFrame {
				t.Errorf("%.0f allocations for %d frames, %.0f for %d: %.4f per frame, want at most %v",
					a, small, b, big, extra, tc.perFrame)
			}
		})
	}
}
