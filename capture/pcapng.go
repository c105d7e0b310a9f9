package capture

import (
	"fmt"
	"io"
	"math"
	"math/bits"
)

// pcapng block types.
const (
	blockSHB = 0x0a0d0d0a // section header
	blockIDB = 0x00000001 // interface description
	blockOPB = 0x00000002 // packet block, obsolete
	blockSPB = 0x00000003 // simple packet
	blockEPB = 0x00000006 // enhanced packet
)

// Fixed parts of the blocks, trailing length included.
const (
	minBlockLen = 12 // type, length, trailing length
	minSHBLen   = 28
	minIDBLen   = 20
	minEPBLen   = 32
	minOPBLen   = 32
	minSPBLen   = 16

	byteOrderMagic = 0x1a2b3c4d
)

// Interface description options the reader uses.
const (
	optEndOfOpt = 0
	optTSResol  = 9
	optTSOffset = 14
)

// ngInterface is what the reader keeps of an interface description block.
type ngInterface struct {
	linkType uint32
	snapLen  uint32
	// Timestamps count units of 1/unitsPerSec second. When a unit is a
	// whole number of nanoseconds, nsPerUnit is that number and the
	// conversion is one multiplication.
	unitsPerSec uint64
	nsPerUnit   uint64
	offsetNs    int64 // if_tsoffset, in nanoseconds
	global      int   // number among all interfaces of the file
}

// toNs converts a timestamp in the interface's units to nanoseconds since
// the epoch, if_tsoffset included. Resolutions finer than a nanosecond are
// truncated, as Wireshark does. ok is false when the time has no 64-bit
// nanosecond value (after the year 2262), rather than wrapping into a wrong
// one.
func (ifc *ngInterface) toNs(ts uint64) (ns int64, ok bool) {
	var hi, lo uint64
	if ifc.nsPerUnit != 0 {
		hi, lo = bits.Mul64(ts, ifc.nsPerUnit)
	} else {
		sec, rem := ts/ifc.unitsPerSec, ts%ifc.unitsPerSec
		// rem < unitsPerSec, so rem*1e9/unitsPerSec < 1e9 and the
		// 128-bit division cannot overflow.
		fhi, flo := bits.Mul64(rem, 1e9)
		frac, _ := bits.Div64(fhi, flo, ifc.unitsPerSec)
		var carry uint64
		hi, lo = bits.Mul64(sec, 1e9)
		lo, carry = bits.Add64(lo, frac, 0)
		hi += carry
	}
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	ns = int64(lo) + ifc.offsetNs
	// Both are below 2^63 in magnitude; the sum wraps only when the offset
	// is positive and the result comes out negative.
	if ifc.offsetNs > 0 && ns < 0 {
		return 0, false
	}
	return ns, true
}

// blockName names a block type for error messages.
func blockName(typ uint32) string {
	switch typ {
	case blockSHB:
		return "section header block"
	case blockIDB:
		return "interface description block"
	case blockOPB:
		return "packet block"
	case blockSPB:
		return "simple packet block"
	case blockEPB:
		return "enhanced packet block"
	case 0x00000004:
		return "name resolution block"
	case 0x00000005:
		return "interface statistics block"
	case 0x00000009:
		return "systemd journal export block"
	case 0x0000000a:
		return "decryption secrets block"
	case 0x00000bad, 0x40000bad:
		return "custom block"
	}
	return fmt.Sprintf("block of type 0x%08x", typ)
}

// isPacketBlock reports whether a block of type typ holds a packet.
func isPacketBlock(typ uint32) bool {
	return typ == blockEPB || typ == blockOPB || typ == blockSPB
}

// minBlockLenOf returns the smallest length a block of type typ can have.
func minBlockLenOf(typ uint32) uint32 {
	switch typ {
	case blockIDB:
		return minIDBLen
	case blockEPB:
		return minEPBLen
	case blockOPB:
		return minOPBLen
	case blockSPB:
		return minSPBLen
	}
	return minBlockLen
}

// checkBlockLen validates a block's total length field before any of the
// block is read.
func (r *Reader) checkBlockLen(off int64, frame int, typ, blen, minLen uint32) error {
	name := blockName(typ)
	switch {
	case blen < minLen:
		return r.fail(off, frame, ErrBadBlock,
			fmt.Sprintf("%s length %d is less than the minimum %d", name, blen, minLen))
	case blen%4 != 0:
		return r.fail(off, frame, ErrBadBlock,
			fmt.Sprintf("%s length %d is not a multiple of 4", name, blen))
	case blen > maxBlockLen:
		return r.fail(off, frame, ErrBadBlock,
			fmt.Sprintf("%s length %d exceeds the %d-byte limit", name, blen, maxBlockLen))
	}
	return nil
}

// takeBlock reads a whole block of blen bytes, already validated, and checks
// its trailing copy of the length.
func (r *Reader) takeBlock(off int64, frame int, typ, blen uint32) ([]byte, error) {
	b, have, ok := r.take(int(blen))
	if !ok {
		return nil, r.shortErr(off, frame, have, int(blen), blockName(typ))
	}
	if trail := r.u32(b[blen-4:]); trail != blen {
		return nil, r.fail(off, frame, ErrBadBlock,
			fmt.Sprintf("%s length %d does not match its trailing copy %d", blockName(typ), blen, trail))
	}
	return b, nil
}

