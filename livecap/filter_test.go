package livecap

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/bpf"

	"roce-inspect/capture"
	"roce-inspect/dissect"
	lt "roce-inspect/livecap/livecaptest"
)

// vm assembles a raw program, as the kernel receives it, into
// golang.org/x/net/bpf's VM.
func vm(t *testing.T, raw []bpf.RawInstruction) *bpf.VM {
	t.Helper()
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("program does not disassemble: %v", raw)
	}
	v, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	return v
}

// Frames of the accept/reject table, built by hand from the headers'
// definitions in livecaptest.
var (
	bth      = lt.BTHSendOnly()
	v4       = lt.IPv4(lt.ProtoUDP, nil, 0, lt.UDP(49152, lt.RoCEv2Port, bth))
	v6       = lt.IPv6(lt.ProtoUDP, lt.UDP(49152, lt.RoCEv2Port, bth))
	grh      = lt.GRH(bth)
	vlan     = lt.Tag{TPID: lt.TPIDVLAN, TCI: 0x6064} // priority 3, VLAN 100
	sTag     = lt.Tag{TPID: lt.TPIDQinQ, TCI: 0x00c8} // VLAN 200
	tag9100  = lt.Tag{TPID: 0x9100, TCI: 0x012c}      // VLAN 300
	qinq     = []lt.Tag{sTag, vlan}
	routerOp = []byte{0x94, 0x04, 0x12, 0xb7} // IP option Router Alert (RFC 2113), value 0x12b7 = 4791
)

