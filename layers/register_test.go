package layers

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// layerNames returns the layer types of a packet as a space-separated list.
func layerNames(p gopacket.Packet) string {
	var names []string
	for _, l := range p.Layers() {
		names = append(names, l.LayerType().String())
	}
	return strings.Join(names, " ")
}

// The expected layer lists follow tshark 4.0's header decode of the same
// frames, with the ICRC as its own layer after the payload, and the CNP block
// and IBTA 1.5 headers tshark does not know.
var packetCases = []struct {
	file   string
	frame  int
	layers string
	err    error // the decode error the packet ends with, if any
}{
	{"vectors/vectors.pcap", 1, "Ethernet IPv4 UDP BTH Payload ICRC", nil},
	{"vectors/vectors.pcap", 2, "Ethernet IPv6 UDP BTH Payload ICRC", nil},
	{"vectors/vectors.pcap", 3, "Ethernet IPv4 UDP BTH CNP ICRC", nil},
	{"vectors/vectors.pcap", 4, "Ethernet GRH BTH RETH Payload ICRC", nil},
	{"vectors/vectors.pcap", 5, "Ethernet GRH BTH AETH ICRC", nil},
	{"vectors/vectors.pcap", 6, "Ethernet IPv4 UDP BTH Payload ICRC", nil},
	{"vectors/ops.pcap", 1, "Ethernet IPv4 UDP BTH ImmDt Payload ICRC", nil},
	{"vectors/ops.pcap", 2, "Ethernet IPv4 UDP BTH IETH Payload ICRC", nil},
	{"vectors/ops.pcap", 3, "Ethernet IPv4 UDP BTH DETH Payload ICRC", nil},
	{"vectors/ops.pcap", 4, "Ethernet IPv4 UDP BTH AtomicETH ICRC", nil},
	{"vectors/ops.pcap", 5, "Ethernet IPv4 UDP BTH AETH AtomicAckETH ICRC", nil},
	{"vectors/ops.pcap", 6, "Ethernet IPv4 UDP BTH RETH ICRC", nil},
	{"vectors/ops.pcap", 7, "Ethernet IPv4 UDP BTH RETH ImmDt Payload ICRC", nil},
	// FLUSH with 16 bytes of zero filler where FETH and RETH need 20.
	{"vectors/ops.pcap", 8, "Ethernet IPv4 UDP BTH FETH DecodeFailure", ErrRETHTooShort},
	// ATOMIC WRITE: RETH and its 8-byte payload.
	{"vectors/ops.pcap", 9, "Ethernet IPv4 UDP BTH RETH Payload ICRC", nil},
}

func TestGopacketLayers(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		opts := gopacket.DecodeOptions{Lazy: lazy}
		name := "eager"
		if lazy {
			name = "lazy"
		}
		t.Run(name, func(t *testing.T) {
			for _, tc := range packetCases {
				frame := readFrames(t, tc.file)[tc.frame-1]
				t.Run(fmt.Sprintf("%s#%d", tc.file, tc.frame), func(t *testing.T) {
					p := gopacket.NewPacket(frame, gplayers.LayerTypeEthernet, opts)
					if got := layerNames(p); got != tc.layers {
						t.Errorf("layers %q, want %q", got, tc.layers)
					}
					if tc.err != nil {
						if el := p.ErrorLayer(); el == nil || !errors.Is(el.Error(), tc.err) {
							t.Errorf("error layer %v, want %v", el, tc.err)
						}
						return
					}
					if el := p.ErrorLayer(); el != nil {
						t.Fatalf("decode error: %v", el.Error())
					}
					ic, ok := p.Layer(LayerTypeICRC).(*ICRC)
					if !ok {
						t.Fatal("no ICRC layer")
					}
					if want := ICRCFromWire(frame[len(frame)-4:]); ic.Value != want || !bytes.Equal(ic.Contents, frame[len(frame)-4:]) {
						t.Errorf("ICRC %#x (% x), want %#x from the frame's last bytes", ic.Value, ic.Contents, want)
					}
					if ic.LayerPayload() != nil && len(ic.LayerPayload()) != 0 {
						t.Errorf("ICRC has a payload: % x", ic.LayerPayload())
					}
				})
			}
		})
	}
}

