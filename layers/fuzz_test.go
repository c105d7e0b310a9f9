package layers

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
)

// fuzzHeader checks one header type: decoding never panics, a decode error is
// a too-short error with fewer bytes than the header, and a decoded header
// serializes back to the bytes it came from and decodes to the same fields.
func fuzzHeader[T any, PT interface {
	*T
	wireLayer
}](f *testing.F, size int, tooShort error) {
	f.Add(make([]byte, size))
	f.Add(bytes.Repeat([]byte{0xff}, size+3))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, data []byte) {
		l := PT(new(T))
		if err := l.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
			if !errors.Is(err, tooShort) || len(data) >= size {
				t.Fatalf("%d bytes: %v", len(data), err)
			}
			return
		}
		contents := l.LayerContents()
		if len(contents)+len(l.LayerPayload()) > len(data) || !bytes.Equal(contents, data[:len(contents)]) {
			t.Fatalf("contents % x and payload %d bytes do not split % x", contents, len(l.LayerPayload()), data)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := l.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
			t.Fatalf("serialize of a decoded header: %v", err)
		}
		if !bytes.Equal(buf.Bytes(), contents) {
			t.Fatalf("serialized % x, decoded from % x", buf.Bytes(), contents)
		}
		again := PT(new(T))
		if err := again.DecodeFromBytes(buf.Bytes(), gopacket.NilDecodeFeedback); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(withoutBase(l), withoutBase(again)) {
			t.Fatalf("decode, serialize, decode changed\n%+v\nto\n%+v", l, again)
		}
	})
}

func FuzzBTH(f *testing.F)       { fuzzHeader[BTH](f, BTHLen, ErrBTHTooShort) }
func FuzzRETH(f *testing.F)      { fuzzHeader[RETH](f, RETHLen, ErrRETHTooShort) }
func FuzzAETH(f *testing.F)      { fuzzHeader[AETH](f, AETHLen, ErrAETHTooShort) }
func FuzzDETH(f *testing.F)      { fuzzHeader[DETH](f, DETHLen, ErrDETHTooShort) }
func FuzzRDETH(f *testing.F)     { fuzzHeader[RDETH](f, RDETHLen, ErrRDETHTooShort) }
func FuzzXRCETH(f *testing.F)    { fuzzHeader[XRCETH](f, XRCETHLen, ErrXRCETHTooShort) }
func FuzzImmDt(f *testing.F)     { fuzzHeader[ImmDt](f, ImmDtLen, ErrImmDtTooShort) }
func FuzzIETH(f *testing.F)      { fuzzHeader[IETH](f, IETHLen, ErrIETHTooShort) }
func FuzzAtomicETH(f *testing.F) { fuzzHeader[AtomicETH](f, AtomicETHLen, ErrAtomicETHTooShort) }
func FuzzAtomicAckETH(f *testing.F) {
	fuzzHeader[AtomicAckETH](f, AtomicAckETHLen, ErrAtomicAckETHTooShort)
}
func FuzzFETH(f *testing.F)      { fuzzHeader[FETH](f, FETHLen, ErrFETHTooShort) }
func FuzzCNP(f *testing.F)       { fuzzHeader[CNP](f, CNPLen, ErrCNPTooShort) }
func FuzzICRCLayer(f *testing.F) { fuzzHeader[ICRC](f, ICRCLen, ErrICRCTooShort) }

// FuzzGRH checks the GRH as fuzzHeader does the others, and that the payload
// never reaches past the data nor past PayloadLength.
func FuzzGRH(f *testing.F) {
	f.Add(make([]byte, GRHLen+4))
	f.Add(bytes.Repeat([]byte{0xff}, GRHLen))
	f.Fuzz(func(t *testing.T, data []byte) {
		var g GRH
		if err := g.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
			if !errors.Is(err, ErrGRHTooShort) || len(data) >= GRHLen {
				t.Fatalf("%d bytes: %v", len(data), err)
			}
			return
		}
		if len(g.Payload) > int(g.PayloadLength) || len(g.Payload) > len(data)-GRHLen {
			t.Fatalf("payload %d bytes, PayloadLength %d, data %d", len(g.Payload), g.PayloadLength, len(data))
		}
		buf := gopacket.NewSerializeBuffer()
		if err := g.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), data[:GRHLen]) {
			t.Fatalf("serialized % x, decoded from % x", buf.Bytes(), data[:GRHLen])
		}
		var again GRH
		if err := again.DecodeFromBytes(buf.Bytes(), gopacket.NilDecodeFeedback); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(withoutBase(&g), withoutBase(&again)) {
			t.Fatalf("decode, serialize, decode changed\n%+v\nto\n%+v", g, again)
		}
	})
}

