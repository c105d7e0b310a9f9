// ACK Extended Transport Header, 4 bytes (IBTA Vol. 1, 9.3):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|R|Kind |  Value  |            Message Sequence Number          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	\____Syndrome_____/
//
//	R reserved. Kind (syndrome bits 6-5): 00 ACK, 01 RNR NAK, 10 reserved,
//	11 NAK. Value (bits 4-0): the credit count of an ACK, the RNR timer code
//	of an RNR NAK, the NAK code of a NAK.

package layers

import (
	"errors"
	"fmt"

	"github.com/gopacket/gopacket"
	gplayers "github.com/gopacket/gopacket/layers"
)

// AETHLen is the size of the AETH in bytes.
const AETHLen = 4

// ErrAETHTooShort is returned when fewer than AETHLen bytes are left for an
// AETH.
var ErrAETHTooShort = errors.New("AETH too short: need 4 bytes")

// AETH is the 4-byte ACK Extended Transport Header.
type AETH struct {
	gplayers.BaseLayer
	Syndrome uint8
	MSN      uint32 // 24 bits

	next gopacket.LayerType
}

// AckKind is the kind of acknowledgement an AETH syndrome carries (its bits
// 6-5). The values are those bits.
type AckKind uint8

// Kinds of acknowledgement.
const (
	AckKindACK      AckKind = 0 // positive acknowledgement
	AckKindRNRNAK   AckKind = 1 // receiver not ready
	AckKindReserved AckKind = 2 // reserved encoding
	AckKindNAK      AckKind = 3 // negative acknowledgement
)

var ackKindNames = [...]string{"ACK", "RNR NAK", "Reserved", "NAK"}

// String returns "ACK", "RNR NAK", "NAK" or "Reserved".
func (k AckKind) String() string {
	if int(k) < len(ackKindNames) {
		return ackKindNames[k]
	}
	return "AckKind(" + fmt.Sprint(uint8(k)) + ")"
}

// NAKCode is the low five bits of a NAK syndrome.
type NAKCode uint8

// NAK codes of the IBTA AETH syndrome encoding. Codes 5 to 31 are reserved.
const (
	NAKPSNSequenceError       NAKCode = 0
	NAKInvalidRequest         NAKCode = 1
	NAKRemoteAccessError      NAKCode = 2
	NAKRemoteOperationalError NAKCode = 3
	NAKInvalidRDRequest       NAKCode = 4
)

// nakCodeNames holds the text of every NAK code, built once so that String
// never allocates.
var nakCodeNames = func() (t [256]string) {
	for i := range t {
		t[i] = fmt.Sprintf("reserved NAK code %d", i)
	}
	t[NAKPSNSequenceError] = "PSN sequence error"
	t[NAKInvalidRequest] = "invalid request"
	t[NAKRemoteAccessError] = "remote access error"
	t[NAKRemoteOperationalError] = "remote operational error"
	t[NAKInvalidRDRequest] = "invalid RD request"
	return t
}()

// String returns the NAK code's meaning, such as "PSN sequence error", or
// "reserved NAK code N".
func (c NAKCode) String() string { return nakCodeNames[c] }

// rnrTimerMicros is the IBTA encoding of the RNR NAK timer field,
// in microseconds: code 0 is the longest wait, 655.36 ms.
var rnrTimerMicros = [32]uint32{
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
}

// RNRTimerMicros returns the minimum RNR NAK timer, in microseconds, that a
// 5-bit timer code stands for; bits above the low five are ignored.
func RNRTimerMicros(code uint8) uint32 { return rnrTimerMicros[code&0x1F] }

// creditCounts is the IBTA encoding of an ACK's end-to-end flow control
// credits: the number of receive WQEs each code stands for. Code 31
// (InvalidCredit) carries no count.
var creditCounts = [31]uint16{
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
	16384, 24576, 32768,
}

// InvalidCredit is the ACK credit code that carries no credit count.
const InvalidCredit = 0x1F

