package cmd

import (
	"math/bits"
	"net/netip"
	"strconv"
	"time"

	"roce-inspect/dissect"
	"roce-inspect/layers"
)

// The packet formatters append to a caller's buffer so that printing a
// packet costs no allocation beyond the buffer's growth.

// icrcNames are the verdict words used in every output format.
var icrcNames = [...]string{
	dissect.ICRCUnverifiable: "unverifiable",
	dissect.ICRCGood:         "good",
	dissect.ICRCBad:          "bad",
}

// ecnNames are the ECN codepoint names used in every output format.
var ecnNames = [...]string{
	dissect.ECNNotECT: "not_ect",
	dissect.ECNECT1:   "ect1",
	dissect.ECNECT0:   "ect0",
	dissect.ECNCE:     "ce",
}

// appendAddr appends an address without allocating.
func appendAddr(b []byte, a netip.Addr) []byte {
	if !a.IsValid() {
		return append(b, '-')
	}
	return a.AppendTo(b)
}

func appendHex(b []byte, v uint64, digits int) []byte {
	b = append(b, "0x"...)
	const hexDigits = "0123456789abcdef"
	for i := digits - 1; i >= 0; i-- {
		b = append(b, hexDigits[(v>>(uint(i)*4))&0xf])
	}
	return b
}

func appendUint(b []byte, v uint64) []byte { return strconv.AppendUint(b, v, 10) }

// appendSeconds appends a nanosecond duration as seconds with 9 decimals:
// at 100 Gb/s and more, packets are tens of nanoseconds apart.
func appendSeconds(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1e9, 10)
	b = append(b, '.')
	frac := ns % 1e9
	for d := int64(100000000); d > 0; d /= 10 {
		b = append(b, byte('0'+frac/d%10))
	}
	return b
}

// appendPacketLine appends the one-line summary of a packet.
func appendPacketLine(b []byte, p *dissect.Packet, rel int64) []byte {
	start := len(b)
	b = strconv.AppendInt(b, int64(p.Frame), 10)
	b = padTo(b, start, 7)
	b = append(b, ' ')
	b = appendSeconds(b, rel)
	b = append(b, ' ')
	b = appendAddr(b, p.SrcIP)
	b = append(b, " → "...)
	b = appendAddr(b, p.DstIP)
	if p.Version == 2 {
		b = append(b, " sport "...)
		b = appendUint(b, uint64(p.SrcPort))
		b = append(b, " v2 "...)
	} else {
		b = append(b, " v1 "...)
	}
	if len(p.BTH.Contents) == 0 { // the BTH itself could not be decoded
		b = append(b, "malformed: "...)
		b = append(b, p.Malformed...)
		b = append(b, "  icrc "...)
		b = append(b, icrcNames[p.ICRC]...)
		return append(b, '\n')
	}
	b = append(b, p.BTH.Opcode.String()...)
	b = append(b, " qp "...)
	b = appendHex(b, uint64(p.BTH.DestQP), 6)
	b = append(b, " psn "...)
	b = appendUint(b, uint64(p.BTH.PSN))
	if p.BTH.AckReq || p.BTH.FECN || p.BTH.BECN || p.BTH.SE {
		b = append(b, " ["...)
		sep := false
		flag := func(on bool, name string) {
			if on {
				if sep {
					b = append(b, ' ')
				}
				b = append(b, name...)
				sep = true
			}
		}
		flag(p.BTH.AckReq, "AckReq")
		flag(p.BTH.FECN, "FECN")
		flag(p.BTH.BECN, "BECN")
		flag(p.BTH.SE, "SE")
		b = append(b, ']')
	}
	if p.Version == 2 && p.ECN == dissect.ECNCE {
		b = append(b, " CE"...)
	}
	if p.Headers&layers.HasAETH != 0 {
		b = append(b, ' ')
		b = append(b, p.AETH.String()...)
	}
	if p.Malformed != "" {
		b = append(b, " malformed: "...)
		b = append(b, p.Malformed...)
	}
	b = append(b, "  icrc "...)
	b = append(b, icrcNames[p.ICRC]...)
	return append(b, '\n')
}

// padTo pads the text appended since start with leading spaces to width.
func padTo(b []byte, start, width int) []byte {
	n := len(b) - start
	if n >= width {
		return b
	}
	pad := width - n
	b = append(b, make([]byte, pad)...)
	copy(b[start+pad:], b[start:start+n])
	for i := start; i < start+pad; i++ {
		b[i] = ' '
	}
	return b
}

// appendRFC3339 appends a nanosecond Unix timestamp in RFC 3339 with
// nanoseconds, in UTC.
func appendRFC3339(b []byte, ns int64) []byte {
	return time.Unix(0, ns).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000000Z07:00")
}

// wireICRC returns an ICRC value as its four bytes read in wire order. The
// CRC goes on the wire least-significant byte first; printing the bytes in
// wire order matches a hex dump and Wireshark's "Invariant CRC" field, which
// is what an engineer compares against.
func wireICRC(v uint32) uint64 { return uint64(bits.ReverseBytes32(v)) }
