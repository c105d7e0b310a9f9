package capture

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// writerBufSize is the buffer of both writers: large enough that frames are
// copied into it and written out in big pieces.
const writerBufSize = 256 << 10

// PcapWriter writes a little-endian pcap file. It buffers its output: call
// Flush at the end.
type PcapWriter struct {
	w       *bufio.Writer
	snapLen int
	nano    bool
	hdr     [pcapRecordHeaderLen]byte
}

// NewPcapWriter writes a pcap file header to w and returns a writer for the
// frames. linkType is the LINKTYPE_ value stored in the header as given. A
// snapLen of 0 means 262144, the largest that every reader accepts; frames
// longer than the snap length are cut to it. With nanosecond set, the file
// keeps nanosecond timestamps (magic a1b23c4d); otherwise timestamps are
// truncated to microseconds.
func NewPcapWriter(w io.Writer, linkType uint32, snapLen int, nanosecond bool) (*PcapWriter, error) {
	if snapLen < 0 || snapLen > MaxCapLen {
		return nil, fmt.Errorf("capture: pcap snap length %d is outside 0..%d", snapLen, MaxCapLen)
	}
	if snapLen == 0 {
		snapLen = pcapMinLimit
	}
	pw := &PcapWriter{w: bufio.NewWriterSize(w, writerBufSize), snapLen: snapLen, nano: nanosecond}
	var h [pcapFileHeaderLen]byte
	magic := uint32(magicPcapMicro)
	if nanosecond {
		magic = magicPcapNano
	}
	le := binary.LittleEndian
	le.PutUint32(h[0:], magic)
	le.PutUint16(h[4:], 2) // version 2.4
	le.PutUint16(h[6:], 4)
	// thiszone and sigfigs stay zero, as every current writer leaves them.
	le.PutUint32(h[16:], uint32(snapLen))
	le.PutUint32(h[20:], linkType)
	if _, err := pw.w.Write(h[:]); err != nil {
		return nil, err
	}
	return pw, nil
}

// WriteFrame appends one record. ts is in nanoseconds since the epoch and
// must fit the format's unsigned 32-bit seconds (1970 to 2106). origLen is
// the length on the wire; a value below len(data), such as 0, means
// len(data). data is copied before WriteFrame returns.
func (w *PcapWriter) WriteFrame(ts int64, data []byte, origLen int) error {
	if ts < 0 || ts/1e9 > math.MaxUint32 {
		return fmt.Errorf("%w: timestamp %d ns is outside the pcap range", ErrInvalidFrame, ts)
	}
	origLen = max(origLen, len(data))
	if origLen > math.MaxUint32 {
		return fmt.Errorf("%w: original length %d does not fit in 32 bits", ErrInvalidFrame, origLen)
	}
	capLen := min(len(data), w.snapLen)
	frac := ts % 1e9
	if !w.nano {
		frac /= 1e3
	}
	le := binary.LittleEndian
	le.PutUint32(w.hdr[0:], uint32(ts/1e9))
	le.PutUint32(w.hdr[4:], uint32(frac))
	le.PutUint32(w.hdr[8:], uint32(capLen))
	le.PutUint32(w.hdr[12:], uint32(origLen))
	if _, err := w.w.Write(w.hdr[:]); err != nil {
		return err
	}
	_, err := w.w.Write(data[:capLen])
	return err
}

// Flush writes any buffered data to the underlying writer.
func (w *PcapWriter) Flush() error { return w.w.Flush() }

// Interface describes a capture interface of a pcapng file.
type Interface struct {
	// Name is stored as the if_name option when not empty.
	Name string
	// LinkType is the LINKTYPE_ value of the interface's frames; it must
	// fit pcapng's 16-bit field.
	LinkType uint32
	// SnapLen cuts longer frames; 0 means no limit.
	SnapLen int
}

// PcapngWriter writes a little-endian pcapng file of one section with
// nanosecond timestamps. It buffers its output: call Flush at the end.
type PcapngWriter struct {
	w      *bufio.Writer
	ifaces []Interface
	hdr    [64]byte
	pad    [4]byte
}

// pcapng option codes the writer emits.
const (
	optIfName    = 2
	optISBIfRecv = 4
	optISBIfDrop = 5
	blockISB     = 0x00000005
)

// pad4 rounds n up to a multiple of 4.
func pad4(n int) int { return (n + 3) &^ 3 }