func TestRoCEFilter(t *testing.T) {
	noRoCE := lt.NotRoCE()
	byName := map[string][]byte{}
	for _, l := range noRoCE {
		byName[l.Name] = l.Frame
	}
	// badIHL is an IPv4 header claiming 16 bytes (IHL 4) whose
	// destination address ends in 0x12b7: where a 16-byte header would put
	// the UDP destination port, the bytes read 4791.
	badIHL := lt.IPv4(lt.ProtoUDP, nil, 0, lt.UDP(49152, lt.RoCEv2Port, bth))
	badIHL[0] = 0x44
	badIHL[18], badIHL[19] = 0x12, 0xb7
	// The first fragment of a datagram (more fragments set, offset 0)
	// carries the UDP header.
	firstFrag := lt.IPv4(lt.ProtoUDP, nil, 0, lt.UDP(49152, lt.RoCEv2Port, bth))
	firstFrag[6] = 0x20 // MF, offset 0 (checksum not recomputed: no one checks it here)
	ipv6HopByHop := lt.IPv6(0, append([]byte{lt.ProtoUDP, 0, 1, 0, 0, 0, 0, 0}, lt.UDP(49152, lt.RoCEv2Port, bth)...))

	tests := []struct {
		name  string
		frame []byte
		ports []uint16
		want  bool
		// decoder is what the dissector says of the frame, where it
		// agrees with the filter; the exceptions are documented on
		// RoCEFilter.
		decoder bool
	}{
		{"RoCEv2 IPv4", lt.Ethernet(nil, lt.EtherTypeIPv4, v4), nil, true, true},
		{"RoCEv2 IPv6", lt.Ethernet(nil, lt.EtherTypeIPv6, v6), nil, true, true},
		{"RoCEv2 IPv4 with options", lt.Ethernet(nil, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoUDP, routerOp, 0, lt.UDP(49152, lt.RoCEv2Port, bth))), nil, true, true},
		{"IPv4 options read as a port", lt.Ethernet(nil, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoUDP, routerOp, 0, lt.UDP(49152, 9999, bth))), nil, false, false},
		{"IPv4 header length below 20", lt.Ethernet(nil, lt.EtherTypeIPv4, badIHL), nil, false, false},
		{"RoCEv1", lt.Ethernet(nil, lt.EtherTypeRoCEv1, grh), nil, true, true},
		{"RoCEv1 VLAN", lt.Ethernet([]lt.Tag{vlan}, lt.EtherTypeRoCEv1, grh), nil, true, true},
		{"RoCEv1 QinQ", lt.Ethernet(qinq, lt.EtherTypeRoCEv1, grh), nil, true, true},
		{"RoCEv2 IPv4 VLAN", lt.Ethernet([]lt.Tag{vlan}, lt.EtherTypeIPv4, v4), nil, true, true},
		{"RoCEv2 IPv6 VLAN", lt.Ethernet([]lt.Tag{vlan}, lt.EtherTypeIPv6, v6), nil, true, true},
		{"RoCEv2 IPv4 QinQ", lt.Ethernet(qinq, lt.EtherTypeIPv4, v4), nil, true, true},
		{"RoCEv2 IPv6 QinQ", lt.Ethernet(qinq, lt.EtherTypeIPv6, v6), nil, true, true},
		{"RoCEv2 IPv4 double 802.1Q", lt.Ethernet([]lt.Tag{vlan, vlan}, lt.EtherTypeIPv4, v4), nil, true, true},
		{"RoCEv2 IPv4 tag 0x9100", lt.Ethernet([]lt.Tag{tag9100}, lt.EtherTypeIPv4, v4), nil, true, true},
		{"RoCEv2 IPv4 VLAN with options", lt.Ethernet([]lt.Tag{vlan}, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoUDP, routerOp, 0, lt.UDP(49152, lt.RoCEv2Port, bth))), nil, true, true},
		{"RoCEv2 IPv4 three tags", lt.Ethernet([]lt.Tag{sTag, vlan, vlan}, lt.EtherTypeIPv4, v4), nil, false, true},
		{"first fragment", lt.Ethernet(nil, lt.EtherTypeIPv4, firstFrag), nil, true, false},
		{"IPv6 extension header", lt.Ethernet(nil, lt.EtherTypeIPv6, ipv6HopByHop), nil, false, false},
		{"source port 4791 only", byName["UDP from port 4791"], nil, false, false},
		{"IPv6 source port 4791 only", byName["IPv6 UDP from port 4791"], nil, false, false},
		{"TCP to 4791", byName["TCP to port 4791"], nil, false, false},
		{"TCP to 4791 in VLAN", lt.InsertTag(byName["TCP to port 4791"], vlan), nil, false, false},
		{"ARP", byName["ARP request"], nil, false, false},
		{"ARP in QinQ", lt.InsertTag(lt.InsertTag(byName["ARP request"], vlan), sTag), nil, false, false},
		{"non-first fragment", byName["non-first IPv4 fragment"], nil, false, false},
		{"extra port, not configured", lt.Ethernet(nil, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoUDP, nil, 0, lt.UDP(49152, 4792, bth))), nil, false, false},
		{"extra port IPv4", lt.Ethernet(nil, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoUDP, nil, 0, lt.UDP(49152, 4792, bth))), []uint16{4792}, true, true},
		{"extra port IPv6 QinQ", lt.Ethernet(qinq, lt.EtherTypeIPv6, lt.IPv6(lt.ProtoUDP, lt.UDP(49152, 4792, bth))), []uint16{1, 4792}, true, true},
		{"4791 with extra ports", lt.Ethernet(nil, lt.EtherTypeIPv4, v4), []uint16{4792, 4791}, true, true},
		{"Ethernet header only", lt.Ethernet(nil, lt.EtherTypeIPv4, nil), nil, false, false},
		{"cut in the UDP header", lt.Ethernet(nil, lt.EtherTypeIPv4, v4)[:14+20+3], nil, false, false},
		{"cut in the VLAN tag", lt.Ethernet([]lt.Tag{vlan}, lt.EtherTypeIPv4, v4)[:15], nil, false, false},
		{"empty", nil, nil, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := RoCEFilter(tc.ports...)
			if err != nil {
				t.Fatal(err)
			}
			n, err := vm(t, raw).Run(tc.frame)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := n != 0; got != tc.want {
				t.Fatalf("filter admits = %v (returned %d), want %v", got, n, tc.want)
			}
			if tc.want && n != acceptLen {
				t.Errorf("filter keeps %d bytes, want %d: frames must never be cut", n, acceptLen)
			}
			dec := dissect.NewDecoder(tc.ports...)
			var p dissect.Packet
			f := capture.Frame{Data: tc.frame, CapLen: len(tc.frame), Len: len(tc.frame), LinkType: 1, Index: 1}
			if got := dec.Decode(&f, &p) == dissect.RoCE; got != tc.decoder {
				t.Errorf("dissector says RoCE = %v, want %v", got, tc.decoder)
			}
		})
	}
}

