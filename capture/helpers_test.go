package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// The builders below write capture files byte by byte from the format
// specifications, independently of the package's writers, so that the reader
// is checked against files it did not produce.

func order(be bool) binary.ByteOrder {
	if be {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// pcapHeader builds a pcap file header.
func pcapHeader(be, nano bool, snap, link uint32) []byte {
	o := order(be)
	b := make([]byte, 24)
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	o.PutUint32(b[0:], magic)
	o.PutUint16(b[4:], 2)
	o.PutUint16(b[6:], 4)
	o.PutUint32(b[16:], snap)
	o.PutUint32(b[20:], link)
	return b
}

// pcapRecord builds a record header followed by data.
func pcapRecord(be bool, sec, frac, incl, orig uint32, data []byte) []byte {
	o := order(be)
	b := make([]byte, 16, 16+len(data))
	o.PutUint32(b[0:], sec)
	o.PutUint32(b[4:], frac)
	o.PutUint32(b[8:], incl)
	o.PutUint32(b[12:], orig)
	return append(b, data...)
}

// ngBlock builds a pcapng block of the given type around body, padding the
// body to a multiple of 4.
func ngBlock(be bool, typ uint32, body []byte) []byte {
	o := order(be)
	n := 12 + (len(body)+3)&^3
	b := make([]byte, n)
	o.PutUint32(b[0:], typ)
	o.PutUint32(b[4:], uint32(n))
	copy(b[8:], body)
	o.PutUint32(b[n-4:], uint32(n))
	return b
}

// ngSHB builds a section header block of version 1.0 without options.
func ngSHB(be bool) []byte {
	o := order(be)
	body := make([]byte, 16)
	o.PutUint32(body[0:], 0x1a2b3c4d)
	o.PutUint16(body[4:], 1)
	o.PutUint16(body[6:], 0)
	o.PutUint64(body[8:], 0xffffffffffffffff)
	return ngBlock(be, 0x0a0d0d0a, body)
}

// ngOpt builds one option, padded.
func ngOpt(be bool, code uint16, val []byte) []byte {
	o := order(be)
	b := make([]byte, 4+(len(val)+3)&^3)
	o.PutUint16(b[0:], code)
	o.PutUint16(b[2:], uint16(len(val)))
	copy(b[4:], val)
	return b
}

// ngIDB builds an interface description block; opts are whole options and
// the end-of-options marker is added when any are given.
func ngIDB(be bool, link uint16, snap uint32, opts ...[]byte) []byte {
	o := order(be)
	body := make([]byte, 8)
	o.PutUint16(body[0:], link)
	o.PutUint32(body[4:], snap)
	for _, opt := range opts {
		body = append(body, opt...)
	}
	if len(opts) > 0 {
		body = append(body, 0, 0, 0, 0)
	}
	return ngBlock(be, 1, body)
}

// ngEPB builds an enhanced packet block.
func ngEPB(be bool, iface uint32, ts uint64, capLen, origLen uint32, data []byte) []byte {
	o := order(be)
	body := make([]byte, 20, 20+len(data))
	o.PutUint32(body[0:], iface)
	o.PutUint32(body[4:], uint32(ts>>32))
	o.PutUint32(body[8:], uint32(ts))
	o.PutUint32(body[12:], capLen)
	o.PutUint32(body[16:], origLen)
	return ngBlock(be, 6, append(body, data...))
}

// ngOPB builds an obsolete packet block.
func ngOPB(be bool, iface uint16, ts uint64, capLen, origLen uint32, data []byte) []byte {
	o := order(be)
	body := make([]byte, 20, 20+len(data))
	o.PutUint16(body[0:], iface)
	o.PutUint16(body[2:], 0) // drops
	o.PutUint32(body[4:], uint32(ts>>32))
	o.PutUint32(body[8:], uint32(ts))
	o.PutUint32(body[12:], capLen)
	o.PutUint32(body[16:], origLen)
	return ngBlock(be, 2, append(body, data...))
}

// ngSPB builds a simple packet block.
func ngSPB(be bool, origLen uint32, data []byte) []byte {
	body := make([]byte, 4, 4+len(data))
	order(be).PutUint32(body, origLen)
	return ngBlock(be, 3, append(body, data...))
}

// u8s returns n bytes counting up from start, so that every frame has
// recognisable contents.
func u8s(start byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// got is a frame with its data copied out of the reader's buffer.
type got struct {
	Data      []byte
	Timestamp int64
	CapLen    int
	Len       int
	LinkType  uint32
	Index     int
	Offset    int64
	Interface int
}

// readAll reads frames until an error and returns them with the error
// (io.EOF at a clean end).
func readAll(r *Reader) ([]got, error) {
	var out []got
	var f Frame
	for {
		if err := r.Next(&f); err != nil {
			return out, err
		}
		out = append(out, got{bytes.Clone(f.Data), f.Timestamp, f.CapLen, f.Len,
			f.LinkType, f.Index, f.Offset, f.Interface})
	}
}

// readBytes opens b with NewReader and reads it to the end.
func readBytes(b []byte) ([]got, error) {
	r, err := NewReader(bytes.NewReader(b), "mem")
	if err != nil {
		return nil, err
	}
	return readAll(r)
}

// isAll reports whether err matches every one of the sentinels.
func isAll(err error, sentinels ...error) bool {
	for _, s := range sentinels {
		if !errors.Is(err, s) {
			return false
		}
	}
	return true
}

var _ = io.EOF
