package layers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"testing"
)

// roceSpan locates the RoCE part of an Ethernet frame for the ICRC: the
// network header kind, the bytes from the network header to the end of the
// ICRC, and whether the frame holds all of them. ok is false for frames that
// are not RoCE (other Ethertypes, other protocols, UDP to another port).
// Tests only: the project's dissector does this for real.
func roceSpan(frame []byte) (kind NetworkHeader, span []byte, complete, ok bool) {
	if len(frame) < 14 {
		return 0, nil, false, false
	}
	pkt := frame[14:]
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case 0x0800:
		if len(pkt) < 20 || pkt[9] != 17 {
			return 0, nil, false, false
		}
		ihl := int(pkt[0]&0x0F) * 4
		if len(pkt) < ihl+4 || binary.BigEndian.Uint16(pkt[ihl+2:]) != UDPPortRoCEv2 {
			return 0, nil, false, false
		}
		total := int(binary.BigEndian.Uint16(pkt[2:4]))
		if total > len(pkt) {
			return ICRCIPv4, pkt, false, true
		}
		return ICRCIPv4, pkt[:total], true, true
	case 0x86DD:
		if len(pkt) < 44 || pkt[6] != 17 || binary.BigEndian.Uint16(pkt[42:44]) != UDPPortRoCEv2 {
			return 0, nil, false, false
		}
		total := 40 + int(binary.BigEndian.Uint16(pkt[4:6]))
		if total > len(pkt) {
			return ICRCIPv6, pkt, false, true
		}
		return ICRCIPv6, pkt[:total], true, true
	case 0x8915:
		if len(pkt) < 40 {
			return ICRCGRH, pkt, false, true
		}
		total := 40 + int(binary.BigEndian.Uint16(pkt[4:6]))
		if total > len(pkt) {
			return ICRCGRH, pkt, false, true
		}
		return ICRCGRH, pkt[:total], true, true
	}
	return 0, nil, false, false
}

// checkFrame computes a frame's ICRC and compares it with the trailer.
func checkFrame(t *testing.T, frame []byte) (computed, wire uint32, roce, complete bool) {
	t.Helper()
	kind, span, complete, ok := roceSpan(frame)
	if !ok || !complete {
		return 0, 0, ok, false
	}
	end := len(span) - ICRCLen
	c, err := ComputeICRC(kind, span[:end])
	if err != nil {
		t.Fatalf("ComputeICRC: %v", err)
	}
	return c, ICRCFromWire(span[end:]), true, true
}

// TestICRCVectors checks the known answers of vectors.pcap. The README gives
// each ICRC as the four trailer bytes in wire order read as one big-endian
// number (0x78f353f3 for frame 1, whose last bytes are 78 f3 53 f3), which is
// also how Wireshark 4.0 shows them. The CRC-32 ComputeICRC returns is that
// number with its bytes reversed, since the CRC goes on the wire least
// significant byte first.
func TestICRCVectors(t *testing.T) {
	frames := readFrames(t, "vectors/vectors.pcap")
	cases := []struct {
		frame  int
		kind   NetworkHeader
		readme uint32
		good   bool
	}{
		{1, ICRCIPv4, 0x78f353f3, true},
		{2, ICRCIPv6, 0x3e5b743b, true},
		{3, ICRCIPv4, 0x82fd002a, true},
		{4, ICRCGRH, 0xe3d856bb, true},
		{5, ICRCGRH, 0x25f0c038, true},
		{6, ICRCIPv4, 0x78f353f3, false},
	}
	if len(frames) != len(cases) {
		t.Fatalf("vectors.pcap has %d frames, want %d", len(frames), len(cases))
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("frame %d", tc.frame), func(t *testing.T) {
			kind, span, complete, ok := roceSpan(frames[tc.frame-1])
			if !ok || !complete || kind != tc.kind {
				t.Fatalf("frame not recognised: kind %v ok %v complete %v", kind, ok, complete)
			}
			end := len(span) - ICRCLen
			got, err := ComputeICRC(kind, span[:end])
			if err != nil {
				t.Fatal(err)
			}
			if want := bits.ReverseBytes32(tc.readme); got != want {
				t.Errorf("ComputeICRC = %#08x, want %#08x (README %#08x byte-reversed)", got, want, tc.readme)
			}
			wire := ICRCFromWire(span[end:])
			if (wire == got) != tc.good {
				t.Errorf("trailer %#08x vs computed %#08x: good = %v, want %v", wire, got, wire == got, tc.good)
			}
			if tc.good && binary.BigEndian.Uint32(span[end:]) != tc.readme {
				t.Errorf("trailer bytes % x do not read as the README's %#08x", span[end:], tc.readme)
			}
			ok, err = VerifyICRC(kind, span)
			if err != nil || ok != tc.good {
				t.Errorf("VerifyICRC = %v, %v; want %v", ok, err, tc.good)
			}
		})
	}
}