// syndromeText holds Verdict's text for every syndrome byte, built once so
// that the per-packet path never formats.
var syndromeText = func() (t [256]string) {
	for s := range t {
		v := uint8(s) & 0x1F
		switch AckKind(s >> 5 & 0x3) {
		case AckKindACK:
			t[s] = fmt.Sprintf("ACK credit %d", v)
		case AckKindRNRNAK:
			us := rnrTimerMicros[v]
			t[s] = fmt.Sprintf("RNR NAK timer %d (%d.%02d ms)", v, us/1000, us%1000/10)
		case AckKindNAK:
			if v > uint8(NAKInvalidRDRequest) {
				t[s] = fmt.Sprintf("NAK reserved code %d", v)
			} else {
				t[s] = "NAK " + nakCodeNames[v]
			}
		default:
			t[s] = fmt.Sprintf("reserved syndrome 0x%02X", s)
		}
	}
	return t
}()

// SyndromeString returns the meaning of an AETH syndrome, as Verdict does.
func SyndromeString(syndrome uint8) string { return syndromeText[syndrome] }

// Kind returns the acknowledgement kind, from syndrome bits 6-5.
func (a *AETH) Kind() AckKind { return AckKind(a.Syndrome >> 5 & 0x3) }

// Value returns the low five bits of the syndrome: a credit code, an RNR
// timer code or a NAK code, depending on Kind.
func (a *AETH) Value() uint8 { return a.Syndrome & 0x1F }

// CreditCode returns the credit code of an ACK (InvalidCredit when it carries
// none). It is meaningful only when Kind is AckKindACK.
func (a *AETH) CreditCode() uint8 { return a.Value() }

// Credits returns the number of receive credits an ACK grants, and false when
// the AETH is not an ACK or its credit code is InvalidCredit.
func (a *AETH) Credits() (int, bool) {
	if a.Kind() != AckKindACK || a.Value() == InvalidCredit {
		return 0, false
	}
	return int(creditCounts[a.Value()]), true
}

// RNRTimer returns the timer code of an RNR NAK. It is meaningful only when
// Kind is AckKindRNRNAK; RNRTimerMicros gives its duration.
func (a *AETH) RNRTimer() uint8 { return a.Value() }

// NAKCode returns the code of a NAK. It is meaningful only when Kind is
// AckKindNAK.
func (a *AETH) NAKCode() NAKCode { return NAKCode(a.Value()) }

// Verdict returns the meaning of the syndrome, such as "ACK credit 31",
// "RNR NAK timer 14 (1.28 ms)" or "NAK PSN sequence error". The reserved
// bit 7 is ignored. The strings are precomputed: Verdict never allocates.
func (a *AETH) Verdict() string { return syndromeText[a.Syndrome] }

// String returns the verdict and the MSN, such as "ACK credit 0 MSN 5". It
// formats, so per-packet code should use Verdict and MSN instead.
func (a *AETH) String() string {
	return fmt.Sprintf("%s MSN %d", a.Verdict(), a.MSN)
}

// LayerType returns LayerTypeAETH.
func (a *AETH) LayerType() gopacket.LayerType { return LayerTypeAETH }

// CanDecode returns LayerTypeAETH.
func (a *AETH) CanDecode() gopacket.LayerClass { return LayerTypeAETH }

// NextLayerType returns the header that followed this one when it was decoded
// as part of an opcode's chain (the AtomicAckETH of an ATOMIC ACKNOWLEDGE),
// and gopacket.LayerTypePayload otherwise.
func (a *AETH) NextLayerType() gopacket.LayerType { return nextOrPayload(a.next) }

func (a *AETH) setNext(t gopacket.LayerType) { a.next = t }

// DecodeFromBytes decodes an AETH from the start of data.
func (a *AETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < AETHLen {
		df.SetTruncated()
		return ErrAETHTooShort
	}
	a.Syndrome = data[0]
	a.MSN = getUint24(data[1:4])
	a.next = 0
	a.BaseLayer = gplayers.BaseLayer{Contents: data[:AETHLen], Payload: data[AETHLen:]}
	return nil
}

// SerializeTo writes the AETH in front of the buffer's contents. It returns an
// error wrapping ErrFieldOverflow when MSN does not fit 24 bits.
func (a *AETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if a.MSN > 0xFFFFFF {
		return overflow("AETH", "MSN", uint64(a.MSN))
	}
	d, err := buf.PrependBytes(AETHLen)
	if err != nil {
		return err
	}
	d[0] = a.Syndrome
	putUint24(d[1:4], a.MSN)
	return nil
}
