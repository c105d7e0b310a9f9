package capture

import (
	"encoding/binary"
	"fmt"
	"io"
)

const (
	pcapFileHeaderLen   = 24
	pcapRecordHeaderLen = 16

	// linkTypeMask keeps the link type proper out of the pcap header's
	// LinkType field: its upper four bits say whether frames end with an
	// FCS and how long it is.
	linkTypeMask = 0x0fffffff
)

// u16 and u32 read a field in the byte order of the current file or section.
// They are methods of the Reader rather than a binary.ByteOrder interface so
// that the per-frame path has no dynamic calls.
func (r *Reader) u16(b []byte) uint16 {
	if r.bigEndian {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func (r *Reader) u32(b []byte) uint32 {
	if r.bigEndian {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *Reader) u64(b []byte) uint64 {
	if r.bigEndian {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

// readPcapHeader consumes the 24-byte pcap file header: magic, version,
// time zone, significant figures, snap length, link type.
func (r *Reader) readPcapHeader() error {
	h, have, ok := r.take(pcapFileHeaderLen)
	if !ok {
		return r.shortErr(0, 0, have, pcapFileHeaderLen, "pcap file header")
	}
	major, minor := r.u16(h[4:]), r.u16(h[6:])
	// libpcap reads only major version 2; 2.2 and 2.3 differ from 2.4 in
	// nothing a reader of today's files needs.
	if major != 2 {
		return r.fail(0, 0, ErrNotCapture,
			fmt.Sprintf("not a capture file: unsupported pcap version %d.%d", major, minor))
	}
	r.snapLen = r.u32(h[16:])
	r.linkType = r.u32(h[20:]) & linkTypeMask
	r.limit = max(r.snapLen, pcapMinLimit)
	r.limit = min(r.limit, MaxCapLen)
	return nil
}

// nextPcap reads one pcap record: a 16-byte header (seconds, fraction,
// included length, original length) and the included bytes.
//
// A record whose included length exceeds its original length is accepted
// and its Len raised to CapLen, as tcpdump does: some writers leave the
// original length at zero or below the captured one, and the bytes are still
// good.
func (r *Reader) nextPcap(f *Frame) error {
	off := r.off
	idx := r.frames + 1
	// The window usually holds the next record already; ensure, which
	// does not inline, is called only when it does not.
	if r.end-r.pos < pcapRecordHeaderLen && !r.ensure(pcapRecordHeaderLen) {
		have := r.end - r.pos
		if have == 0 && r.rerr == io.EOF {
			return io.EOF
		}
		return r.shortErr(off, idx, have, pcapRecordHeaderLen, "record header")
	}
	h := r.buf[r.pos : r.pos+pcapRecordHeaderLen]
	// h is read before ensure, which may move the window's bytes.
	ts := r.pcapTimestamp(h)
	incl := r.u32(h[8:])
	orig := r.u32(h[12:])
	if incl > r.limit {
		msg := fmt.Sprintf("record length %d exceeds the %d-byte snap length", incl, r.snapLen)
		switch {
		case r.limit == MaxCapLen && r.snapLen > MaxCapLen:
			msg = fmt.Sprintf("record length %d exceeds the %d-byte limit", incl, r.limit)
		case r.limit != r.snapLen:
			msg += fmt.Sprintf(" and the %d-byte limit", r.limit)
		}
		return r.fail(off, idx, ErrBadRecord, msg)
	}
	total := pcapRecordHeaderLen + int(incl)
	var data []byte
	if total <= r.maxBuf {
		if r.end-r.pos < total && !r.ensure(total) {
			return r.shortErr(off, idx, r.end-r.pos, total, "record")
		}
		data = r.buf[r.pos+pcapRecordHeaderLen : r.pos+total]
		r.pos += total
		r.off += int64(total)
	} else {
		r.pos += pcapRecordHeaderLen
		r.off += pcapRecordHeaderLen
		var have int
		var ok bool
		if data, have, ok = r.take(int(incl)); !ok {
			return r.shortErr(off, idx, pcapRecordHeaderLen+have, total, "record")
		}
	}
	r.frames = idx
	r.pcapFrame(f, data, ts, orig, off)
	f.Index = idx
	return nil
}

// pcapFrame fills f, all but f.Index, from a record at stream offset off:
// its captured bytes, its time, and its original length.
func (r *Reader) pcapFrame(f *Frame, data []byte, ts int64, orig uint32, off int64) {
	f.Data = data
	f.Timestamp = ts
	f.CapLen = len(data)
	// An original length below the captured one is raised to it.
	f.Len = max(int(orig), len(data))
	f.LinkType = r.linkType
	f.Offset = off
	f.Interface = 0
}

// pcapTimestamp returns the time of the record whose header is h, in
// nanoseconds since the Unix epoch.
func (r *Reader) pcapTimestamp(h []byte) int64 {
	ts := int64(r.u32(h[0:])) * 1e9
	if r.nano {
		return ts + int64(r.u32(h[4:]))
	}
	return ts + int64(r.u32(h[4:]))*1e3
}