// NewPcapngWriter writes a section header and one interface description per
// element of interfaces (their IDs are their positions), each declaring
// nanosecond timestamps (if_tsresol 9).
func NewPcapngWriter(w io.Writer, interfaces []Interface) (*PcapngWriter, error) {
	for i, ifc := range interfaces {
		switch {
		case ifc.LinkType > math.MaxUint16:
			return nil, fmt.Errorf("capture: interface %d: link type %d does not fit pcapng's 16 bits", i, ifc.LinkType)
		case ifc.SnapLen < 0 || ifc.SnapLen > math.MaxUint32:
			return nil, fmt.Errorf("capture: interface %d: snap length %d out of range", i, ifc.SnapLen)
		case len(ifc.Name) > math.MaxUint16:
			return nil, fmt.Errorf("capture: interface %d: name of %d bytes is too long", i, len(ifc.Name))
		}
	}
	pw := &PcapngWriter{w: bufio.NewWriterSize(w, writerBufSize), ifaces: append([]Interface(nil), interfaces...)}
	le := binary.LittleEndian

	var shb [minSHBLen]byte
	le.PutUint32(shb[0:], blockSHB)
	le.PutUint32(shb[4:], minSHBLen)
	le.PutUint32(shb[8:], byteOrderMagic)
	le.PutUint16(shb[12:], 1) // version 1.0
	le.PutUint16(shb[14:], 0)
	le.PutUint64(shb[16:], math.MaxUint64) // section length not given
	le.PutUint32(shb[24:], minSHBLen)
	pw.w.Write(shb[:])

	for _, ifc := range pw.ifaces {
		opts := 8 + 4 // if_tsresol, opt_endofopt
		if ifc.Name != "" {
			opts += 4 + pad4(len(ifc.Name))
		}
		blen := uint32(minIDBLen + opts)
		h := pw.hdr[:16]
		le.PutUint32(h[0:], blockIDB)
		le.PutUint32(h[4:], blen)
		le.PutUint16(h[8:], uint16(ifc.LinkType))
		le.PutUint16(h[10:], 0)
		le.PutUint32(h[12:], uint32(ifc.SnapLen))
		pw.w.Write(h)
		if ifc.Name != "" {
			pw.option(optIfName, len(ifc.Name))
			pw.w.WriteString(ifc.Name)
			pw.w.Write(pw.pad[:pad4(len(ifc.Name))-len(ifc.Name)])
		}
		pw.option(optTSResol, 1)
		pw.w.Write([]byte{9, 0, 0, 0})
		pw.option(optEndOfOpt, 0)
		le.PutUint32(pw.hdr[:4], blen)
		if _, err := pw.w.Write(pw.hdr[:4]); err != nil {
			return nil, err
		}
	}
	return pw, nil
}

// option writes an option header.
func (w *PcapngWriter) option(code, length int) {
	binary.LittleEndian.PutUint16(w.hdr[0:], uint16(code))
	binary.LittleEndian.PutUint16(w.hdr[2:], uint16(length))
	w.w.Write(w.hdr[:4])
}

// checkFrameArgs validates the interface and timestamp of a block.
func (w *PcapngWriter) checkFrameArgs(iface int, ts int64) error {
	if iface < 0 || iface >= len(w.ifaces) {
		return fmt.Errorf("%w: interface %d not declared (%d interfaces)", ErrInvalidFrame, iface, len(w.ifaces))
	}
	if ts < 0 {
		return fmt.Errorf("%w: negative timestamp %d", ErrInvalidFrame, ts)
	}
	return nil
}

// WriteFrame appends an enhanced packet block. iface is the position of the
// interface in the list given to NewPcapngWriter, ts is in nanoseconds since
// the epoch and must not be negative, and origLen is the length on the wire
// (a value below len(data), such as 0, means len(data)). Frames longer than
// the interface's snap length are cut to it.
func (w *PcapngWriter) WriteFrame(iface int, ts int64, data []byte, origLen int) error {
	if err := w.checkFrameArgs(iface, ts); err != nil {
		return err
	}
	capLen := len(data)
	if snap := w.ifaces[iface].SnapLen; snap > 0 {
		capLen = min(capLen, snap)
	}
	if capLen > MaxCapLen {
		return fmt.Errorf("%w: frame of %d bytes exceeds the %d-byte limit", ErrInvalidFrame, capLen, MaxCapLen)
	}
	origLen = max(origLen, len(data))
	if origLen > math.MaxUint32 {
		return fmt.Errorf("%w: original length %d does not fit in 32 bits", ErrInvalidFrame, origLen)
	}
	padded := pad4(capLen)
	blen := uint32(minEPBLen + padded)
	le := binary.LittleEndian
	h := w.hdr[:28]
	le.PutUint32(h[0:], blockEPB)
	le.PutUint32(h[4:], blen)
	le.PutUint32(h[8:], uint32(iface))
	le.PutUint32(h[12:], uint32(uint64(ts)>>32))
	le.PutUint32(h[16:], uint32(ts))
	le.PutUint32(h[20:], uint32(capLen))
	le.PutUint32(h[24:], uint32(origLen))
	// bufio.Writer keeps its first error and returns it from every later
	// call, so checking the last write of a block is enough.
	w.w.Write(h)
	w.w.Write(data[:capLen])
	w.w.Write(w.pad[:padded-capLen])
	le.PutUint32(w.hdr[:4], blen)
	_, err := w.w.Write(w.hdr[:4])
	return err
}

// WriteStats appends an interface statistics block with the packets the
// interface received (isb_ifrecv) and dropped (isb_ifdrop) up to time ts
// (nanoseconds since the epoch).
func (w *PcapngWriter) WriteStats(iface int, ts int64, received, dropped uint64) error {
	if err := w.checkFrameArgs(iface, ts); err != nil {
		return err
	}
	const blen = 20 + 12 + 12 + 4 + 4 // header, two options, end of options, trailer
	le := binary.LittleEndian
	h := w.hdr[:blen]
	le.PutUint32(h[0:], blockISB)
	le.PutUint32(h[4:], blen)
	le.PutUint32(h[8:], uint32(iface))
	le.PutUint32(h[12:], uint32(uint64(ts)>>32))
	le.PutUint32(h[16:], uint32(ts))
	le.PutUint16(h[20:], optISBIfRecv)
	le.PutUint16(h[22:], 8)
	le.PutUint64(h[24:], received)
	le.PutUint16(h[32:], optISBIfDrop)
	le.PutUint16(h[34:], 8)
	le.PutUint64(h[36:], dropped)
	le.PutUint32(h[44:], 0) // opt_endofopt
	le.PutUint32(h[48:], blen)
	_, err := w.w.Write(h)
	return err
}

// Flush writes any buffered data to the underlying writer.
func (w *PcapngWriter) Flush() error { return w.w.Flush() }