func TestGopacketPayloadExcludesICRC(t *testing.T) {
	frame := readFrames(t, "vectors/ops.pcap")[0] // SEND_ONLY_WITH_IMMEDIATE, 8 bytes of 0x11
	p := gopacket.NewPacket(frame, gplayers.LayerTypeEthernet, gopacket.Default)
	app := p.ApplicationLayer()
	if app == nil {
		t.Fatal("no application layer")
	}
	if !bytes.Equal(app.Payload(), bytes.Repeat([]byte{0x11}, 8)) {
		t.Errorf("payload % x, want eight 0x11 bytes", app.Payload())
	}
	bth := p.Layer(LayerTypeBTH).(*BTH)
	if bth.Opcode != OpRCSendOnlyWithImmediate || bth.DestQP != 0x33 || bth.PSN != 7 {
		t.Errorf("BTH %+v", bth)
	}
	if !bytes.Equal(bth.Payload, frame[14+20+8+12:len(frame)-4]) {
		t.Errorf("BTH payload % x includes bytes outside ImmDt and payload", bth.Payload)
	}
	imm := p.Layer(LayerTypeImmDt).(*ImmDt)
	if imm.Immediate != 0xdeadbeef || imm.NextLayerType() != gopacket.LayerTypePayload {
		t.Errorf("ImmDt %#x next %v", imm.Immediate, imm.NextLayerType())
	}
}

func TestGopacketChainNextLayerTypes(t *testing.T) {
	frame := readFrames(t, "vectors/ops.pcap")[6] // RDMA WRITE ONLY with immediate
	p := gopacket.NewPacket(frame, gplayers.LayerTypeEthernet, gopacket.Default)
	want := []gopacket.LayerType{LayerTypeRETH, LayerTypeImmDt, gopacket.LayerTypePayload}
	got := []gopacket.LayerType{
		p.Layer(LayerTypeBTH).(*BTH).NextLayerType(),
		p.Layer(LayerTypeRETH).(*RETH).NextLayerType(),
		p.Layer(LayerTypeImmDt).(*ImmDt).NextLayerType(),
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: next %v, want %v", i, got[i], want[i])
		}
	}
}

// TestGopacketReserializes serializes the decoded layers of each complete
// packet again and expects the original frame, byte for byte.
func TestGopacketReserializes(t *testing.T) {
	for _, tc := range packetCases {
		if tc.err != nil {
			continue
		}
		frame := readFrames(t, tc.file)[tc.frame-1]
		t.Run(fmt.Sprintf("%s#%d", tc.file, tc.frame), func(t *testing.T) {
			p := gopacket.NewPacket(frame, gplayers.LayerTypeEthernet, gopacket.Default)
			var ls []gopacket.SerializableLayer
			for _, l := range p.Layers() {
				sl, ok := l.(gopacket.SerializableLayer)
				if !ok {
					t.Fatalf("layer %v is not serializable", l.LayerType())
				}
				ls = append(ls, sl)
			}
			buf := gopacket.NewSerializeBuffer()
			// FixLengths recomputes the IP, UDP and GRH lengths, which must
			// come out as captured.
			if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, ls...); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), frame) {
				t.Errorf("reserialized\n% x\nwant\n% x", buf.Bytes(), frame)
			}
		})
	}
}