// readSectionHeader reads a section header block, which sets the byte order
// of everything up to the next one and starts a new set of interfaces.
func (r *Reader) readSectionHeader() error {
	off := r.off
	if !r.ensure(12) {
		return r.shortErr(off, 0, r.end-r.pos, 12, "start of a section header block")
	}
	bom := r.buf[r.pos+8 : r.pos+12]
	switch {
	case bom[0] == 0x1a && bom[1] == 0x2b && bom[2] == 0x3c && bom[3] == 0x4d:
		r.bigEndian = true
	case bom[0] == 0x4d && bom[1] == 0x3c && bom[2] == 0x2b && bom[3] == 0x1a:
		r.bigEndian = false
	default:
		return r.fail(off, 0, ErrBadBlock, fmt.Sprintf(
			"section header block has an unknown byte-order magic 0x%02x%02x%02x%02x",
			bom[0], bom[1], bom[2], bom[3]))
	}
	blen := r.u32(r.buf[r.pos+4:])
	if err := r.checkBlockLen(off, 0, blockSHB, blen, minSHBLen); err != nil {
		return err
	}
	b, err := r.takeBlock(off, 0, blockSHB, blen)
	if err != nil {
		return err
	}
	if major := r.u16(b[12:]); major != 1 {
		return r.fail(off, 0, ErrBadBlock,
			fmt.Sprintf("unsupported pcapng version %d.%d", major, r.u16(b[14:])))
	}
	// The section length field and the options (hardware, OS,
	// application) are not needed to read the packets.
	r.ifaceBase += len(r.ifaces)
	r.ifaces = r.ifaces[:0]
	return nil
}

// readInterface parses an interface description block: link type, snap
// length, and the options that change how timestamps are read.
func (r *Reader) readInterface(off int64, b []byte) error {
	ifc := ngInterface{
		linkType:    uint32(r.u16(b[8:])),
		snapLen:     r.u32(b[12:]),
		unitsPerSec: 1e6, // the default resolution is microseconds
		nsPerUnit:   1e3,
		global:      r.ifaceBase + len(r.ifaces),
	}
	opts := b[16 : len(b)-4]
	for len(opts) >= 4 {
		code, olen := r.u16(opts), int(r.u16(opts[2:]))
		if code == optEndOfOpt {
			break
		}
		padded := (olen + 3) &^ 3
		if 4+padded > len(opts) {
			return r.fail(off, 0, ErrBadBlock, fmt.Sprintf(
				"interface description option %d of length %d overruns the block", code, olen))
		}
		val := opts[4 : 4+olen]
		switch code {
		case optTSResol:
			if olen != 1 {
				return r.fail(off, 0, ErrBadBlock, fmt.Sprintf("if_tsresol option has length %d, not 1", olen))
			}
			if err := ifc.setResolution(val[0]); err != nil {
				return r.fail(off, 0, ErrBadBlock, err.Error())
			}
		case optTSOffset:
			if olen != 8 {
				return r.fail(off, 0, ErrBadBlock, fmt.Sprintf("if_tsoffset option has length %d, not 8", olen))
			}
			// Signed seconds; beyond about 292 years either way the
			// offset has no 64-bit nanosecond value, and multiplying
			// would wrap into a wrong time.
			sec := int64(r.u64(val))
			if sec > math.MaxInt64/int64(1e9) || sec < math.MinInt64/int64(1e9) {
				return r.fail(off, 0, ErrBadBlock, fmt.Sprintf("if_tsoffset %d s is beyond 64-bit timestamps", sec))
			}
			ifc.offsetNs = sec * 1e9
		}
		opts = opts[4+padded:]
	}
	r.ifaces = append(r.ifaces, ifc)
	return nil
}

// setResolution applies an if_tsresol value: with the top bit clear the
// unit is 10^-v seconds, with it set 2^-v.
func (ifc *ngInterface) setResolution(v byte) error {
	exp := uint(v & 0x7f)
	var units uint64
	if v&0x80 == 0 {
		// 10^19 is the largest power of ten in 64 bits.
		if exp > 19 {
			return fmt.Errorf("if_tsresol 10^-%d is beyond 64-bit timestamps", exp)
		}
		units = 1
		for range exp {
			units *= 10
		}
	} else {
		if exp > 63 {
			return fmt.Errorf("if_tsresol 2^-%d is beyond 64-bit timestamps", exp)
		}
		units = 1 << exp
	}
	ifc.unitsPerSec = units
	ifc.nsPerUnit = 0
	if 1e9%units == 0 {
		ifc.nsPerUnit = 1e9 / units
	}
	return nil
}

// nextPcapng reads blocks until it finds a packet, handling section headers
// and interface descriptions on the way and skipping every other block.
func (r *Reader) nextPcapng(f *Frame) error {
	return r.ngBlocks(f)
}

