package dissect

import (
	"encoding/hex"
	"testing"

	"roce-inspect/capture"
)

// Real frames, as hex dumps.
const (
	// uc4 is scapy's RoCEv2 test packet: UC SEND_ONLY over IPv4 from
	// 192.168.0.7 to 192.168.0.7, UDP 49152 > 4791, QP 0xd3, PSN
	// 13571856, pad count 2, 20 payload bytes, ICRC bytes 78 f3 53 f3.
	uc4 = "248a07a8fa22248a07a8fa220800" +
		"45010040047840004011b4d5c0a80007c0a80007" + // IPv4, ECT(1), total 64
		"c00012b7002caca2" + // UDP, length 44
		"2460ffff000000d300cf1710" + // BTH
		"4630818be28935d90e9a95505401be885e500000" + // payload
		"78f353f3" // ICRC
	// uc4Options is uc4 with four bytes of IPv4 options (NOP, NOP, NOP,
	// end of list), IHL 6, its IPv4 checksum fixed, and the ICRC
	// computed independently of this project (Python's zlib.crc32 over
	// the masked headers).
	uc4Options = "248a07a8fa22248a07a8fa220800" +
		"46010044047840004011b1d0c0a80007c0a8000701010100" +
		"c00012b7002caca2" + "2460ffff000000d300cf1710" +
		"4630818be28935d90e9a95505401be885e500000" + "02606482"
	// v1Ack is a RoCEv1 RC ACKNOWLEDGE from a ConnectX (the captures'
	// vectors frame 5): GRH with next header 0x1b and IPv4-mapped GIDs,
	// BTH to QP 0x109 with PSN 0xa788c0, AETH syndrome 0, MSN 5.
	v1Ack = "7cfe90753cd87cfe90753cd88915" +
		"6020000000141b40" + "00000000000000000000ffff0f000002" + "00000000000000000000ffff0f000002" +
		"1140ffff0000010900a788c0" + "00000005" + "25f0c038"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// splice returns b with data inserted at off.
func splice(b []byte, off int, data ...byte) []byte {
	out := append([]byte{}, b[:off]...)
	out = append(out, data...)
	return append(out, b[off:]...)
}

// patch returns a copy of b with the bytes at off replaced.
func patch(b []byte, off int, data ...byte) []byte {
	out := append([]byte{}, b...)
	copy(out[off:], data)
	return out
}

func TestDecode(t *testing.T) {
	base := mustHex(t, uc4)
	ip := base[14:]
	sll := append(mustHex(t, "000000010006248a07a8fa2200000800"), ip...)
	sll2 := append(mustHex(t, "080000000000000200010006248a07a8fa220000"), ip...)
	ack := mustHex(t, v1Ack)

	type want struct {
		kind      Kind
		version   uint8
		icrc      ICRCVerdict
		malformed string
		opcode    uint8
		qp, psn   uint32
		vlan      uint16
		payload   int
	}
	good := want{kind: RoCE, version: 2, icrc: ICRCGood, opcode: 0x24, qp: 0xd3, psn: 13571856, payload: 20}
	with := func(w want, f func(*want)) want { f(&w); return w }

	tests := []struct {
		name     string
		frame    []byte
		linkType uint32
		origLen  int // 0: the frame's length
		ports    []uint16
		want     want
	}{
		{"ethernet", base, LinkTypeEthernet, 0, nil, good},
		{"802.1Q", splice(base, 12, 0x81, 0x00, 0x00, 0x64), LinkTypeEthernet, 0, nil,
			with(good, func(w *want) { w.vlan = 100 })},
		{"QinQ 88a8", splice(base, 12, 0x88, 0xa8, 0x00, 0x0a, 0x81, 0x00, 0x00, 0x14), LinkTypeEthernet, 0, nil,
			with(good, func(w *want) { w.vlan = 10 })},
		{"stacked 8100", splice(base, 12, 0x81, 0x00, 0x00, 0x0a, 0x81, 0x00, 0x00, 0x14), LinkTypeEthernet, 0, nil,
			with(good, func(w *want) { w.vlan = 10 })},
		{"Linux SLL", sll, LinkTypeLinuxSLL, 0, nil, good},
		{"Linux SLL2", sll2, LinkTypeSLL2, 0, nil, good},
		{"raw IP", ip, LinkTypeRaw, 0, nil, good},
		{"raw IPv4 link type", ip, LinkTypeIPv4, 0, nil, good},
		{"IPv4 options", mustHex(t, uc4Options), LinkTypeEthernet, 0, nil, good},
		{"RoCEv1 ACK", ack, LinkTypeEthernet, 0, nil,
			want{kind: RoCE, version: 1, icrc: ICRCGood, opcode: 0x11, qp: 0x109, psn: 0xa788c0}},
		{"bad ICRC", patch(base, len(base)-1, 0x00), LinkTypeEthernet, 0, nil,
			with(good, func(w *want) { w.icrc = ICRCBad })},
		// The ICRC covers the UDP destination port, so a frame moved
		// to another port no longer matches it; it is still decoded.
		{"extra port", patch(base, 36, 0x13, 0x88), LinkTypeEthernet, 0, []uint16{5000},
			with(good, func(w *want) { w.icrc = ICRCBad })},
		{"other port", patch(base, 36, 0x13, 0x88), LinkTypeEthernet, 0, nil, want{kind: NotRoCE}},
		{"source port 4791 only", patch(base, 34, 0x12, 0xb7, 0xc0, 0x00), LinkTypeEthernet, 0, nil, want{kind: NotRoCE}},
		{"cut by snap length", base[:60], LinkTypeEthernet, len(base), nil,
			with(good, func(w *want) { w.icrc = ICRCUnverifiable })},
		// Some capture tools record the cut length as the original one:
		// the IP length, beyond the frame, says it was cut.
		{"cut, original length lost", base[:60], LinkTypeEthernet, 60, nil,
			with(good, func(w *want) { w.icrc = ICRCUnverifiable })},
		{"cut inside the BTH", base[:50], LinkTypeEthernet, len(base), nil,
			want{kind: RoCE, version: 2, icrc: ICRCUnverifiable, malformed: ReasonSnapLen}},
		{"UDP length too long", patch(base, 38, 0x00, 0x2d), LinkTypeEthernet, 0, nil,
			want{kind: RoCE, version: 2, malformed: ReasonUDPLength}},
		{"IP length below its headers", patch(base, 16, 0x00, 0x18), LinkTypeEthernet, 0, nil,
			want{kind: RoCE, version: 2, malformed: ReasonIPHeader}},
		{"unknown opcode", patch(base, 42, 0xc0), LinkTypeEthernet, 0, nil,
			with(good, func(w *want) { w.opcode, w.icrc, w.malformed = 0xc0, ICRCBad, ReasonUnknownOpcode })},
		// RC COMPARE SWAP needs a 28-byte AtomicETH; only 20 bytes
		// follow the BTH.
		{"extended header cut short", patch(base, 42, 0x13), LinkTypeEthernet, 0, nil,
			want{kind: RoCE, version: 2, icrc: ICRCBad, opcode: 0x13, qp: 0xd3, psn: 13571856, malformed: ReasonExtHeaderShort}},
		// The ACK has no payload; pad count 3 (and the ICRC, which
		// covers the BTH, no longer matches).
		{"pad count beyond payload", patch(ack, 55, 0x70), LinkTypeEthernet, 0, nil,
			want{kind: RoCE, version: 1, icrc: ICRCBad, opcode: 0x11, qp: 0x109, psn: 0xa788c0, malformed: ReasonPadCount}},
		{"GRH next header not IBA", patch(ack, 20, 0x11), LinkTypeEthernet, 0, nil,
			want{kind: RoCE, version: 1, malformed: ReasonGRHNextHeader}},
		{"IPv4 fragment", patch(base, 20, 0x20, 0x00), LinkTypeEthernet, 0, nil, want{kind: NotRoCE}},
		{"TCP", patch(base, 23, 0x06), LinkTypeEthernet, 0, nil, want{kind: NotRoCE}},
		{"ARP", patch(base, 12, 0x08, 0x06), LinkTypeEthernet, 0, nil, want{kind: NotRoCE}},
		{"unknown link type", base, 147, 0, nil, want{kind: NotRoCE}},
		{"runt", base[:10], LinkTypeEthernet, 0, nil, want{kind: NotRoCE}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := tc.origLen
			if orig == 0 {
				orig = len(tc.frame)
			}
			f := capture.Frame{Data: tc.frame, CapLen: len(tc.frame), Len: orig, LinkType: tc.linkType, Index: 7, Timestamp: 42}
			var p Packet
			k := NewDecoder(tc.ports...).Decode(&f, &p)
			w := tc.want
			if k != w.kind {
				t.Fatalf("kind %d, want %d (malformed %q)", k, w.kind, p.Malformed)
			}
			if k == NotRoCE {
				return
			}
			if p.Frame != 7 || p.Timestamp != 42 || p.Len != orig {
				t.Errorf("frame %d ts %d len %d: frame metadata not carried", p.Frame, p.Timestamp, p.Len)
			}
			if p.Version != w.version || p.ICRC != w.icrc || p.Malformed != w.malformed {
				t.Errorf("version %d icrc %d malformed %q, want %d %d %q", p.Version, p.ICRC, p.Malformed, w.version, w.icrc, w.malformed)
			}
			if w.opcode != 0 || w.qp != 0 {
				if uint8(p.BTH.Opcode) != w.opcode || p.BTH.DestQP != w.qp || p.BTH.PSN != w.psn {
					t.Errorf("opcode %#x QP %#x PSN %d, want %#x %#x %d", uint8(p.BTH.Opcode), p.BTH.DestQP, p.BTH.PSN, w.opcode, w.qp, w.psn)
				}
			}
			if p.VLAN != w.vlan {
				t.Errorf("VLAN %d, want %d", p.VLAN, w.vlan)
			}
			if w.malformed == "" && p.PayloadLen != w.payload {
				t.Errorf("payload length %d, want %d", p.PayloadLen, w.payload)
			}
		})
	}
}

