package layers

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"roce-inspect/internal/testref"
)

// readFrames returns the frames of a classic pcap file under the captures
// directory. gopacket's pcapgo would do, but it imports golang.org/x/net,
// which the module does not otherwise need; the format is small enough to
// read here.
func readFrames(t testing.TB, rel string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testref.SharedCaptures(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	frames, err := parsePcap(data)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return frames
}

// parsePcap splits a classic pcap file (either byte order, micro- or
// nanosecond timestamps) with Ethernet link type into its frames.
func parsePcap(data []byte) ([][]byte, error) {
	if len(data) < 24 {
		return nil, fmt.Errorf("pcap header cut short: %d bytes", len(data))
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(data) {
	case 0xa1b2c3d4, 0xa1b23c4d:
		bo = binary.LittleEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		bo = binary.BigEndian
	default:
		return nil, fmt.Errorf("not a pcap file: magic %x", data[:4])
	}
	if lt := bo.Uint32(data[20:24]); lt != 1 {
		return nil, fmt.Errorf("link type %d, want 1 (Ethernet)", lt)
	}
	var frames [][]byte
	for off := 24; off < len(data); {
		if len(data)-off < 16 {
			return nil, fmt.Errorf("record header %d cut short", len(frames)+1)
		}
		n := int(bo.Uint32(data[off+8:]))
		off += 16
		if n > len(data)-off {
			return nil, fmt.Errorf("record %d cut short", len(frames)+1)
		}
		frames = append(frames, data[off:off+n:off+n])
		off += n
	}
	return frames, nil
}

// unhex decodes a hex dump; spaces and newlines are ignored.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// crc32Update is hash/crc32's IEEE update, the reference for the package's
// own loop.
func crc32Update(crc uint32, p []byte) uint32 { return crc32.Update(crc, crc32.IEEETable, p) }
