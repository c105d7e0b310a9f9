// Package capture reads and writes packet capture files: pcap (microsecond
// and nanosecond, either byte order), pcapng (several sections, several
// interfaces with their own link types and timestamp resolutions) and either
// of them compressed with gzip.
//
// The Reader streams a file through one buffer (it starts at 64 KiB and grows
// to 1 MiB as the file proves long) and hands out frames that point into it,
// so reading costs no heap allocation per frame once the buffer has reached
// its size; only a record larger than the buffer is copied, into a scratch
// buffer that is kept for the next one.
//
// Damage is reported with the byte offset of the broken record and the index
// of the frame it would have been, and every length field is checked against
// the data and against fixed limits before it is used, so that no input makes
// the reader panic or allocate more than the input itself warrants.
//
// Two deliberate leniencies follow tcpdump and Wireshark: a pcap record may
// be longer than the header's snap length, up to 262144 bytes (libpcap's
// limit), and a record whose original length is below its captured length is
// read with the original length raised to the captured one.
package capture

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
)

// MaxCapLen is the largest captured frame the reader accepts and the writers
// produce: 16 MiB, far above any link's frame size.
const MaxCapLen = 16 << 20

// Limits that protect the reader against absurd length fields.
const (
	// defaultBufSize is the largest size of the window through which a
	// file is read. Records that fit in it are returned without copying.
	defaultBufSize = 1 << 20

	// initialBufSize is the window's first size. It doubles as the file
	// turns out to be longer, so that opening a small file does not cost
	// a megabyte.
	initialBufSize = 64 << 10

	// pcapMinLimit is the record length a pcap file may always use,
	// whatever its header's snap length says. libpcap accepts records up
	// to the larger of the snap length and this value (its
	// MAXIMUM_SNAPLEN), because some writers put a small or zero snap
	// length in the header and still write full frames.
	pcapMinLimit = 262144

	// maxBlockLen bounds a pcapng block: the largest packet plus room
	// for options.
	maxBlockLen = MaxCapLen + 1<<20

	// maxEmptyReads is how many (0, nil) results from the source in a row
	// are taken as a stuck stream rather than a slow one.
	maxEmptyReads = 100
)

// Frame is one packet record of a capture.
type Frame struct {
	// Data holds the captured bytes. It aliases the Reader's internal
	// buffer and is valid only until the next call to Next.
	Data []byte
	// Timestamp is the capture time in nanoseconds since the Unix epoch.
	Timestamp int64
	// CapLen is the number of captured bytes, len(Data).
	CapLen int
	// Len is the length of the frame on the wire; never less than CapLen.
	Len int
	// LinkType is the LINKTYPE_ value of the frame's link layer.
	LinkType uint32
	// Index is the 1-based position of the frame among all packet
	// records of the file. Only packet records count: Wireshark also
	// numbers some other pcapng records as frames (custom blocks, for
	// one), so its frame numbers can run ahead in such files.
	Index int
	// Offset is the byte offset of the record (pcap) or block (pcapng)
	// in the decompressed stream.
	Offset int64
	// Interface numbers the capture interface: 0 for pcap; for pcapng the
	// position of the interface description among all those of the file,
	// counting across sections so that interfaces of different sections
	// never share a number. In the first section it is the interface ID
	// stored in the blocks (Wireshark 4.0's frame.interface_id restarts
	// at 0 in each section instead).
	Interface int
}

// format names the container inside any compression.
type format uint8

const (
	formatPcap format = iota + 1
	formatPcapng
)

// Magic numbers, as the first four bytes read big-endian.
const (
	magicPcapMicro   = 0xa1b2c3d4
	magicPcapNano    = 0xa1b23c4d
	magicPcapMicroLE = 0xd4c3b2a1
	magicPcapNanoLE  = 0x4d3cb2a1
	magicPcapng      = 0x0a0d0d0a // section header block type, a palindrome
)