func TestDecodeFields(t *testing.T) {
	f := capture.Frame{Data: mustHex(t, uc4), LinkType: LinkTypeEthernet, Index: 1}
	f.CapLen, f.Len = len(f.Data), len(f.Data)
	var p Packet
	if NewDecoder().Decode(&f, &p) != RoCE {
		t.Fatal("not RoCE")
	}
	// Values read off the hex dump by hand.
	if p.SrcIP.String() != "192.168.0.7" || p.DstIP.String() != "192.168.0.7" || p.SrcPort != 49152 || p.DstPort != 4791 {
		t.Errorf("addresses %v:%d > %v:%d", p.SrcIP, p.SrcPort, p.DstIP, p.DstPort)
	}
	if p.ECN != ECNECT1 || p.DSCP != 0 || p.TTL != 64 {
		t.Errorf("ECN %d DSCP %d TTL %d, want ECT(1) 0 64", p.ECN, p.DSCP, p.TTL)
	}
	b := &p.BTH
	if !b.MigReq || b.SE || b.PadCount != 2 || b.PKey != 0xffff || b.AckReq {
		t.Errorf("BTH flags %+v", b)
	}
	// The captures' README gives the ICRC as Wireshark shows it, the
	// bytes in wire order 78 f3 53 f3; the CRC value is their
	// little-endian reading.
	if p.ICRCFound != 0xf353f378 || p.ICRCComputed != 0xf353f378 {
		t.Errorf("ICRC found %#x computed %#x, want 0xf353f378", p.ICRCFound, p.ICRCComputed)
	}
	if len(p.Payload) != 20 || p.Payload[0] != 0x46 {
		t.Errorf("payload % x", p.Payload)
	}
}