// TestICRCCaptures checks every RoCE frame of the shared captures against the
// README's verdicts.
func TestICRCCaptures(t *testing.T) {
	cases := []struct {
		file                 string
		good, bad, unchecked int
	}{
		{"vectors/ops.pcap", 9, 0, 0},
		{"real/mlx-rocev2.pcap", 708, 0, 0},
		{"real/mlx-rocev2-2.pcap", 641, 0, 0},
		{"real/mlx-rocev1.pcap", 2468, 0, 0},
		{"real/mlx-rocev1-v2-mixed.pcap", 624, 0, 0},
		{"real/mlx-send-bw.pcap", 10, 0, 0},
		{"real/ibdump-write.pcap", 17, 0, 0},
		{"real/ibdump-read.pcap", 13, 0, 0},
		{"real/ibdump-send.pcap", 9, 0, 0},
		{"real/nvmeof-discover.pcap", 61, 0, 0},
		{"real/nvmeof-discover2.pcap", 31, 0, 0},
		{"real/nvmeof-echo.pcap", 45, 0, 0},
		{"real/nvmeof-idle.pcap", 4, 0, 0},
		{"real/mlx5-dc.pcap", 0, 19, 0},
		{"real/mlx5-dc-2.pcap", 0, 29, 0},
		{"real/mlx5-rc-mirror.pcap", 0, 21, 0},
		{"real/mlx5-uc-sg.pcap", 0, 17, 0},
		{"real/nccl-uc-truncated.pcap", 0, 20, 489},
		{"real/rxe-read-request.pcap", 1, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			var good, bad, unchecked int
			for _, fr := range readFrames(t, tc.file) {
				computed, wire, roce, complete := checkFrame(t, fr)
				switch {
				case !roce:
				case !complete:
					unchecked++
				case computed == wire:
					good++
				default:
					bad++
				}
			}
			if good != tc.good || bad != tc.bad || unchecked != tc.unchecked {
				t.Errorf("good %d, bad %d, unchecked %d; want %d, %d, %d", good, bad, unchecked, tc.good, tc.bad, tc.unchecked)
			}
		})
	}
}

