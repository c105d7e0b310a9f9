package layers

import (
	"testing"

	"github.com/gopacket/gopacket"
)

// TestZeroAllocs proves that the per-packet paths do not allocate.
func TestZeroAllocs(t *testing.T) {
	frames := readFrames(t, "vectors/vectors.pcap")
	ops := readFrames(t, "vectors/ops.pcap")
	v4 := frames[0][14 : len(frames[0])-4]
	v6 := frames[1][14 : len(frames[1])-4]
	grh := frames[3][14 : len(frames[3])-4]
	writeImm := ops[6][14+20+8 : len(ops[6])-4] // BTH, RETH, ImmDt, payload

	rdData := make([]byte, 40)
	var bth BTH
	var set ExtHeaderSet
	var aeth AETH
	var sink uint32
	var sinkS string
	cases := []struct {
		name string
		fn   func()
	}{
		{"BTH.DecodeFromBytes", func() { _ = bth.DecodeFromBytes(writeImm, gopacket.NilDecodeFeedback) }},
		{"BTH.DecodeFromBytes error", func() { _ = bth.DecodeFromBytes(writeImm[:5], gopacket.NilDecodeFeedback) }},
		{"DecodeExtHeaders", func() { _, _, _ = DecodeExtHeaders(OpRCRDMAWriteOnlyWithImmediate, writeImm[BTHLen:], &set) }},
		{"DecodeExtHeaders RD", func() { _, _, _ = DecodeExtHeaders(OpBaseRD|OpRCRDMAWriteOnly, rdData, &set) }},
		{"AETH.DecodeFromBytes", func() { _ = aeth.DecodeFromBytes(writeImm[:4], gopacket.NilDecodeFeedback) }},
		{"ComputeICRC IPv4", func() { sink, _ = ComputeICRC(ICRCIPv4, v4) }},
		{"ComputeICRC IPv6", func() { sink, _ = ComputeICRC(ICRCIPv6, v6) }},
		{"ComputeICRC GRH", func() { sink, _ = ComputeICRC(ICRCGRH, grh) }},
		{"ComputeICRC error", func() { sink, _ = ComputeICRC(ICRCIPv4, v4[:10]) }},
		{"ICRCFromWire", func() { sink = ICRCFromWire(frames[0][len(frames[0])-4:]) }},
		{"AETH.Verdict", func() { aeth.Syndrome++; sinkS = aeth.Verdict() }},
		{"Opcode.String", func() { sinkS = Opcode(sink).String(); sink++ }},
		{"ExtHeaders.String", func() { sinkS = OpBaseRD.ExtHeaders().String() }},
		{"NAKCode.String", func() { sinkS = NAKCode(sink).String(); sink++ }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(200, tc.fn); n != 0 {
				t.Errorf("%v allocations per run, want 0", n)
			}
		})
	}
	_, _ = sink, sinkS
}