func TestGopacketTruncatedCapture(t *testing.T) {
	frames := readFrames(t, "real/nccl-uc-truncated.pcap")
	checked := 0
	for i, fr := range frames {
		_, _, complete, roce := roceSpan(fr)
		if !roce || complete {
			continue
		}
		p := gopacket.NewPacket(fr, gplayers.LayerTypeEthernet, gopacket.Default)
		if !p.Metadata().Truncated {
			t.Errorf("frame %d: not marked truncated", i+1)
		}
		if p.Layer(LayerTypeICRC) != nil {
			t.Errorf("frame %d: ICRC layer in a frame cut short: %s", i+1, layerNames(p))
		}
		if p.Layer(LayerTypeBTH) == nil {
			t.Errorf("frame %d: no BTH: %s", i+1, layerNames(p))
		}
		if last := p.Layers()[len(p.Layers())-1]; !bytes.HasSuffix(fr, last.LayerContents()) {
			t.Errorf("frame %d: last layer %v does not end the captured bytes", i+1, last.LayerType())
		}
		checked++
	}
	if checked != 489 {
		t.Errorf("checked %d truncated RoCE frames, the README says 489", checked)
	}
}

// buildUDP serializes Ethernet, IPv4, UDP and payload.
func buildUDP(t *testing.T, src, dst uint16, payload []byte) []byte {
	t.Helper()
	eth := &gplayers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		EthernetType: gplayers.EthernetTypeIPv4}
	ip := &gplayers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: gplayers.IPProtocolUDP,
		SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
	udp := &gplayers.UDP{SrcPort: gplayers.UDPPort(src), DstPort: gplayers.UDPPort(dst)}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ackBody is an RC ACKNOWLEDGE: BTH, AETH and a zero ICRC.
var ackBody = []byte{0x11, 0, 0xff, 0xff, 0, 0, 0, 0x33, 0, 0, 0, 7, 0x00, 0, 0, 5, 0, 0, 0, 0}

func TestGopacketPorts(t *testing.T) {
	t.Run("destination 4791", func(t *testing.T) {
		p := gopacket.NewPacket(buildUDP(t, 50000, UDPPortRoCEv2, ackBody), gplayers.LayerTypeEthernet, gopacket.Default)
		if got := layerNames(p); got != "Ethernet IPv4 UDP BTH AETH ICRC" {
			t.Errorf("layers %q", got)
		}
	})
	t.Run("source 4791 only", func(t *testing.T) {
		// gopacket's UDP layer falls back to the source port; this is why
		// the package documentation tells dissectors to check the
		// destination port themselves. If gopacket stops doing so, the
		// documentation should change.
		p := gopacket.NewPacket(buildUDP(t, UDPPortRoCEv2, 9999, ackBody), gplayers.LayerTypeEthernet, gopacket.Default)
		if p.Layer(LayerTypeBTH) == nil {
			t.Errorf("gopacket no longer falls back to the source port: %s", layerNames(p))
		}
	})
	t.Run("other ports", func(t *testing.T) {
		p := gopacket.NewPacket(buildUDP(t, 50000, 9999, ackBody), gplayers.LayerTypeEthernet, gopacket.Default)
		if got := layerNames(p); got != "Ethernet IPv4 UDP Payload" {
			t.Errorf("layers %q", got)
		}
	})
	t.Run("RegisterPort", func(t *testing.T) {
		const port = 47910
		RegisterPort(port)
		p := gopacket.NewPacket(buildUDP(t, 50000, port, ackBody), gplayers.LayerTypeEthernet, gopacket.Default)
		if got := layerNames(p); got != "Ethernet IPv4 UDP BTH AETH ICRC" {
			t.Errorf("layers %q", got)
		}
	})
	t.Run("AETH missing", func(t *testing.T) {
		body := append(append([]byte{}, ackBody[:12]...), 0, 0, 0, 0) // BTH and ICRC only
		p := gopacket.NewPacket(buildUDP(t, 50000, UDPPortRoCEv2, body), gplayers.LayerTypeEthernet, gopacket.Default)
		el := p.ErrorLayer()
		if el == nil || el.Error().Error() != "AETH cut short: 0 of 4 bytes" || !errors.Is(el.Error(), ErrAETHTooShort) {
			t.Errorf("error layer %v; layers %s", el, layerNames(p))
		}
	})
	t.Run("BTH cut short", func(t *testing.T) {
		p := gopacket.NewPacket(buildUDP(t, 50000, UDPPortRoCEv2, ackBody[:11]), gplayers.LayerTypeEthernet, gopacket.Default)
		if el := p.ErrorLayer(); el == nil || !errors.Is(el.Error(), ErrBTHTooShort) {
			t.Errorf("error layer %v", el)
		}
	})
	t.Run("unknown opcode is payload", func(t *testing.T) {
		body := append([]byte{}, ackBody...)
		body[0] = 0x1E
		p := gopacket.NewPacket(buildUDP(t, 50000, UDPPortRoCEv2, body), gplayers.LayerTypeEthernet, gopacket.Default)
		if got := layerNames(p); got != "Ethernet IPv4 UDP BTH Payload ICRC" {
			t.Errorf("layers %q", got)
		}
		if app := p.ApplicationLayer(); app == nil || !bytes.Equal(app.Payload(), body[12:16]) {
			t.Errorf("payload %v, want % x", app, body[12:16])
		}
	})
}