// TestICRCMasksVariantFields changes each field the ICRC must ignore and
// checks that the CRC stays, and changes a covered field next to each and
// checks that it moves.
func TestICRCMasksVariantFields(t *testing.T) {
	frames := readFrames(t, "vectors/vectors.pcap")
	cases := []struct {
		name      string
		frame     int
		ignored   []int // byte offsets from the network header
		covered   []int
		withIHL24 bool
	}{
		// IPv4: TOS 1, TTL 8, checksum 10-11, UDP checksum 26-27, BTH byte 4 at 32.
		{name: "IPv4", frame: 1, ignored: []int{1, 8, 10, 11, 26, 27, 32}, covered: []int{0, 2, 9, 12, 20, 24, 28, 31, 33, 40}},
		// IPv6: version/TC 0 (low nibble), TC/flow 1-3, hop limit 7, UDP
		// checksum 46-47, BTH byte 4 at 52.
		{name: "IPv6", frame: 2, ignored: []int{1, 2, 3, 7, 46, 47, 52}, covered: []int{4, 5, 6, 8, 40, 44, 48, 51, 53}},
		// GRH: as IPv6, no UDP; BTH byte 4 at 44.
		{name: "GRH", frame: 4, ignored: []int{1, 2, 3, 7, 44}, covered: []int{4, 5, 6, 8, 39, 40, 43, 45, 52}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kind, span, _, _ := roceSpan(frames[tc.frame-1])
			pkt := append([]byte{}, span[:len(span)-ICRCLen]...)
			base, err := ComputeICRC(kind, pkt)
			if err != nil {
				t.Fatal(err)
			}
			for _, off := range tc.ignored {
				p := append([]byte{}, pkt...)
				p[off] ^= 0x5A
				if c, _ := ComputeICRC(kind, p); c != base {
					t.Errorf("byte %d is variant but changed the ICRC", off)
				}
			}
			for _, off := range tc.covered {
				p := append([]byte{}, pkt...)
				p[off] ^= 0x01
				if c, err := ComputeICRC(kind, p); err == nil && c == base {
					t.Errorf("byte %d is covered but did not change the ICRC", off)
				}
			}
			// The version nibble is covered even though the low nibble of
			// byte 0 is not (IPv6, GRH).
			if kind != ICRCIPv4 {
				p := append([]byte{}, pkt...)
				p[0] ^= 0x0F
				if c, _ := ComputeICRC(kind, p); c != base {
					t.Errorf("traffic class nibble of byte 0 changed the ICRC")
				}
			}
			if src := append([]byte{}, span[:len(span)-ICRCLen]...); string(src) != string(pkt) {
				t.Errorf("ComputeICRC wrote to its input")
			}
		})
	}
}

// TestICRCIPv4Options checks that IPv4 options are covered and that the
// masked fields move with the header length: the same packet with a 4-byte
// option has a different ICRC, and its UDP checksum and BTH byte 4, now 4
// bytes further on, are still ignored.
func TestICRCIPv4Options(t *testing.T) {
	frames := readFrames(t, "vectors/vectors.pcap")
	_, span, _, _ := roceSpan(frames[0])
	plain := span[:len(span)-ICRCLen]
	opt := append([]byte{}, plain[:20]...)
	opt[0] = 0x46                             // IHL 6
	opt = append(opt, 0x01, 0x01, 0x01, 0x00) // NOP, NOP, NOP, end of options
	opt = append(opt, plain[20:]...)
	a, err := ComputeICRC(ICRCIPv4, plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ComputeICRC(ICRCIPv4, opt)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Errorf("options not covered")
	}
	for _, off := range []int{24 + 6, 24 + 7, 24 + 8 + 4} {
		p := append([]byte{}, opt...)
		p[off] ^= 0xFF
		if c, _ := ComputeICRC(ICRCIPv4, p); c != b {
			t.Errorf("byte %d of the optioned packet is variant but changed the ICRC", off)
		}
	}
	p := append([]byte{}, opt...)
	p[20] ^= 0xFF // an option byte
	if c, _ := ComputeICRC(ICRCIPv4, p); c == b {
		t.Errorf("option byte did not change the ICRC")
	}
	// With 60 bytes of header (IHL 15), the largest, the stack copy is full.
	long := append([]byte{0x4F}, plain[1:20]...)
	long = append(long, make([]byte, 40)...)
	long = append(long, plain[20:]...)
	if _, err := ComputeICRC(ICRCIPv4, long); err != nil {
		t.Errorf("IHL 15: %v", err)
	}
}