// FuzzDecodeExtHeaders checks that the headers reported present are those of
// the opcode, in full when there is no error, that rest is the tail of data,
// and that errors are ExtHeaderErrors.
func FuzzDecodeExtHeaders(f *testing.F) {
	f.Add(uint8(OpRCRDMAWriteOnlyWithImmediate), make([]byte, 24))
	f.Add(uint8(OpBaseRD|OpRCAtomicAcknowledge), make([]byte, 15))
	f.Add(uint8(OpCNP), make([]byte, 16))
	f.Add(uint8(OpRCFlush), make([]byte, 16))
	f.Fuzz(func(t *testing.T, op uint8, data []byte) {
		var set ExtHeaderSet
		rest, present, err := DecodeExtHeaders(Opcode(op), data, &set)
		want := Opcode(op).ExtHeaders()
		if present&^want != 0 {
			t.Fatalf("present %v outside the opcode's %v", present, want)
		}
		if len(rest) > len(data) || !bytes.Equal(rest, data[len(data)-len(rest):]) {
			t.Fatalf("rest is not a tail of data")
		}
		if err != nil {
			var ee *ExtHeaderError
			if !errors.As(err, &ee) || !errors.Is(err, ErrExtHeaderTruncated) {
				t.Fatalf("error %v of type %T", err, err)
			}
			if ee.Have != len(rest) || ee.Have >= ee.Need || want&ee.Header == 0 || present&ee.Header != 0 {
				t.Fatalf("error %+v with rest %d bytes, present %v", ee, len(rest), present)
			}
			if len(data)-len(rest) != present.Len() {
				t.Fatalf("consumed %d bytes for %v", len(data)-len(rest), present)
			}
			return
		}
		if present != want || len(data)-len(rest) != want.Len() {
			t.Fatalf("present %v of %v, consumed %d bytes", present, want, len(data)-len(rest))
		}
	})
}

// FuzzComputeICRC checks that the ICRC ignores exactly the variant fields:
// setting them to other values keeps it, and that VerifyICRC accepts the
// packet once PutICRC has appended it.
func FuzzComputeICRC(f *testing.F) {
	ipv4 := make([]byte, 60)
	ipv4[0], ipv4[9] = 0x45, 17
	ipv6 := make([]byte, 80)
	ipv6[0], ipv6[6] = 0x60, 17
	f.Add(uint8(ICRCIPv4), ipv4, uint8(0x5a))
	f.Add(uint8(ICRCIPv6), ipv6, uint8(0xa5))
	f.Add(uint8(ICRCGRH), make([]byte, 70), uint8(1))
	f.Fuzz(func(t *testing.T, kind uint8, pkt []byte, x uint8) {
		k := NetworkHeader(kind % 4)
		crc, err := ComputeICRC(k, pkt)
		if err != nil {
			return
		}
		p := append([]byte{}, pkt...)
		var variant []int
		switch k {
		case ICRCIPv4:
			ihl := int(p[0]&0x0F) * 4
			variant = []int{1, 8, 10, 11, ihl + 6, ihl + 7, ihl + 12}
		case ICRCIPv6:
			variant = []int{1, 2, 3, 7, 46, 47, 52}
			p[0] ^= x & 0x0F
		case ICRCGRH:
			variant = []int{1, 2, 3, 7, 44}
			p[0] ^= x & 0x0F
		}
		for _, off := range variant {
			p[off] ^= x
		}
		if c, err := ComputeICRC(k, p); err != nil || c != crc {
			t.Fatalf("variant fields changed the ICRC: %#x to %#x (%v)", crc, c, err)
		}
		withICRC := append(append([]byte{}, pkt...), 0, 0, 0, 0)
		PutICRC(withICRC[len(pkt):], crc)
		if ok, err := VerifyICRC(k, withICRC); !ok || err != nil {
			t.Fatalf("VerifyICRC = %v, %v", ok, err)
		}
	})
}

// FuzzPacket decodes arbitrary bytes with gopacket from each of the package's
// entry points, with gopacket's panic recovery off so that a panic fails.
func FuzzPacket(f *testing.F) {
	f.Add(uint8(0), ackBody)
	f.Add(uint8(1), append(make([]byte, 40), ackBody...))
	f.Add(uint8(0), []byte{0x81, 0, 0xff, 0xff, 0x40, 0, 1, 0x18, 0, 0, 0, 0})
	f.Add(uint8(1), []byte{})
	f.Fuzz(func(t *testing.T, start uint8, data []byte) {
		first := []gopacket.LayerType{LayerTypeBTH, LayerTypeGRH, LayerTypeRETH, LayerTypeICRC}[start%4]
		opts := gopacket.DecodeOptions{SkipDecodeRecovery: true}
		p := gopacket.NewPacket(data, first, opts)
		total := 0
		for _, l := range p.Layers() {
			if _, ok := l.(*gopacket.DecodeFailure); ok {
				continue
			}
			total += len(l.LayerContents())
		}
		if total > len(data) {
			t.Fatalf("layers cover %d bytes of %d", total, len(data))
		}
		if len(data) == 0 {
			// gopacket's lazy packets decode nothing from no bytes, where
			// eager ones record the first decoder's error.
			return
		}
		opts.Lazy = true
		lazy := gopacket.NewPacket(data, first, opts)
		if layerNames(lazy) != layerNames(p) {
			t.Fatalf("lazy %q, eager %q", layerNames(lazy), layerNames(p))
		}
	})
}