func TestDecodeAllocs(t *testing.T) {
	f := capture.Frame{Data: mustHex(t, uc4), LinkType: LinkTypeEthernet}
	f.CapLen, f.Len = len(f.Data), len(f.Data)
	d := NewDecoder()
	var p Packet
	if n := testing.AllocsPerRun(100, func() { d.Decode(&f, &p) }); n != 0 {
		t.Errorf("Decode allocates %v times per frame, want 0", n)
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, size := range []int{0, 1024} {
		frame := mustHex(b, uc4)
		if size > 0 {
			frame = append(frame[:len(frame)-4], make([]byte, size+4)...)
			total := len(frame) - 14
			frame[16], frame[17] = byte(total>>8), byte(total)
			frame[38], frame[39] = byte((total-20)>>8), byte(total-20)
		}
		f := capture.Frame{Data: frame, CapLen: len(frame), Len: len(frame), LinkType: LinkTypeEthernet}
		b.Run("payload"+itoa(size), func(b *testing.B) {
			d := NewDecoder()
			var p Packet
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				d.Decode(&f, &p)
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// FuzzDecode feeds arbitrary frames of every link type to the decoder: it
// must never panic, and what it reports must be consistent.
func FuzzDecode(f *testing.F) {
	f.Add(mustHex(f, uc4), uint32(LinkTypeEthernet), 0)
	f.Add(mustHex(f, uc4Options), uint32(LinkTypeEthernet), 10)
	f.Add(mustHex(f, v1Ack), uint32(LinkTypeEthernet), 0)
	f.Add(mustHex(f, uc4)[14:], uint32(LinkTypeRaw), 0)
	f.Fuzz(func(t *testing.T, data []byte, linkType uint32, extra int) {
		fr := capture.Frame{Data: data, CapLen: len(data), Len: len(data) + extra&0xffff, LinkType: linkType}
		var p Packet
		k := NewDecoder(9000).Decode(&fr, &p)
		if k == NotRoCE {
			return
		}
		if p.Version != 1 && p.Version != 2 {
			t.Fatalf("RoCE packet of version %d", p.Version)
		}
		if p.ICRC == ICRCGood && p.ICRCFound != p.ICRCComputed {
			t.Fatal("good verdict with different CRCs")
		}
		if len(p.Payload) > p.PayloadLen && p.Malformed == "" {
			t.Fatalf("captured payload %d longer than on the wire %d", len(p.Payload), p.PayloadLen)
		}
	})
}
