package capture

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// keepFiles returns captures whose records vary in size, some larger than
// the 4 KiB window the tests read them through, in each container.
func keepFiles(t *testing.T) map[string][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	sizes := make([]int, 400)
	for i := range sizes {
		sizes[i] = 1 + rng.IntN(1500)
		if i%50 == 7 {
			sizes[i] = 5000 + rng.IntN(5000) // beyond the window
		}
	}
	var pb, nb bytes.Buffer
	pw, err := NewPcapWriter(&pb, 1, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	nw, err := NewPcapngWriter(&nb, []Interface{{LinkType: 1}, {LinkType: 101}})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range sizes {
		data := u8s(byte(i), n)
		if err := pw.WriteFrame(int64(i)*1000, data, 0); err != nil {
			t.Fatal(err)
		}
		if err := nw.WriteFrame(i%2, int64(i)*1000, data, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := nw.Flush(); err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"pcap":        pb.Bytes(),
		"pcapng":      nb.Bytes(),
		"pcap+gzip":   gzipped(t, pb.Bytes()),
		"pcapng+gzip": gzipped(t, nb.Bytes()),
	}
}

// TestKeepFramesRetains reads whole files with KeepFrames and checks, after
// the last frame, that every frame's Data still holds its bytes. Without
// KeepFrames the window is reused and early frames would be overwritten.
func TestKeepFramesRetains(t *testing.T) {
	for name, file := range keepFiles(t) {
		want, err := readBytes(file)
		if err != io.EOF {
			t.Fatalf("%s: %v", name, err)
		}
		for _, mode := range []string{"pooled", "nil alloc"} {
			t.Run(name+" "+mode, func(t *testing.T) {
				r, err := newReader(bytes.NewReader(file), "mem", 4096)
				if err != nil {
					t.Fatal(err)
				}
				calls := 0
				r.KeepFrames(func(size int) []byte {
					calls++
					if mode == "nil alloc" {
						return nil // the Reader must make its own
					}
					return make([]byte, size+calls%3) // a little more is allowed
				})
				var kept [][]byte
				var f Frame
				for {
					if err := r.Next(&f); err != nil {
						if err != io.EOF {
							t.Fatal(err)
						}
						break
					}
					kept = append(kept, f.Data)
				}
				if calls == 0 {
					t.Fatal("alloc never called: the test does not exercise window changes")
				}
				if len(kept) != len(want) {
					t.Fatalf("%d frames, want %d", len(kept), len(want))
				}
				for i := range kept {
					if !bytes.Equal(kept[i], want[i].Data) {
						t.Fatalf("frame %d changed after later frames were read", i+1)
					}
				}
			})
		}
	}
}

// TestKeepFramesAbandons checks the other half of the contract: once a call
// to Next that took a new window has returned, the Reader never reads the
// previous window again. The test overwrites each abandoned window at once,
// and every frame read afterwards must still be intact.
func TestKeepFramesAbandons(t *testing.T) {
	for name, file := range keepFiles(t) {
		want, err := readBytes(file)
		if err != io.EOF {
			t.Fatalf("%s: %v", name, err)
		}
		t.Run(name, func(t *testing.T) {
			r, err := newReader(bytes.NewReader(file), "mem", 4096)
			if err != nil {
				t.Fatal(err)
			}
			var windows [][]byte
			r.KeepFrames(func(size int) []byte {
				w := make([]byte, size)
				windows = append(windows, w)
				return w
			})
			poisoned := 0
			var f Frame
			for i := 0; ; i++ {
				err := r.Next(&f)
				if err == io.EOF {
					if i != len(want) {
						t.Fatalf("%d frames, want %d", i, len(want))
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(f.Data, want[i].Data) || f.Offset != want[i].Offset || f.Index != want[i].Index {
					t.Fatalf("frame %d differs from a plain read", i+1)
				}
				// Every window but the newest is abandoned.
				for ; poisoned < len(windows)-1; poisoned++ {
					for k := range windows[poisoned] {
						windows[poisoned][k] = 0xEE
					}
				}
			}
			if poisoned == 0 {
				t.Fatal("no window was abandoned: the test does not exercise window changes")
			}
		})
	}
}

// TestKeepFramesNextAllocs checks that KeepFrames adds no allocation per
// frame when alloc recycles windows.
func TestKeepFramesNextAllocs(t *testing.T) {
	file := pcapFile(t, 20000, 100)
	r, err := NewReader(&endless{head: file[:24], body: file[24:]}, "mem")
	if err != nil {
		t.Fatal(err)
	}
	// Two windows in turn: the one in use and the one before it, which
	// this test is done with as soon as Next returns.
	var pool [2][]byte
	n := 0
	r.KeepFrames(func(size int) []byte {
		w := pool[n%2]
		if len(w) < size {
			w = make([]byte, size)
			pool[n%2] = w
		}
		n++
		return w
	})
	var f Frame
	for range 30000 { // past the window's growth
		if err := r.Next(&f); err != nil {
			t.Fatal(err)
		}
	}
	if a := testing.AllocsPerRun(20000, func() { _ = r.Next(&f) }); a != 0 {
		t.Errorf("%v allocations per frame, want 0", a)
	}
	if n < 3 {
		t.Errorf("alloc called %d times: the windows were not recycled", n)
	}
}