// ngBlocks reads blocks up to and including the next packet block, which it
// decodes into f; with f nil it stops before the packet block instead,
// leaving it unread, and returns nil.
func (r *Reader) ngBlocks(f *Frame) error {
	for {
		off := r.off
		if !r.ensure(8) {
			have := r.end - r.pos
			if have == 0 && r.rerr == io.EOF {
				return io.EOF
			}
			return r.shortErr(off, 0, have, 8, "block header")
		}
		typ := r.u32(r.buf[r.pos:])
		if typ == blockSHB {
			if err := r.readSectionHeader(); err != nil {
				return err
			}
			continue
		}
		if f == nil && isPacketBlock(typ) {
			return nil
		}
		blen := r.u32(r.buf[r.pos+4:])
		frame := 0
		if isPacketBlock(typ) {
			frame = r.frames + 1
		}
		if err := r.checkBlockLen(off, frame, typ, blen, minBlockLenOf(typ)); err != nil {
			return err
		}
		switch typ {
		case blockIDB:
			b, err := r.takeBlock(off, 0, typ, blen)
			if err != nil {
				return err
			}
			if err := r.readInterface(off, b); err != nil {
				return err
			}
		case blockEPB, blockOPB, blockSPB:
			b, err := r.takeBlock(off, frame, typ, blen)
			if err != nil {
				return err
			}
			if err := r.packet(f, off, frame, typ, b); err != nil {
				return err
			}
			r.frames = frame
			return nil
		default:
			// Name resolution, interface statistics, decryption
			// secrets, custom and unknown blocks: stream past them,
			// checking only the trailing length.
			if have, ok := r.skip(int(blen) - 4); !ok {
				return r.shortErr(off, 0, have, int(blen), blockName(typ))
			}
			b, have, ok := r.take(4)
			if !ok {
				return r.shortErr(off, 0, int(blen)-4+have, int(blen), blockName(typ))
			}
			if trail := r.u32(b); trail != blen {
				return r.fail(off, 0, ErrBadBlock, fmt.Sprintf(
					"%s length %d does not match its trailing copy %d", blockName(typ), blen, trail))
			}
		}
	}
}

// packet fills f from an enhanced, obsolete or simple packet block, b,
// whose length and trailer takeBlock checked. It changes nothing in r, so
// that goroutines reading pieces of the file can call it side by side.
func (r *Reader) packet(f *Frame, off int64, frame int, typ uint32, b []byte) error {
	var (
		id          uint32
		ts          uint64
		capLen      uint32
		origLen     uint32
		dataStart   = 28
		body        = uint32(len(b)) - minEPBLen // room for data and options
		hasTimeIfID = true
	)
	switch typ {
	case blockEPB:
		id = r.u32(b[8:])
	case blockOPB:
		id = uint32(r.u16(b[8:])) // followed by a 16-bit drop count
	case blockSPB:
		hasTimeIfID = false
	}
	if hasTimeIfID {
		ts = uint64(r.u32(b[12:]))<<32 | uint64(r.u32(b[16:]))
		capLen = r.u32(b[20:])
		origLen = r.u32(b[24:])
	}
	if int(id) >= len(r.ifaces) {
		if len(r.ifaces) == 0 {
			return r.fail(off, frame, ErrBadBlock,
				fmt.Sprintf("%s before any interface description in its section", blockName(typ)))
		}
		return r.fail(off, frame, ErrBadBlock, fmt.Sprintf(
			"interface ID %d out of range (interfaces declared in the section: %d)", id, len(r.ifaces)))
	}
	ifc := &r.ifaces[id]
	if !hasTimeIfID {
		// A simple packet block has no captured length: it is the
		// original length cut to the interface's snap length. A block
		// too short for that is broken (Wireshark rejects it too).
		dataStart = 12
		body = uint32(len(b)) - minSPBLen
		origLen = r.u32(b[8:])
		capLen = origLen
		if ifc.snapLen != 0 {
			capLen = min(capLen, ifc.snapLen)
		}
	}
	if capLen > body {
		return r.fail(off, frame, ErrBadBlock, fmt.Sprintf(
			"captured length %d exceeds the %d bytes the %s holds", capLen, body, blockName(typ)))
	}
	if capLen > MaxCapLen {
		return r.fail(off, frame, ErrBadBlock, fmt.Sprintf(
			"captured length %d exceeds the %d-byte limit", capLen, MaxCapLen))
	}
	f.Data = b[dataStart : dataStart+int(capLen)]
	f.Timestamp = 0
	if hasTimeIfID {
		var ok bool
		if f.Timestamp, ok = ifc.toNs(ts); !ok {
			return r.fail(off, frame, ErrBadBlock, fmt.Sprintf(
				"timestamp %d is beyond 64-bit nanoseconds (after the year 2262)", ts))
		}
	}
	f.CapLen = int(capLen)
	// As with pcap, an original length below the captured one is raised.
	f.Len = max(int(origLen), int(capLen))
	f.LinkType = ifc.linkType
	f.Index = frame
	f.Offset = off
	f.Interface = ifc.global
	return nil
}
