package dissect

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"roce-inspect/capture"
	"roce-inspect/internal/testref"
	"roce-inspect/layers"
)

// captureFiles lists every capture of the repository's testdata (damaged
// ones included) and, when present, of the shared reference captures.
func captureFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	walk := func(dir string) {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if !d.IsDir() && (strings.Contains(name, ".pcap")) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	walk(testref.Testdata(t))
	if dir, ok := testref.HaveSharedCaptures(t); ok {
		walk(dir)
	} else {
		t.Log("reference captures absent: checking the repository's testdata only")
	}
	return files
}

// eachFrame calls fn for every frame of a capture file, and for each frame
// also for copies cut short at a few lengths, so that the snap-length and
// malformed paths of the decoder are exercised as well as the good ones.
func eachFrame(t *testing.T, path string, fn func(f *capture.Frame)) {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Logf("%s: %v", path, err)
		return
	}
	defer r.Close()
	var f capture.Frame
	for {
		err := r.Next(&f)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			return // damaged files: the frames before the damage count
		}
		fn(&f)
		for _, cut := range []int{13, 14, 30, 41, 54, 60, len(f.Data) - 5, len(f.Data) - 1} {
			if cut < 0 || cut >= len(f.Data) {
				continue
			}
			c := f
			c.Data = bytes.Clone(f.Data[:cut])
			c.CapLen = cut
			fn(&c)
		}
	}
}

// TestCheckedMatchesDecode checks that CheckICRC followed by DecodeChecked
// gives, field for field, the packet Decode gives, on every frame of every
// capture and on cut copies of them. It also checks that decoding into a
// reused Packet gives what decoding into a fresh one gives, since Decode
// clears only the extended headers the previous packet had.
func TestCheckedMatchesDecode(t *testing.T) {
	for _, path := range captureFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			plain, checker, split := NewDecoder(9000), NewDecoder(9000), NewDecoder(9000)
			var reused, viaCheck Packet
			n := 0
			eachFrame(t, path, func(f *capture.Frame) {
				n++
				var fresh Packet
				k := plain.Decode(f, &fresh)
				if k2 := plain.Decode(f, &reused); k2 != k || !reflect.DeepEqual(reused, fresh) {
					t.Fatalf("frame %d (%d bytes): decoding into a reused Packet differs from a fresh one", f.Index, len(f.Data))
				}
				c := checker.CheckICRC(f)
				if want := (ICRCCheck{fresh.ICRC, fresh.ICRCFound, fresh.ICRCComputed}); k == RoCE && c != want {
					t.Fatalf("frame %d (%d bytes): CheckICRC = %+v, Decode gave %+v", f.Index, len(f.Data), c, want)
				}
				if k2 := split.DecodeChecked(f, &viaCheck, c); k2 != k || !reflect.DeepEqual(viaCheck, fresh) {
					t.Fatalf("frame %d (%d bytes): DecodeChecked differs from Decode:\n%+v\n%+v", f.Index, len(f.Data), viaCheck, fresh)
				}
			})
			if n == 0 {
				t.Log("no frame read")
			}
		})
	}
}

// TestCheckICRCVerdicts checks CheckICRC against the README's verdicts on
// the reference captures: all good, all bad, or mostly cut by the snap
// length.
func TestCheckICRCVerdicts(t *testing.T) {
	dir := testref.SharedCaptures(t)
	cases := []struct {
		file                 string
		good, bad, unchecked int
	}{
		{"real/mlx-rocev2.pcap", 708, 0, 0},
		{"real/mlx-rocev1.pcap", 2468, 0, 0},
		{"real/mlx5-dc-2.pcap", 0, 29, 0},
		{"real/nccl-uc-truncated.pcap", 0, 20, 489},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			r, err := capture.Open(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			d := NewDecoder()
			var f capture.Frame
			var p Packet
			var count [3]int
			for r.Next(&f) == nil {
				c := d.CheckICRC(&f)
				if d.Decode(&f, &p) == RoCE {
					count[c.Verdict]++
				}
			}
			if count[ICRCGood] != tc.good || count[ICRCBad] != tc.bad || count[ICRCUnverifiable] != tc.unchecked {
				t.Errorf("good %d, bad %d, unchecked %d; want %d, %d, %d", count[ICRCGood], count[ICRCBad],
					count[ICRCUnverifiable], tc.good, tc.bad, tc.unchecked)
			}
		})
	}
}

// nonZero returns a value of type typ with every field it can reach set to
// something other than its zero value, or fails the test for a type it does
// not know how to fill, so that a field added to Packet is noticed.
func nonZero(t *testing.T, typ reflect.Type, path string) reflect.Value {
	t.Helper()
	v := reflect.New(typ).Elem()
	switch typ {
	case reflect.TypeOf(netip.Addr{}):
		v.Set(reflect.ValueOf(netip.MustParseAddr("192.0.2.1")))
		return v
	case reflect.TypeOf(layers.BTH{}):
		v.Set(reflect.ValueOf(layers.BTH{Opcode: 0x0A, PadCount: 3, DestQP: 77, PSN: 5, FECN: true}))
		return v
	}
	switch typ.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.String:
		v.SetString("stale")
	case reflect.Slice:
		v.Set(reflect.MakeSlice(typ, 1, 1))
	case reflect.Array:
		for i := range typ.Len() {
			v.Index(i).Set(nonZero(t, typ.Elem(), path))
		}
	case reflect.Struct:
		n := 0
		for i := range typ.NumField() {
			if typ.Field(i).IsExported() {
				v.Field(i).Set(nonZero(t, typ.Field(i).Type, path+"."+typ.Field(i).Name))
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%s: cannot fill a %v; teach nonZero", path, typ)
		}
	default:
		t.Fatalf("%s: cannot fill a %v; teach nonZero", path, typ)
	}
	return v
}

