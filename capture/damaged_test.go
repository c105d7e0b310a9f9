package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"testing/iotest"
)

// patch32 returns a copy of b with a little-endian uint32 written at off.
func patch32(b []byte, off int, v uint32) []byte {
	c := bytes.Clone(b)
	binary.LittleEndian.PutUint32(c[off:], v)
	return c
}

func TestDamagedInput(t *testing.T) {
	le := false
	// A pcap file: 24-byte header, records of 16 + 60 bytes at offsets
	// 24 and 100.
	pHdr := pcapHeader(le, false, 65535, 1)
	rec1 := pcapRecord(le, 1, 0, 60, 60, u8s(0, 60))
	rec2 := pcapRecord(le, 2, 0, 60, 60, u8s(1, 60))

	// A pcapng file: section header (28 bytes) and interface description
	// (20 bytes), then packet blocks of 32 + 60 bytes at offsets 48 and 140.
	shb := ngSHB(le)
	idb := ngIDB(le, 1, 0)
	ngHdr := cat(shb, idb)
	epb1 := ngEPB(le, 0, 1, 60, 60, u8s(0, 60))
	epb2 := ngEPB(le, 0, 2, 60, 60, u8s(1, 60))
	isb := ngBlock(le, 5, make([]byte, 12)) // 24 bytes

	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 512)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	if random[0] == 0x1f || random[0] == 0x0a || random[0] == 0xa1 || random[0] == 0xd4 || random[0] == 0x4d {
		t.Fatal("the random bytes start like a capture; pick another seed")
	}

	manyFrames := []byte(nil)
	manyFrames = append(manyFrames, pHdr...)
	for i := range 200 {
		manyFrames = append(manyFrames, pcapRecord(le, uint32(i), 0, 60, 60, u8s(byte(i), 60))...)
	}
	gzMany := gzipped(t, manyFrames)
	// Two gzip members: a good one holding the file header and one
	// record, then one whose deflate data starts with a block of the
	// reserved type 3 (first byte 0x07: final block, type 3).
	gzCorrupt := cat(gzipped(t, cat(pHdr, rec1)), gzMany[:10], []byte{0x07, 0, 0, 0, 0, 0, 0, 0})
	gzBadCRC := bytes.Clone(gzMany)
	gzBadCRC[len(gzBadCRC)-8] ^= 1 // the CRC-32 trailer

	ver3 := bytes.Clone(pHdr)
	ver3[4] = 3
	badBOM := bytes.Clone(shb)
	copy(badBOM[8:], []byte{1, 2, 3, 4})
	ngVer2 := bytes.Clone(shb)
	ngVer2[12] = 2

	// frames: how many frames come before the error; -1 when the error
	// comes from NewReader, -2 when it does not matter.
	tests := []struct {
		name      string
		in        []byte
		frames    int
		sentinels []error
		msg       string // the whole message, or a regexp when re is set
		re        bool
	}{
		{"empty", nil, -1, []error{ErrNotCapture},
			"mem: offset 0: not a capture file: empty file", false},
		{"three bytes", []byte{0xd4, 0xc3, 0xb2}, -1, []error{ErrNotCapture},
			"mem: offset 0: not a capture file: file is only 3 bytes long", false},
		{"bad magic", cat([]byte("\x7fELF"), make([]byte, 60)), -1, []error{ErrNotCapture},
			"mem: offset 0: not a capture file: unknown magic 0x7f454c46", false},
		{"random bytes", random, -1, []error{ErrNotCapture},
			`^mem: offset 0: not a capture file: unknown magic 0x[0-9a-f]{8}$`, true},
		{"pcap version 3", ver3, -1, []error{ErrNotCapture},
			"mem: offset 0: not a capture file: unsupported pcap version 3.4", false},
		{"pcap header cut", pHdr[:14], -1, []error{ErrTruncated},
			"mem: offset 0: truncated: file ends 14 bytes into the 24-byte pcap file header", false},
		{"header only", pHdr, 0, nil, "", false},
		{"record header cut", cat(pHdr, rec1, rec2[:10]), 1, []error{ErrTruncated},
			"mem: offset 100 (frame 2): truncated: file ends 10 bytes into the 16-byte record header", false},
		{"record data cut", cat(pHdr, rec1, rec2[:36]), 1, []error{ErrTruncated},
			"mem: offset 100 (frame 2): truncated: file ends 36 bytes into the 76-byte record", false},
		{"record length absurd", cat(pHdr, rec1, pcapRecord(le, 3, 0, 4_000_000_000, 60, u8s(0, 60))), 1,
			[]error{ErrBadRecord},
			"mem: offset 100 (frame 2): record length 4000000000 exceeds the 65535-byte snap length and the 262144-byte limit", false},
		{"record length over the hard cap", cat(pcapHeader(le, false, 0xffffffff, 1), pcapRecord(le, 1, 0, MaxCapLen+1, 0, nil)), 0,
			[]error{ErrBadRecord},
			"mem: offset 24 (frame 1): record length 16777217 exceeds the 16777216-byte limit", false},
		{"record length above a large snap length", cat(pcapHeader(le, false, 300000, 1), pcapRecord(le, 1, 0, 300001, 0, nil)), 0,
			[]error{ErrBadRecord},
			"mem: offset 24 (frame 1): record length 300001 exceeds the 300000-byte snap length", false},
		// libpcap reads records up to 262144 bytes whatever the snap
		// length, so this one is fine.
		{"record above a small snap length", cat(pcapHeader(le, false, 100, 1), pcapRecord(le, 1, 0, 200, 200, u8s(0, 200))), 1,
			nil, "", false},

		{"section header cut early", shb[:10], -1, []error{ErrTruncated},
			"mem: offset 0: truncated: file ends 10 bytes into the 12-byte start of a section header block", false},
		{"section header cut", shb[:20], -1, []error{ErrTruncated},
			"mem: offset 0: truncated: file ends 20 bytes into the 28-byte section header block", false},
		{"bad byte-order magic", badBOM, -1, []error{ErrBadBlock},
			"mem: offset 0: section header block has an unknown byte-order magic 0x01020304", false},
		{"pcapng version 2", ngVer2, -1, []error{ErrBadBlock},
			"mem: offset 0: unsupported pcapng version 2.0", false},
		{"section header length not a multiple of 4", patch32(shb, 4, 30), -1, []error{ErrBadBlock},
			"mem: offset 0: section header block length 30 is not a multiple of 4", false},
		{"block length not a multiple of 4", cat(ngHdr, patch32(epb1, 4, 45)), 0, []error{ErrBadBlock},
			"mem: offset 48 (frame 1): enhanced packet block length 45 is not a multiple of 4", false},
		{"block length below 12", cat(ngHdr, patch32(isb, 4, 8)), 0, []error{ErrBadBlock},
			"mem: offset 48: interface statistics block length 8 is less than the minimum 12", false},
		{"packet block shorter than its fixed part", cat(ngHdr, patch32(epb1, 4, 28)), 0, []error{ErrBadBlock},
			"mem: offset 48 (frame 1): enhanced packet block length 28 is less than the minimum 32", false},
		{"block length absurd", cat(ngHdr, epb1, patch32(epb2, 4, 0xfffffff0)), 1, []error{ErrBadBlock},
			"mem: offset 140 (frame 2): enhanced packet block length 4294967280 exceeds the 17825792-byte limit", false},
		{"trailing length mismatch", cat(ngHdr, epb1, patch32(epb2, 88, 96)), 1, []error{ErrBadBlock},
			"mem: offset 140 (frame 2): enhanced packet block length 92 does not match its trailing copy 96", false},
		{"skipped block trailing length mismatch", cat(ngHdr, patch32(isb, 20, 28)), 0, []error{ErrBadBlock},
			"mem: offset 48: interface statistics block length 24 does not match its trailing copy 28", false},
		{"interface ID out of range", cat(ngHdr, ngEPB(le, 1, 1, 4, 4, u8s(0, 4))), 0, []error{ErrBadBlock},
			"mem: offset 48 (frame 1): interface ID 1 out of range (interfaces declared in the section: 1)", false},
		{"packet before any interface", cat(shb, epb1), 0, []error{ErrBadBlock},
			"mem: offset 28 (frame 1): enhanced packet block before any interface description in its section", false},
		{"interfaces end with their section", cat(ngHdr, epb1, shb, epb2), 1, []error{ErrBadBlock},
			"mem: offset 168 (frame 2): enhanced packet block before any interface description in its section", false},
		{"timestamp after the year 2262", cat(ngHdr, epb1, ngEPB(le, 0, 1<<63, 60, 60, u8s(0, 60))), 1, []error{ErrBadBlock},
			"mem: offset 140 (frame 2): timestamp 9223372036854775808 is beyond 64-bit nanoseconds (after the year 2262)", false},
		{"timestamp wrapped by if_tsoffset", cat(shb, ngIDB(le, 1, 0, ngOpt(le, 9, []byte{9}), ngOpt(le, 14, []byte{0, 0, 0, 0, 2, 0, 0, 0})), ngEPB(le, 0, 1<<62, 60, 60, u8s(0, 60))), 0, []error{ErrBadBlock},
			"mem: offset 72 (frame 1): timestamp 4611686018427387904 is beyond 64-bit nanoseconds (after the year 2262)", false},
		{"captured length beyond the block", cat(ngHdr, ngEPB(le, 0, 1, 100, 100, u8s(0, 60))), 0, []error{ErrBadBlock},
			"mem: offset 48 (frame 1): captured length 100 exceeds the 60 bytes the enhanced packet block holds", false},
		{"simple packet block too short", cat(ngHdr, ngSPB(le, 30, u8s(0, 12))), 0, []error{ErrBadBlock},
			"mem: offset 48 (frame 1): captured length 30 exceeds the 12 bytes the simple packet block holds", false},
		{"packet block cut", cat(ngHdr, epb1, epb2[:50]), 1, []error{ErrTruncated},
			"mem: offset 140 (frame 2): truncated: file ends 50 bytes into the 92-byte enhanced packet block", false},
		{"block header cut", cat(ngHdr, epb1, epb2[:5]), 1, []error{ErrTruncated},
			"mem: offset 140: truncated: file ends 5 bytes into the 8-byte block header", false},
		{"skipped block cut", cat(ngHdr, isb[:10]), 0, []error{ErrTruncated},
			"mem: offset 48: truncated: file ends 10 bytes into the 24-byte interface statistics block", false},
		{"skipped block trailer cut", cat(ngHdr, isb[:22]), 0, []error{ErrTruncated},
			"mem: offset 48: truncated: file ends 22 bytes into the 24-byte interface statistics block", false},
		{"option overruns the block", cat(shb, ngBlock(le, 1, []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 100, 0, 'e', 't', 'h', '0'})), 0,
			[]error{ErrBadBlock},
			"mem: offset 28: interface description option 2 of length 100 overruns the block", false},
		{"if_tsresol too fine", cat(shb, ngIDB(le, 1, 0, ngOpt(le, 9, []byte{20}))), 0, []error{ErrBadBlock},
			"mem: offset 28: if_tsresol 10^-20 is beyond 64-bit timestamps", false},
		{"if_tsresol of two bytes", cat(shb, ngIDB(le, 1, 0, ngOpt(le, 9, []byte{6, 0}))), 0, []error{ErrBadBlock},
			"mem: offset 28: if_tsresol option has length 2, not 1", false},
		{"if_tsoffset of four bytes", cat(shb, ngIDB(le, 1, 0, ngOpt(le, 14, []byte{1, 0, 0, 0}))), 0, []error{ErrBadBlock},
			"mem: offset 28: if_tsoffset option has length 4, not 8", false},
		{"if_tsoffset beyond 292 years", cat(shb, ngIDB(le, 1, 0, ngOpt(le, 14, []byte{0, 0, 0, 0, 0, 0, 0, 0x40}))), 0, []error{ErrBadBlock},
			"mem: offset 28: if_tsoffset 4611686018427387904 s is beyond 64-bit timestamps", false},
		{"if_tsoffset far in the past", cat(shb, ngIDB(le, 1, 0, ngOpt(le, 14, []byte{0, 0, 0, 0, 0, 0, 0, 0xC0}))), 0, []error{ErrBadBlock},
			"mem: offset 28: if_tsoffset -4611686018427387904 s is beyond 64-bit timestamps", false},

		{"gzip header corrupt", []byte{0x1f, 0x8b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, -1, []error{ErrGzip},
			"mem: offset 0: corrupt gzip stream in the gzip header: gzip: invalid header", false},
		{"gzip data corrupt", gzCorrupt, 1, []error{ErrGzip},
			`^mem: offset 100 \(frame 2\): corrupt gzip stream 0 bytes into the 16-byte record header: flate: corrupt input before offset \d+$`, true},
		{"gzip checksum wrong", gzBadCRC, 200, []error{ErrGzip},
			"mem: offset 15224 (frame 201): corrupt gzip stream 0 bytes into the 16-byte record header: gzip: invalid checksum", false},
		{"gzip cut", gzMany[:len(gzMany)/2], -2, []error{ErrGzip, ErrTruncated},
			`^mem: offset \d+ \(frame \d+\): truncated: compressed stream ends early, \d+ bytes into the \d+-byte record( header)?$`, true},
		{"gzip of nothing", gzipped(t, nil), -1, []error{ErrNotCapture},
			"mem: offset 0: not a capture file: empty decompressed stream", false},
		{"gzip inside gzip", gzipped(t, gzipped(t, manyFrames)), -1, []error{ErrNotCapture},
			"mem: offset 0: not a capture file: gzip stream inside a gzip stream", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tt.in), "mem")
			var frames []got
			if err == nil {
				if tt.frames == -1 {
					t.Fatalf("NewReader accepted the input")
				}
				frames, err = readAll(r)
				if tt.frames >= 0 && len(frames) != tt.frames {
					t.Errorf("%d frames before the error, want %d", len(frames), tt.frames)
				}
			} else if tt.frames != -1 && tt.frames != -2 {
				t.Fatalf("NewReader: %v", err)
			}
			if tt.sentinels == nil {
				if err != io.EOF {
					t.Fatalf("got %v, want a clean end", err)
				}
				return
			}
			if !isAll(err, tt.sentinels...) {
				t.Errorf("error %v does not match %v", err, tt.sentinels)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not an *Error", err)
			}
			if tt.re {
				if !regexp.MustCompile(tt.msg).MatchString(err.Error()) {
					t.Errorf("message\n%s\ndoes not match\n%s", err, tt.msg)
				}
			} else if err.Error() != tt.msg {
				t.Errorf("message\n%s\nwant\n%s", err, tt.msg)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pcap")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(dir, "locked.pcap")
	if err := os.WriteFile(locked, pcapHeader(false, false, 65535, 1), 0o000); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		sentinel error
		msg      string
		skip     string
	}{
		{"missing", filepath.Join(dir, "nope.pcap"), fs.ErrNotExist,
			"open " + filepath.Join(dir, "nope.pcap") + ": no such file or directory", ""},
		{"directory", dir, ErrNotCapture, dir + ": is a directory, not a capture file", ""},
		{"empty file", empty, ErrNotCapture, empty + ": offset 0: not a capture file: empty file", ""},
		{"unreadable file", locked, fs.ErrPermission, "open " + locked + ": permission denied",
			map[bool]string{true: "running as root, which reads files whatever their mode"}[os.Geteuid() == 0]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip != "" {
				t.Skip(tt.skip)
			}
			r, err := Open(tt.path)
			if err == nil {
				r.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v does not match %v", err, tt.sentinel)
			}
			if err.Error() != tt.msg {
				t.Errorf("message\n%s\nwant\n%s", err, tt.msg)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	cause := &detailError{kinds: []error{ErrBadRecord}, msg: "record length 9 is odd"}
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"everything", &Error{"a.pcap", 1234, 17, cause}, "a.pcap: offset 1234 (frame 17): record length 9 is odd"},
		{"no frame", &Error{"a.pcap", 0, 0, cause}, "a.pcap: offset 0: record length 9 is odd"},
		{"no offset", &Error{"a.pcap", -1, 3, cause}, "a.pcap: frame 3: record length 9 is odd"},
		{"no place", &Error{"a.pcap", -1, 0, cause}, "a.pcap: record length 9 is odd"},
		{"no file", &Error{"", 8, 0, cause}, "offset 8: record length 9 is odd"},
		{"no cause", &Error{"a.pcap", -1, 0, nil}, "a.pcap: unknown error"},
		{"with a wrapped cause", &Error{"b.gz", 5, 0, &detailError{kinds: []error{ErrGzip}, cause: errors.New("flate: corrupt input"), msg: "corrupt gzip stream"}},
			"b.gz: offset 5: corrupt gzip stream: flate: corrupt input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if !errors.Is(tests[0].err, ErrBadRecord) || errors.Is(tests[0].err, ErrBadBlock) {
		t.Error("errors.Is does not see exactly the sentinel of the cause")
	}
}

// badCount returns more bytes than it was asked for.
type badCount struct{}

func (badCount) Read(p []byte) (int, error) { return len(p) + 1, nil }

// stuck returns nothing and no error, forever.
type stuck struct{}

func (stuck) Read(p []byte) (int, error) { return 0, nil }

// TestReadErrors checks that failures of the source itself are reported as
// such, after the frames read before them, and not as damage to the file.
func TestReadErrors(t *testing.T) {
	errDisk := errors.New("input/output error")
	file := cat(pcapHeader(false, false, 65535, 1),
		pcapRecord(false, 1, 0, 60, 60, u8s(0, 60)), pcapRecord(false, 2, 0, 60, 60, u8s(1, 60)))
	gz := gzipped(t, file)
	tests := []struct {
		name   string
		src    io.Reader
		frames int // -1: NewReader fails
		want   error
		msg    string
	}{
		{"disk error after one record", io.MultiReader(bytes.NewReader(file[:110]), iotest.ErrReader(errDisk)), 1, errDisk,
			"mem: offset 100 (frame 2): input/output error"},
		{"disk error under gzip", io.MultiReader(bytes.NewReader(gz[:20]), iotest.ErrReader(errDisk)), -1, errDisk,
			"mem: offset 0: input/output error"},
		{"disk error at once", iotest.ErrReader(errDisk), -1, errDisk, "mem: offset 0: input/output error"},
		{"stuck source", io.MultiReader(bytes.NewReader(file[:100]), stuck{}), 1, io.ErrNoProgress,
			"mem: offset 100 (frame 2): multiple Read calls return no data or error"},
		{"impossible byte count", io.MultiReader(bytes.NewReader(file[:100]), badCount{}), 1, nil,
			"mem: offset 100 (frame 2): reader returned an impossible byte count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(tt.src, "mem")
			var frames []got
			if err == nil {
				frames, err = readAll(r)
			} else if tt.frames != -1 {
				t.Fatalf("NewReader: %v", err)
			}
			if tt.frames >= 0 && len(frames) != tt.frames {
				t.Errorf("%d frames before the error, want %d", len(frames), tt.frames)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %v does not match %v", err, tt.want)
			}
			for _, s := range []error{ErrTruncated, ErrGzip, ErrNotCapture, ErrBadBlock, ErrBadRecord} {
				if errors.Is(err, s) {
					t.Errorf("a read error is reported as %v", s)
				}
			}
			if err == nil || err.Error() != tt.msg {
				t.Errorf("message\n%v\nwant\n%s", err, tt.msg)
			}
		})
	}
}
