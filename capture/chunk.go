package capture

import (
	"io"
)

// Chunks reads the records of a capture file in pieces that several
// goroutines read and parse side by side, each with read calls of its own at
// its own offsets, so that no goroutine touches the bytes another one read.
// The records of a piece are found by walking records from where the
// previous piece's last record ends, which only the goroutine holding the
// previous piece knows. Frames made this way are the frames Next returns,
// field for field, except Index, which the caller numbers.
//
// A record is a pcap record or, in pcapng, a packet block (enhanced, simple
// or obsolete). Chunks makes no errors of its own: anything else (another
// kind of pcapng block, such as a new section, an interface description or
// statistics at the end of the file; a length over the limit; a file that
// ends inside a record; a failed read) is where the caller hands over to
// Next, after Resume, so that the error, if any, is the one Next gives, with
// the same offset and frame number. ReadChunk, ReadAt, RecordLen and Record
// are safe for concurrent use; Resume is not, nor is Next.
type Chunks struct {
	r         *Reader
	dataStart int64 // offset of the first record
	headerLen int
}

// Chunks returns a Chunks for r when r reads a capture file opened by Open,
// not gzipped, whose frames have not been read yet; ok is false otherwise
// (gzip, standard input, a stream given to NewReader). For pcapng it first
// reads the blocks before the first packet block, the interface
// descriptions among them; should that fail, ok is false and Next returns
// the error.
func (r *Reader) Chunks() (c *Chunks, ok bool) {
	if r.file == nil || r.gz != nil || r.frames != 0 || r.err != nil || r.size < 0 {
		return nil, false
	}
	headerLen := pcapRecordHeaderLen
	if r.kind == formatPcapng {
		if err := r.ngBlocks(nil); err != nil {
			r.err = err
			return nil, false
		}
		headerLen = 8 // block type and length
	}
	// The pieces count every byte from here on once; what the Reader read
	// ahead of this point is not counted twice.
	r.cnt.n.Store(r.off)
	return &Chunks{r: r, dataStart: r.off, headerLen: headerLen}, true
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

// PcapRecordHeaderLen is the size of a pcap record header, HeaderLen for a
// pcap file.
const PcapRecordHeaderLen = pcapRecordHeaderLen

// HeaderLen returns how many bytes of a record RecordLen needs.
func (c *Chunks) HeaderLen() int { return c.headerLen }

// RecordLen returns the length of the record whose first HeaderLen bytes
// are h. ok is false for what Next must read: a pcap record longer than
// the limit; in pcapng, any block but a packet block, or one whose length
// field is wrong.
func (c *Chunks) RecordLen(h []byte) (n int, ok bool) {
	r := c.r
	if r.kind == formatPcap {
		incl := r.u32(h[8:])
		if incl > r.limit {
			return 0, false
		}
		return pcapRecordHeaderLen + int(incl), true
	}
	typ, blen := r.u32(h), r.u32(h[4:])
	if !isPacketBlock(typ) || r.checkBlockLen(0, 0, typ, blen, minBlockLenOf(typ)) != nil {
		return 0, false
	}
	return int(blen), true
}

// Record decodes the record b, of the length RecordLen gave, found at file
// offset off, into f, all but f.Index; f.Data aliases b. It reports false
// for a record Next would reject.
func (c *Chunks) Record(b []byte, off int64, f *Frame) bool {
	r := c.r
	if r.kind == formatPcap {
		r.pcapFrame(f, b[pcapRecordHeaderLen:], r.pcapTimestamp(b), r.u32(b[12:]), off)
		return true
	}
	blen := uint32(len(b))
	if r.u32(b[blen-4:]) != blen {
		return false
	}
	return r.packet(f, off, 0, r.u32(b), b) == nil
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
