package crcfold

import (
	"hash/crc32"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestUpdateMatchesHashCRC32 checks Update against hash/crc32, the
// reference, for every length from 0 to 1100 bytes and some longer ones,
// from several starting values, over random bytes and over runs of zeros
// and ones.
func TestUpdateMatchesHashCRC32(t *testing.T) {
	if !useFold {
		t.Log("this CPU has no 512-bit carry-less multiply: Update is hash/crc32 here")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 70000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	ones := make([]byte, len(random))
	for i := range ones {
		ones[i] = 0xFF
	}
	inputs := map[string][]byte{"random": random, "zeros": make([]byte, len(random)), "ones": ones}
	lengths := []int{}
	for n := 0; n <= 1100; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 4096, 4096+15, 9000, 65535, 70000)
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			for _, n := range lengths {
				for _, start := range []uint32{0, 0xFFFFFFFF, 0x12345678} {
					// Offsets 0 and 3 try aligned and unaligned loads.
					for _, off := range []int{0, 3} {
						if off+n > len(in) {
							continue
						}
						p := in[off : off+n]
						if got, want := Update(start, p), crc32.Update(start, crc32.IEEETable, p); got != want {
							t.Fatalf("Update(%#x, %d bytes at %d) = %#08x, want %#08x", start, n, off, got, want)
						}
					}
				}
			}
		})
	}
}

// TestKnownAnswer is the check value of CRC-32/IEEE, the CRC of the ASCII
// digits 1 to 9, extended past the shortest input folded: a run of the digits is checked
// against a value computed independently of hash/crc32, by the bitwise
// definition.
func TestKnownAnswer(t *testing.T) {
	if got := Update(0, []byte("123456789")); got != 0xCBF43926 {
		t.Fatalf("CRC of 123456789 = %#08x, want 0xcbf43926", got)
	}
	p := make([]byte, 1000)
	for i := range p {
		p[i] = '1' + byte(i%9)
	}
	if got, want := Update(0, p), bitwise(p); got != want {
		t.Fatalf("CRC of 1000 digits = %#08x, want %#08x (bitwise)", got, want)
	}
}

// bitwise is CRC-32/IEEE by its definition, one bit at a time.
func bitwise(p []byte) uint32 {
	crc := ^uint32(0)
	for _, b := range p {
		crc ^= uint32(b)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xEDB88320
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

// TestUpdateHead checks UpdateHead against two calls of hash/crc32 for
// lengths of p around the shortest it folds and for tails that are not whole
// 16-byte blocks, which it must hand to hash/crc32.
func TestUpdateHead(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var head [HeadLen]byte
	p := make([]byte, 2000)
	for n := 0; n <= len(p); n++ {
		for i := range head {
			head[i] = byte(rng.Uint32())
		}
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		for _, start := range []uint32{0, 0xFFFFFFFF, 0xDEADBEEF} {
			want := crc32.Update(crc32.Update(start, crc32.IEEETable, head[:]), crc32.IEEETable, p[:n])
			if got := UpdateHead(start, &head, p[:n]); got != want {
				t.Fatalf("UpdateHead(%#x, head, %d bytes) = %#08x, want %#08x", start, n, got, want)
			}
		}
	}
}

// FuzzUpdate checks Update and UpdateHead against hash/crc32 on any input:
// the first HeadLen bytes, zero-padded, serve as UpdateHead's head.
func FuzzUpdate(f *testing.F) {
	f.Add(uint32(0), make([]byte, 300))
	f.Add(uint32(0xFFFFFFFF), make([]byte, 1024))
	f.Add(uint32(0x12345678), make([]byte, HeadLen+MinTail))
	f.Fuzz(func(t *testing.T, start uint32, p []byte) {
		if got, want := Update(start, p), crc32.Update(start, crc32.IEEETable, p); got != want {
			t.Fatalf("Update(%#x, %d bytes) = %#08x, want %#08x", start, len(p), got, want)
		}
		var head [HeadLen]byte
		rest := p[copy(head[:], p):]
		want := crc32.Update(crc32.Update(start, crc32.IEEETable, head[:]), crc32.IEEETable, rest)
		if got := UpdateHead(start, &head, rest); got != want {
			t.Fatalf("UpdateHead(%#x, head, %d bytes) = %#08x, want %#08x", start, len(rest), got, want)
		}
	})
}

// BenchmarkUpdate compares Update with hash/crc32 on RoCE-sized inputs.
func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{64, 256, 1024, 4096} {
		p := make([]byte, n)
		b.Run("crcfold/"+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				Update(0, p)
			}
		})
		b.Run("hash-crc32/"+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32.Update(0, crc32.IEEETable, p)
			}
		})
	}
}