// TestRoCEFilterKernelView checks frames as a packet socket sees them after
// the kernel moved the outer VLAN tag to metadata: the data then holds one
// tag fewer, and the filter must still admit RoCE and refuse the rest.
func TestRoCEFilterKernelView(t *testing.T) {
	raw, err := RoCEFilter()
	if err != nil {
		t.Fatal(err)
	}
	v := vm(t, raw)
	strip := func(frame []byte) []byte { // remove the outermost tag, as skb_vlan_untag does
		return append(append([]byte(nil), frame[:12]...), frame[16:]...)
	}
	tests := []struct {
		name  string
		frame []byte
		want  bool
	}{
		{"VLAN RoCEv2", lt.Ethernet([]lt.Tag{vlan}, lt.EtherTypeIPv4, v4), true},
		{"QinQ RoCEv2 IPv6", lt.Ethernet(qinq, lt.EtherTypeIPv6, v6), true},
		{"three tags RoCEv2", lt.Ethernet([]lt.Tag{sTag, vlan, vlan}, lt.EtherTypeIPv4, v4), true},
		{"QinQ RoCEv1", lt.Ethernet(qinq, lt.EtherTypeRoCEv1, grh), true},
		{"QinQ TCP", lt.Ethernet(qinq, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoTCP, nil, 0, lt.TCP(1, lt.RoCEv2Port, nil))), false},
		{"VLAN ARP", lt.InsertTag(lt.ARP(), vlan), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := v.Run(strip(tc.frame))
			if err != nil {
				t.Fatal(err)
			}
			if got := n != 0; got != tc.want {
				t.Errorf("filter admits = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRoCEFilterPorts(t *testing.T) {
	frameTo := func(port uint16) []byte {
		return lt.Ethernet(nil, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoUDP, nil, 0, lt.UDP(49152, port, bth)))
	}
	many := make([]uint16, maxExtraPorts)
	for i := range many {
		many[i] = uint16(10000 + i)
	}
	raw, err := RoCEFilter(many...)
	if err != nil {
		t.Fatalf("%d extra ports: %v", len(many), err)
	}
	v := vm(t, raw)
	// The first and last ports of the chain have the longest jumps.
	for _, port := range []uint16{4791, 10000, uint16(10000 + maxExtraPorts - 1)} {
		if n, _ := v.Run(frameTo(port)); n == 0 {
			t.Errorf("port %d refused", port)
		}
	}
	for _, port := range []uint16{4790, uint16(10000 + maxExtraPorts)} {
		if n, _ := v.Run(frameTo(port)); n != 0 {
			t.Errorf("port %d admitted", port)
		}
	}
	if _, err := RoCEFilter(append(many, 9)...); !errors.Is(err, ErrBadFilter) {
		t.Errorf("%d extra ports: err = %v, want ErrBadFilter", len(many)+1, err)
	}
	// Duplicates and 4791 itself cost nothing.
	a, _ := RoCEFilter(4792)
	b, _ := RoCEFilter(4792, 4791, 4792)
	if len(a) != len(b) {
		t.Errorf("duplicate ports grew the program from %d to %d instructions", len(a), len(b))
	}
}

func TestParseTcpdumpDD(t *testing.T) {
	prog, err := ParseTcpdumpDD(lt.TcpdumpUDPDst4791)
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) != 16 {
		t.Fatalf("%d instructions, want 16", len(prog))
	}
	want := map[int]bpf.RawInstruction{
		0:  {Op: 0x28, K: 12},
		5:  {Op: 0x15, Jt: 8, Jf: 9, K: 4791},
		11: {Op: 0xb1, K: 14},
		14: {Op: 0x06, K: 262144},
	}
	for i, w := range want {
		if prog[i] != w {
			t.Errorf("instruction %d = %+v, want %+v", i, prog[i], w)
		}
	}
	// The parsed program runs: it admits UDP to 4791 over IPv4 (options
	// included) and IPv6 and, having no VLAN clause, nothing tagged.
	v := vm(t, prog)
	for _, tc := range []struct {
		name  string
		frame []byte
		want  bool
	}{
		{"IPv4", lt.Ethernet(nil, lt.EtherTypeIPv4, v4), true},
		{"IPv4 options", lt.Ethernet(nil, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoUDP, routerOp, 0, lt.UDP(1, lt.RoCEv2Port, bth))), true},
		{"IPv6", lt.Ethernet(nil, lt.EtherTypeIPv6, v6), true},
		{"VLAN", lt.Ethernet([]lt.Tag{vlan}, lt.EtherTypeIPv4, v4), false},
		{"source port", lt.NotRoCE()[2].Frame, false},
	} {
		if n, _ := v.Run(tc.frame); (n != 0) != tc.want {
			t.Errorf("%s: admitted = %v, want %v", tc.name, n != 0, tc.want)
		}
	}
	// Spacing, decimal fields and a missing last comma are accepted.
	if p, err := ParseTcpdumpDD("\n  {0x6,0,0,65535}  \n\n"); err != nil || len(p) != 1 || p[0].K != 65535 {
		t.Errorf("loose spacing: %v, %v", p, err)
	}
}

