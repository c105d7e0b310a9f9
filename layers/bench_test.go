package layers

import (
	"fmt"
	"testing"

	"github.com/gopacket/gopacket"
)

// benchPacket is an RDMA WRITE ONLY with immediate over IPv4 with a payload
// of n bytes, up to (not including) the ICRC.
func benchPacket(n int) []byte {
	p := make([]byte, 20+8+BTHLen+RETHLen+ImmDtLen+n)
	p[0], p[9] = 0x45, 17
	p[20+2], p[20+3] = 0x12, 0xb7
	p[28] = byte(OpRCRDMAWriteOnlyWithImmediate)
	for i := 28 + BTHLen; i < len(p); i++ {
		p[i] = byte(i)
	}
	return p
}

func BenchmarkDecodeBTH(b *testing.B) {
	data := benchPacket(64)[28:]
	var bth BTH
	b.SetBytes(BTHLen)
	b.ReportAllocs()
	for b.Loop() {
		if err := bth.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeExtHeaders(b *testing.B) {
	for _, tc := range []struct {
		name string
		op   Opcode
	}{
		{"RETH+ImmDt", OpRCRDMAWriteOnlyWithImmediate},
		{"RDETH+DETH+RETH+ImmDt", OpBaseRD | OpRCRDMAWriteOnlyWithImmediate},
		{"AETH", OpRCAcknowledge},
	} {
		b.Run(tc.name, func(b *testing.B) {
			data := benchPacket(64)[28+BTHLen:]
			var set ExtHeaderSet
			b.SetBytes(int64(tc.op.ExtHeaders().Len()))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := DecodeExtHeaders(tc.op, data, &set); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkComputeICRC(b *testing.B) {
	for _, n := range []int{64, 1024} {
		b.Run(fmt.Sprintf("IPv4-%dB", n), func(b *testing.B) {
			pkt := benchPacket(n)
			b.SetBytes(int64(len(pkt)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ComputeICRC(ICRCIPv4, pkt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGopacketDecode(b *testing.B) {
	frame := append(make([]byte, 14), benchPacket(64)...)
	frame[12], frame[13] = 0x08, 0x00
	frame = append(frame, 0, 0, 0, 0)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		p := gopacket.NewPacket(frame, LayerTypeBTH, gopacket.NoCopy)
		if p.ErrorLayer() != nil {
			b.Fatal(p.ErrorLayer().Error())
		}
	}
}
