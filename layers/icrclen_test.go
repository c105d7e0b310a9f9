package layers

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// referenceICRC is the ICRC computed the plain way, as the captures' README
// describes it: CRC-32/IEEE over eight 0xFF bytes followed by a copy of the
// packet whose variant fields are set to ones. The offsets are written out
// here rather than taken from the package, so that a wrong mask in the
// package shows up as a mismatch. ihl is the IPv4 header length.
func referenceICRC(kind NetworkHeader, pkt []byte) uint32 {
	c := append([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, pkt...)
	h := c[8:]
	switch kind {
	case ICRCIPv4:
		ihl := int(h[0]&0x0F) * 4
		for _, off := range []int{1, 8, 10, 11, ihl + 6, ihl + 7, ihl + 8 + 4} {
			h[off] = 0xFF
		}
	case ICRCIPv6:
		h[0] |= 0x0F
		for _, off := range []int{1, 2, 3, 7, 46, 47, 52} {
			h[off] = 0xFF
		}
	case ICRCGRH:
		h[0] |= 0x0F
		for _, off := range []int{1, 2, 3, 7, 44} {
			h[off] = 0xFF
		}
	}
	return crc32.ChecksumIEEE(c)
}

// randomPacket returns a packet of the given kind and length (at least the
// headers) with random bytes in every field the ICRC covers or masks, and
// the header fields ComputeICRC checks set so that it accepts it.
func randomPacket(rng *rand.Rand, kind NetworkHeader, ihl, length int) []byte {
	p := make([]byte, length)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	switch kind {
	case ICRCIPv4:
		p[0], p[9] = 0x40|byte(ihl/4), 17
	case ICRCIPv6:
		p[0], p[6] = 0x60|p[0]&0x0F, 17
	}
	return p
}

// TestICRCEveryLength compares ComputeICRC and ICRCHasher with the plain
// reference for every packet length from the smallest to beyond a jumbo
// frame's, for each network header and several IPv4 header lengths, so that
// each way they split the work (table loop alone, table loop and hash/crc32
// over whole 16-byte blocks, one padded hash/crc32 call) and every alignment
// and padding are covered. The hasher is reused from length to length, as a
// decoder reuses it.
func TestICRCEveryLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name string
		kind NetworkHeader
		ihl  int
	}{
		{"IPv4", ICRCIPv4, 20},
		{"IPv4 options", ICRCIPv4, 24},
		{"IPv4 IHL 15", ICRCIPv4, 60},
		{"IPv6", ICRCIPv6, 40},
		{"GRH", ICRCGRH, 40},
	}
	h := new(ICRCHasher)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			min := tc.ihl + 8 + BTHLen
			if tc.kind == ICRCGRH {
				min = GRHLen + BTHLen
			}
			lengths := []int{}
			for n := min; n <= 1200; n++ {
				lengths = append(lengths, n)
			}
			lengths = append(lengths, 2047, 2048, 4096+52, 9000, 9001, 9002, 9003)
			for _, n := range lengths {
				pkt := randomPacket(rng, tc.kind, tc.ihl, n)
				orig := string(pkt)
				want := referenceICRC(tc.kind, pkt)
				got, err := ComputeICRC(tc.kind, pkt)
				if err != nil {
					t.Fatalf("length %d: %v", n, err)
				}
				if got != want {
					t.Fatalf("length %d: ComputeICRC = %#08x, reference %#08x", n, got, want)
				}
				hashed, err := h.Compute(tc.kind, pkt)
				if err != nil || hashed != want {
					t.Fatalf("length %d: ICRCHasher = %#08x, %v; reference %#08x", n, hashed, err, want)
				}
				if string(pkt) != orig {
					t.Fatalf("length %d: the input was written to", n)
				}
			}
		})
	}
}

// TestICRCAllocsEveryLayout proves that ComputeICRC and ICRCHasher do not
// allocate in any way they split the work.
func TestICRCAllocsEveryLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	h := new(ICRCHasher)
	for _, n := range []int{44, 60, 300, 1080} {
		pkt := randomPacket(rng, ICRCIPv4, 20, n)
		var sink uint32
		if a := testing.AllocsPerRun(200, func() { sink, _ = ComputeICRC(ICRCIPv4, pkt) }); a != 0 {
			t.Errorf("ComputeICRC, length %d: %v allocations per run, want 0", n, a)
		}
		if a := testing.AllocsPerRun(200, func() { sink, _ = h.Compute(ICRCIPv4, pkt) }); a != 0 {
			t.Errorf("ICRCHasher, length %d: %v allocations per run, want 0", n, a)
		}
		_ = sink
	}
}

// TestICRCHasherErrors checks that the hasher rejects what ComputeICRC
// rejects, with the same sentinel errors.
func TestICRCHasherErrors(t *testing.T) {
	ipv4 := make([]byte, 20+8+12)
	ipv4[0], ipv4[9] = 0x45, 17
	ipv6 := make([]byte, 40+8+12)
	ipv6[0], ipv6[6] = 0x60, 17
	with := func(b []byte, off int, v byte) []byte {
		c := append([]byte{}, b...)
		c[off] = v
		return c
	}
	cases := []struct {
		name string
		kind NetworkHeader
		pkt  []byte
		err  error
	}{
		{"IPv4 empty", ICRCIPv4, nil, ErrICRCTooShort},
		{"IPv4 one byte short of the BTH", ICRCIPv4, ipv4[:39], ErrICRCTooShort},
		{"IPv4 options beyond the data", ICRCIPv4, with(ipv4, 0, 0x4F), ErrICRCTooShort},
		{"IPv4 TCP", ICRCIPv4, with(ipv4, 9, 6), ErrICRCNotUDP},
		{"IPv4 IHL 4", ICRCIPv4, with(ipv4, 0, 0x44), ErrICRCBadIPHeader},
		{"IPv6 short", ICRCIPv6, ipv6[:59], ErrICRCTooShort},
		{"IPv6 version 4", ICRCIPv6, with(ipv6, 0, 0x45), ErrICRCBadIPHeader},
		{"IPv6 TCP", ICRCIPv6, with(ipv6, 6, 6), ErrICRCNotUDP},
		{"GRH short", ICRCGRH, make([]byte, 51), ErrICRCTooShort},
		{"unknown kind", NetworkHeader(3), ipv4, ErrICRCUnknownNetworkHeader},
		{"long TCP", ICRCIPv4, append(with(ipv4, 9, 6), make([]byte, 400)...), ErrICRCNotUDP},
	}
	h := new(ICRCHasher)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := h.Compute(tc.kind, tc.pkt); !errors.Is(err, tc.err) {
				t.Errorf("err = %v, want %v", err, tc.err)
			}
		})
	}
}

// BenchmarkICRCSizes measures ComputeICRC and ICRCHasher on a small packet
// (an ACK-sized SEND), a medium one and a packet with a 1 KiB payload.
func BenchmarkICRCSizes(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{60, 300, 1064} {
		pkt := randomPacket(rng, ICRCIPv4, 20, n)
		b.Run(fmt.Sprintf("ComputeICRC-%dB", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ComputeICRC(ICRCIPv4, pkt); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("ICRCHasher-%dB", n), func(b *testing.B) {
			h := new(ICRCHasher)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Compute(ICRCIPv4, pkt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