func TestParseTcpdumpDDErrors(t *testing.T) {
	long := strings.Repeat("{ 0x28, 0, 0, 0x0000000c },\n", MaxFilterLen) + "{ 0x6, 0, 0, 0 },\n"
	tests := []struct {
		name, text, wantMsg string
	}{
		{"empty", "", "no instructions"},
		{"blank lines", "\n \n", "no instructions"},
		{"tcpdump -d form", "(000) ldh      [12]\n", "line 1"},
		{"tcpdump -ddd form", "4\n40 0 0 12\n", "line 1"},
		{"missing brace", "{ 0x28, 0, 0, 0x0000000c ,\n", "line 1"},
		{"three fields", "{ 0x6, 0, 0 },\n", "3 fields"},
		{"five fields", "{ 0x6, 0, 0, 0, 0 },\n", "5 fields"},
		{"not a number", "{ 0x6, 0, 0, ret },\n", `k "ret"`},
		{"jt too large", "{ 0x15, 256, 0, 1 },\n{ 0x6, 0, 0, 0 },\n", `jt "256" is not a 8-bit number`},
		{"code too large", "{ 0x10000, 0, 0, 0 },\n", "code"},
		{"k too large", "{ 0x6, 0, 0, 0x100000000 },\n", "k"},
		{"negative", "{ 0x6, 0, 0, -1 },\n", "k"},
		{"garbage after", "{ 0x6, 0, 0, 0 }, x\n", "line 1"},
		{"second line bad", "{ 0x28, 0, 0, 0x0000000c },\n{ 0x6 0 0 0 },\n", "line 2"},
		{"jump past the end", "{ 0x15, 1, 0, 1 },\n{ 0x6, 0, 0, 0 },\n", "past the end"},
		{"ja past the end", "{ 0x5, 0, 0, 1 },\n{ 0x6, 0, 0, 0 },\n", "past the end"},
		{"no return at the end", "{ 0x28, 0, 0, 0x0000000c },\n", "not a return"},
		{"too long", long, "more than 4096"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTcpdumpDD(tc.text)
			if !errors.Is(err, ErrBadFilter) {
				t.Fatalf("err = %v, want ErrBadFilter", err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tc.wantMsg)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err spans lines: %q", err)
			}
		})
	}
}

// ExampleRoCEFilter prints the filter in tcpdump -dd form.
func ExampleRoCEFilter() {
	raw, _ := RoCEFilter()
	fmt.Println(len(raw), "instructions; first:", raw[0], "last:", raw[len(raw)-1])
	// Output:
	// 35 instructions; first: {40 0 0 12} last: {6 0 0 262144}
}