// TestResetClearsEveryField fills every field of a Packet, then resets it
// for a frame: every field but the extended headers must be what a zero
// Packet of that frame holds, and of the extended headers exactly those
// p.Headers named must be cleared.
func TestResetClearsEveryField(t *testing.T) {
	f := capture.Frame{Data: make([]byte, 60), Index: 9, Timestamp: 1234, Len: 64}
	want := Packet{Frame: 9, Timestamp: 1234, Len: 64, CapLen: 60}
	ptyp := reflect.TypeOf(Packet{})
	for _, named := range []layers.ExtHeaders{0, layers.HasRETH | layers.HasImmDt, 1<<11 - 1} {
		p := nonZero(t, ptyp, "Packet").Addr().Interface().(*Packet)
		p.Headers = named
		before := p.ExtHeaderSet
		reset(&f, p)
		pv, wv := reflect.ValueOf(p).Elem(), reflect.ValueOf(&want).Elem()
		for i := range ptyp.NumField() {
			name := ptyp.Field(i).Name
			if name == "ExtHeaderSet" {
				continue
			}
			if !reflect.DeepEqual(pv.Field(i).Interface(), wv.Field(i).Interface()) {
				t.Errorf("Headers %v: reset left %s = %v", named, name, pv.Field(i).Interface())
			}
		}
		st := reflect.TypeOf(layers.ExtHeaderSet{})
		for i := range st.NumField() {
			cleared := reflect.ValueOf(p.ExtHeaderSet).Field(i).IsZero()
			bit := extHeaderBit(t, st.Field(i).Name)
			if shouldClear := named&bit != 0; cleared != shouldClear {
				t.Errorf("Headers %v: %s cleared = %v, want %v", named, st.Field(i).Name, cleared, shouldClear)
			}
			if named&bit == 0 && !reflect.DeepEqual(reflect.ValueOf(p.ExtHeaderSet).Field(i).Interface(),
				reflect.ValueOf(before).Field(i).Interface()) {
				t.Errorf("Headers %v: %s changed though not named", named, st.Field(i).Name)
			}
		}
	}
}

// extHeaderBit maps a field of layers.ExtHeaderSet to its ExtHeaders bit.
func extHeaderBit(t *testing.T, field string) layers.ExtHeaders {
	bits := map[string]layers.ExtHeaders{
		"RDETH": layers.HasRDETH, "DETH": layers.HasDETH, "XRCETH": layers.HasXRCETH,
		"RETH": layers.HasRETH, "FETH": layers.HasFETH, "AtomicETH": layers.HasAtomicETH,
		"AETH": layers.HasAETH, "AtomicAckETH": layers.HasAtomicAckETH, "ImmDt": layers.HasImmDt,
		"IETH": layers.HasIETH, "CNP": layers.HasCNP,
	}
	b, ok := bits[field]
	if !ok {
		t.Fatalf("ExtHeaderSet field %s has no ExtHeaders bit here", field)
	}
	return b
}

// TestCheckedAllocs proves that the split decode allocates nothing.
func TestCheckedAllocs(t *testing.T) {
	f := capture.Frame{Data: mustHex(t, uc4), LinkType: LinkTypeEthernet}
	f.CapLen, f.Len = len(f.Data), len(f.Data)
	d := NewDecoder()
	var p Packet
	var c ICRCCheck
	if n := testing.AllocsPerRun(100, func() { c = d.CheckICRC(&f) }); n != 0 {
		t.Errorf("CheckICRC allocates %v times per frame, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { d.DecodeChecked(&f, &p, c) }); n != 0 {
		t.Errorf("DecodeChecked allocates %v times per frame, want 0", n)
	}
	if c.Verdict != ICRCGood {
		t.Errorf("verdict %v on scapy's packet, want good", c.Verdict)
	}
}

// BenchmarkDecodeSplit measures the two halves of a decode on their own:
// the ICRC check and the rest, for an ACK-sized SEND and a 1 KiB payload.
func BenchmarkDecodeSplit(b *testing.B) {
	for _, size := range []int{0, 1024} {
		frame := mustHex(b, uc4)
		if size > 0 {
			frame = append(frame[:len(frame)-4], make([]byte, size+4)...)
			total := len(frame) - 14
			frame[16], frame[17] = byte(total>>8), byte(total)
			frame[38], frame[39] = byte((total-20)>>8), byte(total-20)
		}
		f := capture.Frame{Data: frame, CapLen: len(frame), Len: len(frame), LinkType: LinkTypeEthernet}
		d := NewDecoder()
		var p Packet
		c := d.CheckICRC(&f)
		b.Run("CheckICRC-payload"+itoa(size), func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				c = d.CheckICRC(&f)
			}
		})
		b.Run("DecodeChecked-payload"+itoa(size), func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				d.DecodeChecked(&f, &p, c)
			}
		})
	}
}
