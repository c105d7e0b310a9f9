package capture

import (
	"io"
)

// Chunks reads the records of a classic pcap file in pieces that several
// goroutines read and parse side by side, each with read calls of its own at
// its own offsets, so that no goroutine touches the bytes another one read.
// The records of a piece are found by walking record headers from where the
// previous piece's last record ends, which only the goroutine holding the
// previous piece knows; see PcapRecord. Frames made this way are the frames
// Next returns, field for field, except Index, which the caller numbers.
//
// Chunks makes no errors of its own: a record it cannot take (a length over
// the limit, a file that ends inside a record, a failed read) is where the
// caller hands over to Next, after Resume, so that the error is the one
// Next gives, with the same offset and frame number. ReadChunk, ReadAt and
// PcapRecord are safe for concurrent use; Resume is not, nor is Next.
type Chunks struct {
	r         *Reader
	dataStart int64 // offset of the first record
}

// Chunks returns a Chunks for r when r reads a classic pcap file opened by
// Open, not gzipped, whose frames have not been read yet; ok is false
// otherwise (pcapng, gzip, standard input, a stream given to NewReader).
func (r *Reader) Chunks() (c *Chunks, ok bool) {
	if r.file == nil || r.gz != nil || r.kind != formatPcap || r.frames != 0 || r.err != nil || r.size < 0 {
		return nil, false
	}
	return &Chunks{r: r, dataStart: r.off}, true
}

// DataStart returns the file offset of the first record.
func (c *Chunks) DataStart() int64 { return c.dataStart }

// ReadChunk reads len(p) bytes at offset off of the file, fewer only at its
// end or on an error, and counts them for Consumed.
func (c *Chunks) ReadChunk(p []byte, off int64) (int, error) {
	n, err := c.ReadAt(p, off)
	if n > 0 {
		c.r.cnt.n.Add(int64(n))
	}
	return n, err
}

// ReadAt is ReadChunk without the counting, for the part of a record that
// runs past the end of its piece, which the next piece's ReadChunk counts.
func (c *Chunks) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.file.ReadAt(p, off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	return n, err
}

// PcapRecordHeaderLen is the size of a classic pcap record header.
const PcapRecordHeaderLen = pcapRecordHeaderLen

// PcapRecord decodes the record header h (at least PcapRecordHeaderLen
// bytes) of the record at file offset off into f, all but f.Data and
// f.Index, and returns the captured length. ok is false when the length is
// over the limit, which Next reports as an error.
func (c *Chunks) PcapRecord(h []byte, off int64, f *Frame) (incl int, ok bool) {
	r := c.r
	n := r.u32(h[8:])
	if n > r.limit {
		return 0, false
	}
	f.Timestamp = r.pcapTimestamp(h)
	f.CapLen = int(n)
	f.Len = max(int(r.u32(h[12:])), int(n))
	f.LinkType = r.linkType
	f.Offset = off
	f.Interface = 0
	return int(n), true
}

// Resume makes Next go on reading at file offset off, the start of a
// record, as if it had read the frames before it one by one: frames is
// how many it numbers before the next. Consumed counts from off.
func (c *Chunks) Resume(off int64, frames int) error {
	r := c.r
	if _, err := r.file.Seek(off, io.SeekStart); err != nil {
		return err
	}
	r.pos, r.end, r.off = 0, 0, off
	r.rerr, r.empty, r.err = nil, 0, nil
	r.frames = frames
	r.cnt.n.Store(off)
	return nil
}