func TestICRCErrors(t *testing.T) {
	ipv4 := func(mod func([]byte)) []byte {
		p := make([]byte, 20+8+12)
		p[0], p[9] = 0x45, 17
		if mod != nil {
			mod(p)
		}
		return p
	}
	ipv6 := func(mod func([]byte)) []byte {
		p := make([]byte, 40+8+12)
		p[0], p[6] = 0x60, 17
		if mod != nil {
			mod(p)
		}
		return p
	}
	cases := []struct {
		name string
		kind NetworkHeader
		pkt  []byte
		err  error
	}{
		{"IPv4 empty", ICRCIPv4, nil, ErrICRCTooShort},
		{"IPv4 header only", ICRCIPv4, ipv4(nil)[:20], ErrICRCTooShort},
		{"IPv4 one byte short of the BTH", ICRCIPv4, ipv4(nil)[:39], ErrICRCTooShort},
		{"IPv4 options beyond the data", ICRCIPv4, ipv4(func(p []byte) { p[0] = 0x4F }), ErrICRCTooShort},
		{"IPv4 TCP", ICRCIPv4, ipv4(func(p []byte) { p[9] = 6 }), ErrICRCNotUDP},
		{"IPv4 IHL 4", ICRCIPv4, ipv4(func(p []byte) { p[0] = 0x44 }), ErrICRCBadIPHeader},
		{"IPv4 version 6", ICRCIPv4, ipv4(func(p []byte) { p[0] = 0x65 }), ErrICRCBadIPHeader},
		{"IPv6 short", ICRCIPv6, ipv6(nil)[:59], ErrICRCTooShort},
		{"IPv6 next header TCP", ICRCIPv6, ipv6(func(p []byte) { p[6] = 6 }), ErrICRCNotUDP},
		{"IPv6 version 4", ICRCIPv6, ipv6(func(p []byte) { p[0] = 0x45 }), ErrICRCBadIPHeader},
		{"GRH short", ICRCGRH, make([]byte, 51), ErrICRCTooShort},
		{"unknown kind", NetworkHeader(3), ipv4(nil), ErrICRCUnknownNetworkHeader},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ComputeICRC(tc.kind, tc.pkt); !errors.Is(err, tc.err) {
				t.Errorf("err = %v, want %v", err, tc.err)
			}
		})
	}
	t.Run("smallest inputs", func(t *testing.T) {
		if _, err := ComputeICRC(ICRCIPv4, ipv4(nil)); err != nil {
			t.Errorf("IPv4: %v", err)
		}
		if _, err := ComputeICRC(ICRCIPv6, ipv6(nil)); err != nil {
			t.Errorf("IPv6: %v", err)
		}
		if _, err := ComputeICRC(ICRCGRH, make([]byte, 52)); err != nil {
			t.Errorf("GRH: %v", err)
		}
	})
	t.Run("VerifyICRC short", func(t *testing.T) {
		if _, err := VerifyICRC(ICRCIPv4, []byte{1, 2, 3}); !errors.Is(err, ErrICRCTooShort) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestICRCWireOrder(t *testing.T) {
	b := make([]byte, 4)
	PutICRC(b, 0xf353f378)
	if string(b) != "\x78\xf3\x53\xf3" {
		t.Errorf("PutICRC wrote % x, want 78 f3 53 f3", b)
	}
	if v := ICRCFromWire(b); v != 0xf353f378 {
		t.Errorf("ICRCFromWire = %#x", v)
	}
	if v := ICRCFromWire(b[:3]); v != 0 {
		t.Errorf("ICRCFromWire of 3 bytes = %#x, want 0", v)
	}
	short := []byte{9, 9, 9}
	PutICRC(short, 0xffffffff)
	if string(short) != "\x09\x09\x09" {
		t.Errorf("PutICRC wrote into a 3-byte slice")
	}
}

// TestUpdateIEEE8 compares the masked-header CRC loop with hash/crc32 for
// every length up to twice the largest masked span.
func TestUpdateIEEE8(t *testing.T) {
	data := make([]byte, 2*maxMasked)
	for i := range data {
		data[i] = byte(i*131 + 7)
	}
	for n := 0; n <= len(data); n++ {
		for _, seed := range []uint32{0, icrcSeed, 0xdeadbeef} {
			if got, want := updateIEEE8(seed, data[:n]), crc32Update(seed, data[:n]); got != want {
				t.Fatalf("n=%d seed=%#x: %#x, want %#x", n, seed, got, want)
			}
		}
	}
}