// Reader reads frames from a pcap or pcapng stream, optionally gzipped. A
// Reader is not safe for concurrent use, except for Consumed and Size, which
// may be called from any goroutine (to draw a progress bar).
type Reader struct {
	name string
	file *os.File // closed by Close; nil when the caller owns the source
	size int64
	cnt  *countingReader
	gz   *gzip.Reader
	src  io.Reader // the decompressed stream

	// buf[pos:end] is read but not yet consumed; off is the stream offset
	// of buf[pos]. buf grows up to maxBuf bytes.
	buf      []byte
	maxBuf   int
	pos, end int
	off      int64
	rerr     error // sticky error of src, io.EOF included
	empty    int   // consecutive (0, nil) reads
	scratch  []byte

	kind      format
	bigEndian bool
	nano      bool

	// pcap file header
	snapLen  uint32
	linkType uint32
	limit    uint32

	// pcapng: the interfaces of the current section, and how many
	// interfaces the sections before it declared.
	ifaces    []ngInterface
	ifaceBase int

	frames int   // packet records delivered so far
	err    error // sticky result of Next
}

// countingReader counts the bytes of the underlying file so that progress can
// be shown, and remembers the first genuine read error so that it can be told
// apart from errors of the gzip layer above it.
type countingReader struct {
	r   io.Reader
	n   atomic.Int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.n.Add(int64(n))
	}
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// Open opens a capture file; the name "-" means standard input. The format
// is detected from the magic number, so the file's name does not matter.
// Errors from the operating system (no such file, permission denied) are
// returned as they are; everything else is an *Error.
func Open(path string) (*Reader, error) {
	if path == "-" {
		// Standard input stays open: the process owns it.
		return newReader(os.Stdin, "stdin", defaultBufSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &Error{File: path, Offset: -1, Err: err}
	}
	if st.IsDir() {
		f.Close()
		return nil, &Error{File: path, Offset: -1, Err: &detailError{
			kinds: []error{ErrNotCapture}, msg: "is a directory, not a capture file"}}
	}
	r, err := newReader(f, path, defaultBufSize)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.file = f
	return r, nil
}

// NewReader reads a capture from any stream; name is used in error messages.
// It reads the file header (for pcapng, the first section header) before
// returning. The caller keeps ownership of r: Close does not close it.
func NewReader(r io.Reader, name string) (*Reader, error) {
	return newReader(r, name, defaultBufSize)
}

// newReader is NewReader with a chosen window size, so that tests can drive
// records larger than the window through small inputs.
func newReader(src io.Reader, name string, bufSize int) (*Reader, error) {
	r := &Reader{
		name:   name,
		size:   sizeOf(src),
		cnt:    &countingReader{r: src},
		buf:    make([]byte, min(bufSize, initialBufSize)),
		maxBuf: bufSize,
	}
	r.src = r.cnt

	kind, err := r.detect(false)
	if err != nil {
		return nil, err
	}
	if kind == 0 { // gzip
		prefix := bytes.Clone(r.buf[r.pos:r.end])
		var inner io.Reader = bytes.NewReader(prefix)
		if r.rerr == nil {
			inner = io.MultiReader(inner, r.cnt)
		}
		// gzip wants a ByteReader; without one it would add a small
		// bufio.Reader of its own. A larger one saves read calls.
		gz, err := gzip.NewReader(bufio.NewReaderSize(inner, 64<<10))
		if err != nil {
			return nil, r.gzipFail(err, 0, 0, "in the gzip header")
		}
		r.gz = gz
		r.src = gz
		r.pos, r.end, r.off, r.rerr, r.empty = 0, 0, 0, nil, 0
		if kind, err = r.detect(true); err != nil {
			return nil, err
		}
		if kind == 0 {
			return nil, r.fail(0, 0, ErrNotCapture, "not a capture file: gzip stream inside a gzip stream")
		}
	}
	r.kind = kind
	if kind == formatPcap {
		err = r.readPcapHeader()
	} else {
		err = r.readSectionHeader()
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// sizeOf returns the number of bytes left in src when it is a regular file,
// and -1 otherwise (pipes, terminals, sockets, in-memory readers).
func sizeOf(src io.Reader) int64 {
	f, ok := src.(*os.File)
	if !ok {
		return -1
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	size := st.Size()
	// Standard input redirected from a file may start anywhere in it.
	if cur, err := f.Seek(0, io.SeekCurrent); err == nil && cur <= size {
		size -= cur
	}
	return size
}

// detect looks at the first four bytes of the stream without consuming them
// and returns the container format, or 0 for gzip.
func (r *Reader) detect(inGzip bool) (format, error) {
	r.ensure(4)
	have := r.end - r.pos
	where := "file"
	if inGzip {
		where = "decompressed stream"
	}
	if have < 4 && r.rerr != io.EOF && r.rerr != nil {
		return 0, r.shortErr(0, 0, have, 4, "magic number")
	}
	b := r.buf[r.pos:r.end]
	if have >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		return 0, nil
	}
	switch {
	case have == 0:
		return 0, r.fail(0, 0, ErrNotCapture, "not a capture file: empty "+where)
	case have < 4:
		return 0, r.fail(0, 0, ErrNotCapture, fmt.Sprintf("not a capture file: %s is only %d bytes long", where, have))
	}
	magic := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	switch magic {
	case magicPcapMicro:
		r.bigEndian = true
	case magicPcapNano:
		r.bigEndian, r.nano = true, true
	case magicPcapMicroLE:
	case magicPcapNanoLE:
		r.nano = true
	case magicPcapng:
		return formatPcapng, nil
	default:
		return 0, r.fail(0, 0, ErrNotCapture, fmt.Sprintf("not a capture file: unknown magic 0x%08x", magic))
	}
	return formatPcap, nil
}

// ensure tries to make n bytes (n <= r.maxBuf) available at r.buf[r.pos:]
// and reports whether it did. When it fails, r.rerr says why.
func (r *Reader) ensure(n int) bool {
	for r.end-r.pos < n {
		if r.rerr != nil {
			return false
		}
		switch {
		case len(r.buf) < r.maxBuf && (r.end == len(r.buf) || len(r.buf)-r.pos < n):
			r.grow(min(max(2*len(r.buf), n), r.maxBuf))
		case r.pos > 0:
			// Move the partial record to the front: it is shorter than
			// the record being assembled, so each byte moves at most
			// once per refill.
			r.end = copy(r.buf, r.buf[r.pos:r.end])
			r.pos = 0
		}
		m, err := r.src.Read(r.buf[r.end:])
		r.account(m, len(r.buf)-r.end, err)
		if m > 0 && m <= len(r.buf)-r.end {
			r.end += m
		}
	}
	return true
}

// grow moves the unread part of the window to the front of a new, larger
// window of size bytes.
func (r *Reader) grow(size int) {
	nb := make([]byte, size)
	r.end = copy(nb, r.buf[r.pos:r.end])
	r.pos = 0
	r.buf = nb
}

// account records the outcome of one read of at most room bytes into r.rerr.
func (r *Reader) account(m, room int, err error) {
	switch {
	case m < 0 || m > room:
		r.rerr = errors.New("reader returned an impossible byte count")
	case err != nil:
		r.rerr = err
	case m == 0:
		r.empty++
		if r.empty >= maxEmptyReads {
			r.rerr = io.ErrNoProgress
		}
	default:
		r.empty = 0
	}
}

// take consumes the next n bytes and returns them. Up to the window size they
// alias the window; beyond it they are assembled in a scratch buffer that
// grows only as data actually arrives. On failure it returns how many bytes
// were there.
func (r *Reader) take(n int) (b []byte, have int, ok bool) {
	if n <= r.maxBuf {
		if !r.ensure(n) {
			return nil, r.end - r.pos, false
		}
		b = r.buf[r.pos : r.pos+n]
		r.pos += n
		r.off += int64(n)
		return b, n, true
	}
	s := append(r.scratch[:0], r.buf[r.pos:r.end]...)
	r.off += int64(r.end - r.pos)
	r.pos, r.end = 0, 0
	for len(s) < n {
		if r.rerr != nil {
			r.scratch = s
			return nil, len(s), false
		}
		// Grow by at most what has already arrived (and at least a
		// page), so that a length field alone never sizes the buffer.
		chunk := min(n-len(s), max(len(s), 4096))
		s = slices.Grow(s, chunk)
		m, err := r.src.Read(s[len(s) : len(s)+chunk])
		r.account(m, chunk, err)
		if m > 0 && m <= chunk {
			s = s[:len(s)+m]
			r.off += int64(m)
		}
	}
	r.scratch = s
	return s, n, true
}

// skip consumes n bytes without keeping them and returns how many it found.
func (r *Reader) skip(n int) (have int, ok bool) {
	for have < n {
		if r.pos == r.end && !r.ensure(1) {
			return have, false
		}
		k := min(n-have, r.end-r.pos)
		r.pos += k
		r.off += int64(k)
		have += k
	}
	return have, true
}

// fail builds an *Error of one sentinel kind.
func (r *Reader) fail(off int64, frame int, kind error, msg string) error {
	return &Error{File: r.name, Offset: off, Frame: frame,
		Err: &detailError{kinds: []error{kind}, msg: msg}}
}

// shortErr explains why only have of the want bytes of what (starting at
// stream offset off) could be read. It must be called only after a read
// failed, with r.rerr set.
func (r *Reader) shortErr(off int64, frame int, have, want int, what string) error {
	switch {
	case r.rerr == io.EOF:
		return r.fail(off, frame, ErrTruncated,
			fmt.Sprintf("truncated: file ends %d bytes into the %d-byte %s", have, want, what))
	case r.gz != nil && r.cnt.err == nil:
		return r.gzipFail(r.rerr, off, frame, fmt.Sprintf("%d bytes into the %d-byte %s", have, want, what))
	default:
		return &Error{File: r.name, Offset: off, Frame: frame, Err: r.rerr}
	}
}

// gzipFail classifies an error returned by the gzip layer: a genuine read
// error of the file below, a compressed stream that stops early, or
// corruption.
func (r *Reader) gzipFail(err error, off int64, frame int, where string) error {
	e := &Error{File: r.name, Offset: off, Frame: frame}
	switch {
	case r.cnt.err != nil:
		e.Err = err
	case errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF:
		e.Err = &detailError{kinds: []error{ErrTruncated, ErrGzip},
			msg: "truncated: compressed stream ends early, " + where}
	default:
		e.Err = &detailError{kinds: []error{ErrGzip}, cause: err,
			msg: "corrupt gzip stream " + where}
	}
	return e
}

// Next reads the next frame into f. It returns io.EOF at the clean end of the
// capture. Any error is sticky: later calls return it again. f.Data is valid
// only until the next call.
func (r *Reader) Next(f *Frame) error {
	if r.err != nil {
		return r.err
	}
	var err error
	if r.kind == formatPcap {
		err = r.nextPcap(f)
	} else {
		err = r.nextPcapng(f)
	}
	if err != nil {
		r.err = err
	}
	return err
}

// Name returns the name of the input used in error messages: the path given
// to Open, "stdin" for "-", or the name given to NewReader.
func (r *Reader) Name() string { return r.name }

// Format names the file format: "pcap" (microsecond timestamps), "pcap-ns"
// (nanosecond), or "pcapng", followed by "+gzip" when compressed.
func (r *Reader) Format() string {
	var s string
	switch {
	case r.kind == formatPcapng:
		s = "pcapng"
	case r.nano:
		s = "pcap-ns"
	default:
		s = "pcap"
	}
	if r.gz != nil {
		s += "+gzip"
	}
	return s
}

// Size returns the size of the input file in bytes (compressed size for a
// gzipped file), or -1 when the input is not a regular file: a pipe, a
// terminal, or a stream given to NewReader that is not an *os.File. Standard
// input redirected from a file has a size. Size may be called from any
// goroutine.
func (r *Reader) Size() int64 { return r.size }

// Consumed returns how many bytes of the input file have been read so far
// (compressed bytes for a gzipped file). The reader reads ahead by as much as
// its buffer holds (up to 1 MiB), so this runs ahead of the frames delivered.
// It may be called from any goroutine while another calls Next.
func (r *Reader) Consumed() int64 { return r.cnt.n.Load() }

// Close releases the file opened by Open. It does not close standard input
// or a stream given to NewReader.
func (r *Reader) Close() error {
	var err error
	if r.gz != nil {
		err = r.gz.Close()
	}
	if r.file != nil {
		if cerr := r.file.Close(); err == nil {
			err = cerr
		}
		r.file = nil
	}
	return err
}