func TestGopacketRoCEv1Trailer(t *testing.T) {
	// An Ethernet FCS (or any trailer) after a RoCEv1 packet lies beyond the
	// GRH's PayloadLength and must not be taken for the ICRC.
	frame := readFrames(t, "vectors/vectors.pcap")[4]
	withFCS := append(append([]byte{}, frame...), 0xde, 0xad, 0xbe, 0xef)
	p := gopacket.NewPacket(withFCS, gplayers.LayerTypeEthernet, gopacket.Default)
	if got := layerNames(p); got != "Ethernet GRH BTH AETH ICRC" {
		t.Fatalf("layers %q", got)
	}
	if ic := p.Layer(LayerTypeICRC).(*ICRC); ic.Value != 0x38c0f025 {
		t.Errorf("ICRC %#x, want 0x38c0f025", ic.Value)
	}
	if nl := p.NetworkLayer(); nl == nil || nl.LayerType() != LayerTypeGRH {
		t.Errorf("network layer %v, want GRH", nl)
	} else if f := nl.NetworkFlow(); !bytes.Equal(f.Src().Raw(), frame[14+8:14+24]) || !bytes.Equal(f.Dst().Raw(), frame[14+24:14+40]) {
		t.Errorf("flow %v, want the GIDs ::ffff:15.0.0.2 both ways", f)
	}
}

func TestLayerTypeNames(t *testing.T) {
	want := map[gopacket.LayerType]string{
		LayerTypeBTH: "BTH", LayerTypeRETH: "RETH", LayerTypeAETH: "AETH", LayerTypeDETH: "DETH",
		LayerTypeRDETH: "RDETH", LayerTypeXRCETH: "XRCETH", LayerTypeImmDt: "ImmDt", LayerTypeIETH: "IETH",
		LayerTypeAtomicETH: "AtomicETH", LayerTypeAtomicAckETH: "AtomicAckETH", LayerTypeFETH: "FETH",
		LayerTypeCNP: "CNP", LayerTypeGRH: "GRH", LayerTypeICRC: "ICRC",
	}
	seen := map[gopacket.LayerType]bool{}
	for lt, name := range want {
		if lt.String() != name {
			t.Errorf("%d: %q, want %q", int(lt), lt.String(), name)
		}
		if int(lt) < layerTypeBase || int(lt) > layerTypeBase+13 || seen[lt] {
			t.Errorf("%s: number %d outside the private range or repeated", name, int(lt))
		}
		seen[lt] = true
	}
}

func TestDecodeSingleLayerType(t *testing.T) {
	// A caller may start gopacket at an extended header.
	p := gopacket.NewPacket(unhex(t, "00 00 00 00 00 00 10 00 00 00 ab cd 00 00 00 08 99"), LayerTypeRETH, gopacket.Default)
	if got := layerNames(p); got != "RETH Payload" {
		t.Errorf("layers %q", got)
	}
	p = gopacket.NewPacket(unhex(t, "78 f3 53 f3"), LayerTypeICRC, gopacket.Default)
	if ic, ok := p.Layer(LayerTypeICRC).(*ICRC); !ok || ic.Value != 0xf353f378 {
		t.Errorf("ICRC layer %v", p.Layer(LayerTypeICRC))
	}
}
