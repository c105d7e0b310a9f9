package cmd

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"roce-inspect/capture"
	"roce-inspect/dissect"
	"roce-inspect/internal/testref"
	"roce-inspect/layers"
)

// Hand-built RoCE frames.

// rbPkt describes one RoCE packet to build by hand: RoCEv2 over IPv4 from
// 10.0.0.src to 10.0.0.dst, or RoCEv1 between the IPv4-mapped GIDs of the
// same addresses.
type rbPkt struct {
	v1       bool
	src, dst byte
	sport    uint16
	opcode   byte
	pad      uint8 // BTH pad count
	qp, psn  uint32
	ext      []byte // extended transport headers
	payload  []byte // payload, pad bytes included
}

// Offsets in the frames rbFrame builds.
const (
	rbIPLenOff  = 14 + 2      // IPv4 total length
	rbUDPLenOff = 14 + 20 + 4 // UDP length
	rbGRHLenOff = 14 + 4      // GRH payload length
	rbBTHOff    = 14 + 20 + 8 // BTH of a RoCEv2 frame
	rbBTHOffV1  = 14 + 40     // BTH of a RoCEv1 frame
)

// rbFrame builds an Ethernet frame holding p, every length field consistent
// and the ICRC right.
func rbFrame(t testing.TB, p rbPkt) []byte {
	t.Helper()
	if p.src == 0 {
		p.src, p.dst = 1, 2
	}
	if p.sport == 0 {
		p.sport = 49152
	}
	bth := make([]byte, layers.BTHLen)
	bth[0] = p.opcode
	bth[1] = p.pad << 4
	bth[2], bth[3] = 0xff, 0xff // default P_Key
	rbPut24(bth[5:], p.qp)
	rbPut24(bth[9:], p.psn)
	body := slices.Concat(bth, p.ext, p.payload, make([]byte, layers.ICRCLen))

	eth := []byte{0x02, 0, 0, 0, 0, p.dst, 0x02, 0, 0, 0, 0, p.src, 0, 0}
	var hdr []byte
	var kind layers.NetworkHeader
	if p.v1 {
		binary.BigEndian.PutUint16(eth[12:], 0x8915)
		hdr = make([]byte, 40)
		hdr[0] = 0x60 // IP version 6, traffic class 0
		binary.BigEndian.PutUint16(hdr[4:], uint16(len(body)))
		hdr[6] = 0x1b // next header: IBA transport
		hdr[7] = 64
		s := netip.AddrFrom4([4]byte{10, 0, 0, p.src}).As16()
		d := netip.AddrFrom4([4]byte{10, 0, 0, p.dst}).As16()
		// IPv4-mapped GIDs, as ConnectX cards use for RoCEv1.
		s[10], s[11], d[10], d[11] = 0xff, 0xff, 0xff, 0xff
		copy(hdr[8:], s[:])
		copy(hdr[24:], d[:])
		kind = layers.ICRCGRH
	} else {
		binary.BigEndian.PutUint16(eth[12:], 0x0800)
		hdr = make([]byte, 28)
		hdr[0] = 0x45
		hdr[1] = 0x02 // ECT(0)
		binary.BigEndian.PutUint16(hdr[2:], uint16(28+len(body)))
		hdr[6] = 0x40 // don't fragment
		hdr[8] = 64
		hdr[9] = 17
		copy(hdr[12:], []byte{10, 0, 0, p.src, 10, 0, 0, p.dst})
		binary.BigEndian.PutUint16(hdr[10:], rbIPChecksum(hdr[:20]))
		binary.BigEndian.PutUint16(hdr[20:], p.sport)
		binary.BigEndian.PutUint16(hdr[22:], dissect.RoCEv2Port)
		binary.BigEndian.PutUint16(hdr[24:], uint16(8+len(body)))
		kind = layers.ICRCIPv4
	}
	pkt := slices.Concat(hdr, body)
	crc, err := layers.ComputeICRC(kind, pkt[:len(pkt)-layers.ICRCLen])
	if err != nil {
		t.Fatalf("ICRC of a hand-built packet: %v", err)
	}
	layers.PutICRC(pkt[len(pkt)-layers.ICRCLen:], crc)
	return slices.Concat(eth, pkt)
}

func rbPut24(b []byte, v uint32) { b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v) }

// rbIPChecksum is the IPv4 header checksum (RFC 1071) of h, whose checksum
// field is zero.
func rbIPChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// rbPatch returns a copy of b with the bytes at off replaced.
func rbPatch(b []byte, off int, data ...byte) []byte {
	out := slices.Clone(b)
	copy(out[off:], data)
	return out
}

// rbPatch16 returns a copy of b with a big-endian 16-bit field set.
func rbPatch16(b []byte, off int, v uint16) []byte {
	return rbPatch(b, off, byte(v>>8), byte(v))
}

// rbSend is an RC SEND packet on QP 0x11 with n payload bytes.
func rbSend(t testing.TB, opcode byte, psn uint32, n int) []byte {
	return rbFrame(t, rbPkt{opcode: opcode, qp: 0x11, psn: psn, payload: bytes.Repeat([]byte{0xa5}, n)})
}

// rbGoodFrames is a small conversation with most header layouts: RC SEND
// FIRST, MIDDLE and LAST, an ACK, RDMA WRITE ONLY, READ request and
// response, a NAK, COMPARE SWAP and its ATOMIC ACKNOWLEDGE, UD SEND ONLY, a
// CNP, RoCEv1 WRITE ONLY and ACK, and one ARP frame that is not RoCE.
func rbGoodFrames(t testing.TB) [][]byte {
	reth := []byte{0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 16} // VA 0x10000000, R_Key 0x1234, length 16
	aeth := func(syn byte, msn uint32) []byte { return []byte{syn, byte(msn >> 16), byte(msn >> 8), byte(msn)} }
	data16 := bytes.Repeat([]byte{0x5a}, 16)
	atomic := make([]byte, 28)
	atomic[7] = 0x40 // VA 0x40
	frames := [][]byte{
		rbSend(t, 0x00, 100, 64),
		rbSend(t, 0x01, 101, 64),
		rbFrame(t, rbPkt{opcode: 0x02, qp: 0x11, psn: 102, pad: 2, payload: append(bytes.Repeat([]byte{0xa5}, 30), 0, 0)}),
		rbFrame(t, rbPkt{src: 2, dst: 1, opcode: 0x11, qp: 0x22, psn: 102, ext: aeth(0x1f, 1)}),
		rbFrame(t, rbPkt{opcode: 0x0a, qp: 0x11, psn: 103, ext: reth, payload: data16}),
		rbFrame(t, rbPkt{opcode: 0x0c, qp: 0x11, psn: 104, ext: reth}),
		rbFrame(t, rbPkt{src: 2, dst: 1, opcode: 0x10, qp: 0x22, psn: 104, ext: aeth(0x1f, 3), payload: data16}),
		rbFrame(t, rbPkt{src: 2, dst: 1, opcode: 0x11, qp: 0x22, psn: 105, ext: aeth(0x60, 3)}), // NAK: PSN sequence error
		rbFrame(t, rbPkt{opcode: 0x13, qp: 0x11, psn: 105, ext: atomic}),
		rbFrame(t, rbPkt{src: 2, dst: 1, opcode: 0x12, qp: 0x22, psn: 105, ext: append(aeth(0x1f, 4), make([]byte, 8)...)}),
		rbFrame(t, rbPkt{sport: 49200, opcode: 0x64, qp: 0x33, psn: 7, ext: []byte{0, 0, 0, 1, 0, 0, 0, 0x44}, payload: data16}),
		rbFrame(t, rbPkt{src: 2, dst: 1, opcode: 0x81, qp: 0x11, ext: make([]byte, 16)}),
		rbFrame(t, rbPkt{v1: true, opcode: 0x0a, qp: 0x44, psn: 9, ext: reth, payload: data16}),
		rbFrame(t, rbPkt{v1: true, src: 2, dst: 1, opcode: 0x11, qp: 0x55, psn: 9, ext: aeth(0x1f, 1)}),
		append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06}, make([]byte, 46)...),
	}
	return frames
}

// rbTS is the timestamp of the hand-built captures' first frame.
const rbTS = 1_700_000_000 * int64(time.Second)

// rbPcap writes frames as a little-endian microsecond pcap file. A frame's
// original length is origLens[i] when given and not zero.
func rbPcap(t testing.TB, snapLen int, frames [][]byte, origLens ...int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewPcapWriter(&buf, dissect.LinkTypeEthernet, snapLen, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, fr := range frames {
		orig := 0
		if i < len(origLens) {
			orig = origLens[i]
		}
		if err := w.WriteFrame(rbTS+int64(i)*int64(time.Millisecond), fr, orig); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rbPcapng writes frames as a pcapng file with one Ethernet interface.
func rbPcapng(t testing.TB, frames [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewPcapngWriter(&buf, []capture.Interface{{Name: "eth0", LinkType: dissect.LinkTypeEthernet}})
	if err != nil {
		t.Fatal(err)
	}
	for i, fr := range frames {
		if err := w.WriteFrame(0, rbTS+int64(i)*int64(time.Millisecond), fr, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rbHandPcapng builds a pcapng file byte by byte, independently of the
// writer, so that block offsets are known: a 28-byte section header at 0, a
// 20-byte interface description (Ethernet, microseconds) at 28, then one
// enhanced packet block per frame from offset 48.
func rbHandPcapng(frames [][]byte) []byte {
	le := binary.LittleEndian
	b := []byte{}
	b = le.AppendUint32(b, 0x0a0d0d0a)
	b = le.AppendUint32(b, 28)
	b = le.AppendUint32(b, 0x1a2b3c4d)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint64(b, ^uint64(0)) // section length unknown
	b = le.AppendUint32(b, 28)
	b = le.AppendUint32(b, 1)
	b = le.AppendUint32(b, 20)
	b = le.AppendUint16(b, dissect.LinkTypeEthernet)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint32(b, 0) // no snap length
	b = le.AppendUint32(b, 20)
	for i, fr := range frames {
		padded := (len(fr) + 3) &^ 3
		blen := uint32(32 + padded)
		ts := uint64(rbTS/1000) + uint64(i)*1000
		b = le.AppendUint32(b, 6)
		b = le.AppendUint32(b, blen)
		b = le.AppendUint32(b, 0)
		b = le.AppendUint32(b, uint32(ts>>32))
		b = le.AppendUint32(b, uint32(ts))
		b = le.AppendUint32(b, uint32(len(fr)))
		b = le.AppendUint32(b, uint32(len(fr)))
		b = append(b, fr...)
		b = append(b, make([]byte, padded-len(fr))...)
		b = le.AppendUint32(b, blen)
	}
	return b
}

func rbGzip(t testing.TB, b []byte) []byte {
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

func rbLE32(b []byte, off int, v uint32) []byte {
	out := slices.Clone(b)
	binary.LittleEndian.PutUint32(out[off:], v)
	return out
}

// Running the command line.

// rbDeadline bounds one command on one small input. Runs take milliseconds;
// the deadline is far above that so that only a hang reaches it, however
// loaded the machine.
const rbDeadline = 2 * time.Minute

// rbResult is the outcome of one command line.
type rbResult struct {
	status         int
	stdout, stderr string
}

// rbRun runs a command line (with --quiet) in its own goroutine and returns
// its outcome, or an error when it panicked or did not finish before the
// deadline.
func rbRun(args ...string) (rbResult, error) {
	type outcome struct {
		res   rbResult
		panic any
		stack []byte
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if v := recover(); v != nil {
				o.panic, o.stack = v, debug.Stack()
			}
			done <- o
		}()
		var stdout, stderr bytes.Buffer
		o.res.status = run(append([]string{"--quiet"}, args...), &stdout, &stderr)
		o.res.stdout, o.res.stderr = stdout.String(), stderr.String()
	}()
	timer := time.NewTimer(rbDeadline)
	defer timer.Stop()
	select {
	case o := <-done:
		if o.panic != nil {
			return o.res, fmt.Errorf("%q panicked: %v\n%s", args, o.panic, o.stack)
		}
		return o.res, nil
	case <-timer.C:
		return rbResult{}, fmt.Errorf("%q still running after %v", args, rbDeadline)
	}
}

// rbMustRun is rbRun that fails the test on a panic or a hang.
func rbMustRun(t testing.TB, args ...string) rbResult {
	t.Helper()
	res, err := rbRun(args...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Lines of stderr that are not errors or warnings.
var (
	rbMalformedLine = regexp.MustCompile(`^[1-9][0-9]* of [1-9][0-9]* RoCE packets malformed: [^:]+: [1-9][0-9]*(, [^:]+: [1-9][0-9]*)*$`)
	rbNoRoCELine    = regexp.MustCompile(`^no RoCE packets in [0-9]+ frames$`)
)

// rbCheckStderr checks the diagnostics of one run on the capture path:
// every line is an error or warning that names the file, or one of decode's
// summary lines; a run that ends with status 2 prints exactly one error
// line, any other none.
func rbCheckStderr(stderr, path string, status int) error {
	if stderr == "" {
		if status == exitError {
			return fmt.Errorf("status 2 without an error message")
		}
		return nil
	}
	if !strings.HasSuffix(stderr, "\n") {
		return fmt.Errorf("stderr does not end with a newline: %q", stderr)
	}
	errs := 0
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "roce-inspect: "):
			errs++
			rest := strings.TrimPrefix(line, "roce-inspect: ")
			if !strings.HasPrefix(rest, path+": ") && !strings.HasPrefix(rest, "open "+path+": ") {
				return fmt.Errorf("error line does not start with the file name: %q", line)
			}
		case strings.HasPrefix(line, "warning: "):
			if !strings.HasPrefix(line, "warning: "+path+": ") {
				return fmt.Errorf("warning does not start with the file name: %q", line)
			}
		case rbMalformedLine.MatchString(line), rbNoRoCELine.MatchString(line):
		default:
			return fmt.Errorf("unexpected stderr line %q", line)
		}
	}
	switch {
	case status == exitError && errs != 1:
		return fmt.Errorf("status 2 with %d error lines:\n%s", errs, stderr)
	case status != exitError && errs != 0:
		return fmt.Errorf("status %d with error lines:\n%s", status, stderr)
	}
	return nil
}

// rbPipeline runs decode, analyze and check on the capture at path and
// checks what any input must give: no panic or hang, an exit status the
// command may return, valid JSON, diagnostics that name the file, and
// commands that agree on whether the file could be read. With all set it
// also runs decode's text and verbose formats and analyze's table, which
// print the same packets and report in other words.
func rbPipeline(path string, all bool) error {
	dec, err := rbRun("decode", "--format", "json", path)
	if err != nil {
		return err
	}
	if dec.status != exitOK && dec.status != exitError {
		return fmt.Errorf("decode: exit status %d", dec.status)
	}
	if err := rbCheckStderr(dec.stderr, path, dec.status); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	for _, line := range strings.SplitAfter(dec.stdout, "\n") {
		if line == "" {
			continue
		}
		if !strings.HasSuffix(line, "\n") || !strings.HasPrefix(line, "{") || !json.Valid([]byte(line)) {
			return fmt.Errorf("decode: not a JSON object line: %q", line)
		}
	}
	if all {
		for _, flag := range []string{"--format=text", "-V"} {
			res, err := rbRun("decode", flag, path)
			if err != nil {
				return err
			}
			// The packets are the same; only the note on a capture
			// without RoCE is the text formats' own.
			same := res.status == dec.status && res.stderr == dec.stderr
			if !same && res.status == exitOK && dec.stdout == "" {
				note, ok := strings.CutPrefix(res.stderr, dec.stderr)
				same = ok && rbNoRoCELine.MatchString(strings.TrimSuffix(note, "\n"))
			}
			if !same {
				return fmt.Errorf("decode %s: status %d, stderr %q; JSON: status %d, stderr %q", flag, res.status, res.stderr, dec.status, dec.stderr)
			}
		}
	}

	an, err := rbRun("analyze", "--format", "json", path)
	if err != nil {
		return err
	}
	if an.status != dec.status {
		return fmt.Errorf("analyze: exit status %d, decode's %d", an.status, dec.status)
	}
	if err := rbCheckStderr(an.stderr, path, an.status); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	if an.stdout != "" || an.status == exitOK {
		var r struct {
			Packets struct{ Total, RoCE, Malformed uint64 }
		}
		if err := json.Unmarshal([]byte(an.stdout), &r); err != nil {
			return fmt.Errorf("analyze: invalid JSON (%v): %q", err, an.stdout)
		}
		if roce := uint64(strings.Count(dec.stdout, "\n")); r.Packets.RoCE != roce {
			return fmt.Errorf("analyze counts %d RoCE packets, decode printed %d", r.Packets.RoCE, roce)
		}
	}
	if all {
		res, err := rbRun("analyze", "--color", "never", path)
		if err != nil {
			return err
		}
		if res.status != an.status {
			return fmt.Errorf("analyze table: exit status %d, JSON's %d", res.status, an.status)
		}
	}

	ch, err := rbRun("check", "--format", "json", path)
	if err != nil {
		return err
	}
	if err := rbCheckStderr(ch.stderr, path, ch.status); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	var rep checkReport
	if err := json.Unmarshal([]byte(ch.stdout), &rep); err != nil {
		return fmt.Errorf("check: invalid JSON (%v): %q", err, ch.stdout)
	}
	switch {
	case len(rep.Files) != 1 || rep.Files[0].File != path:
		return fmt.Errorf("check: report names the wrong files: %q", ch.stdout)
	case rep.Passed != (ch.status == exitOK):
		return fmt.Errorf("check: passed %v with exit status %d", rep.Passed, ch.status)
	case dec.status == exitError && ch.status != exitError:
		return fmt.Errorf("check: exit status %d on a file decode could not read", ch.status)
	case dec.status == exitOK && ch.status == exitError:
		return fmt.Errorf("check: exit status 2 on a file decode read whole:\n%s", ch.stderr)
	}
	return nil
}

// Malformed packets.

// rbMalformedCase is one hand-built RoCE packet that the dissector must count
// as malformed for reason (or, with reason empty, accept).
type rbMalformedCase struct {
	name   string
	frame  []byte
	orig   int // length on the wire when the capture cut the frame; 0: not cut
	reason string
	count  int // copies in the combined capture
}

// rbMalformedCases builds the packets. Their reasons were worked out from
// the header layouts, not from the dissector's output: the comments say
// which length gives the fault.
func rbMalformedCases(t testing.TB) []rbMalformedCase {
	sendOnly := func(n int) []byte { return rbFrame(t, rbPkt{opcode: 0x04, qp: 0x99, psn: 1, payload: make([]byte, n)}) }
	v1Ack := rbFrame(t, rbPkt{v1: true, opcode: 0x11, qp: 0x98, psn: 1, ext: []byte{0x1f, 0, 0, 1}})
	send8 := sendOnly(8) // 14 + 20 + 8 + 12 + 8 + 4 = 66 bytes; IP length 52, UDP 32
	return []rbMalformedCase{
		// IP length 38 and UDP length 18 leave 10 bytes after UDP,
		// and the frame ends there.
		{"BTH of 10 bytes", rbPatch16(rbPatch16(sendOnly(0), rbIPLenOff, 38), rbUDPLenOff, 18)[:14+38], 0,
			"BTH shorter than 12 bytes", 1},
		// IP length 42 and UDP length 22 leave the 12 bytes of a BTH
		// and 2 more: the BTH is whole, the ICRC cannot be there.
		{"BTH and 2 bytes", rbPatch16(rbPatch16(sendOnly(0), rbIPLenOff, 42), rbUDPLenOff, 22)[:14+42], 0,
			"no room for the ICRC after the BTH", 1},
		// GRH payload length 8: no room for a BTH.
		{"RoCEv1 GRH payload length 8", rbPatch16(v1Ack, rbGRHLenOff, 8)[:14+40+8], 0,
			"BTH shorter than 12 bytes", 1},
		// GRH payload length 16 holds BTH and ICRC, not the ACK's AETH.
		{"RoCEv1 GRH payload length without the AETH", rbPatch16(v1Ack, rbGRHLenOff, 16), 0,
			"extended header cut short", 1},
		// RDMA WRITE FIRST needs a 16-byte RETH; 8 bytes follow the BTH.
		{"RETH of 8 bytes", rbFrame(t, rbPkt{opcode: 0x06, qp: 0x99, ext: make([]byte, 8)}), 0,
			"extended header cut short", 1},
		// UD SEND ONLY needs an 8-byte DETH.
		{"DETH of 4 bytes", rbFrame(t, rbPkt{opcode: 0x64, qp: 0x99, ext: make([]byte, 4)}), 0,
			"extended header cut short", 1},
		// COMPARE SWAP needs a 28-byte AtomicETH.
		{"AtomicETH of 20 bytes", rbFrame(t, rbPkt{opcode: 0x13, qp: 0x99, ext: make([]byte, 20)}), 0,
			"extended header cut short", 1},
		{"pad count 3 with 2 payload bytes", rbFrame(t, rbPkt{opcode: 0x04, qp: 0x99, pad: 3, payload: []byte{1, 0}}), 0,
			"pad count larger than the payload", 1},
		{"pad count 1 on an ACK", rbFrame(t, rbPkt{opcode: 0x11, qp: 0x99, pad: 1, ext: []byte{0x1f, 0, 0, 1}}), 0,
			"pad count larger than the payload", 2},
		{"UDP length 4 above the IP length", rbPatch16(send8, rbUDPLenOff, 36), 0,
			"UDP length disagrees with the IP length", 1},
		{"UDP length 4 below the IP length", rbPatch16(send8, rbUDPLenOff, 28), 0,
			"UDP length disagrees with the IP length", 2},
		{"IP length 8 beyond the frame", rbPatch16(send8, rbIPLenOff, 60), 0,
			"UDP length disagrees with the IP length", 2},
		// 27 bytes cannot hold a 20-byte IPv4 header and UDP's 8.
		{"IP length 27", rbPatch16(send8, rbIPLenOff, 27), 0,
			"IPv4 header length invalid", 1},
		{"opcode 0xc0", rbFrame(t, rbPkt{opcode: 0xc0, qp: 0x99, payload: make([]byte, 8)}), 0,
			"unknown opcode", 3},
		// 0x1e lies in the RC range but IBTA defines no such operation.
		{"opcode 0x1e", rbFrame(t, rbPkt{opcode: 0x1e, qp: 0x99, payload: make([]byte, 8)}), 0,
			"unknown opcode", 3},
		{"GRH next header UDP", rbPatch(v1Ack, 14+6, 17), 0,
			"GRH next header is not the InfiniBand transport", 1},
		// Cut 6 bytes into the BTH by the snap length.
		{"cut inside the BTH", send8[:14+28+6], len(send8),
			"transport headers cut by the snap length", 1},
		// Not malformed: IP and UDP lengths that agree with each other
		// but run past the frame are how some tools record a frame cut
		// by the snap length (the original length lost), so the packet
		// is whole but its ICRC cannot be checked.
		{"IP and UDP lengths 100 beyond the frame", rbPatch16(rbPatch16(send8, rbIPLenOff, 152), rbUDPLenOff, 132), 0, "", 1},
		// Not malformed: bytes after the IP length (an FCS, padding).
		{"4 bytes after the IP length", append(slices.Clone(send8), 0xde, 0xad, 0xbe, 0xef), 0, "", 1},
	}
}

// rbMalformedFrames is every malformed case, count times each, between the
// good frames.
func rbMalformedFrames(t testing.TB) [][]byte {
	frames, _ := rbMalformedCapture(t)
	return frames
}

func rbMalformedCapture(t testing.TB) (frames [][]byte, origs []int) {
	good := rbGoodFrames(t)
	cases := rbMalformedCases(t)
	for i, g := range good {
		frames, origs = append(frames, g), append(origs, 0)
		if i < len(cases) {
			for range cases[i].count {
				frames, origs = append(frames, cases[i].frame), append(origs, cases[i].orig)
			}
		}
	}
	for _, c := range cases[min(len(good), len(cases)):] {
		for range c.count {
			frames, origs = append(frames, c.frame), append(origs, c.orig)
		}
	}
	return frames, origs
}

// rbAnalyzeJSON is the part of analyze's JSON report the tests read.
type rbAnalyzeJSON struct {
	Packets struct {
		Total     uint64 `json:"total"`
		RoCE      uint64 `json:"roce"`
		Malformed uint64 `json:"malformed"`
		NotRoCE   uint64 `json:"not_roce"`
	} `json:"packets"`
	MalformedReasons map[string]uint64 `json:"malformed_reasons"`
	ICRC             struct {
		Good         uint64 `json:"good"`
		Bad          uint64 `json:"bad"`
		Unverifiable uint64 `json:"unverifiable"`
	} `json:"icrc"`
	Flows []struct {
		SrcIP   string `json:"src_ip"`
		DstIP   string `json:"dst_ip"`
		DestQP  uint32 `json:"dest_qp"`
		Packets uint64 `json:"packets"`
	} `json:"flows"`
	Warnings []string `json:"warnings"`
}

func rbWriteFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMalformedPackets checks that every kind of malformed RoCE packet is
// counted under its reason by decode and analyze, and that the packets
// around it are still decoded and analyzed.
func TestMalformedPackets(t *testing.T) {
	t.Parallel()
	good := rbGoodFrames(t)
	for _, c := range rbMalformedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			path := rbWriteFile(t, "one.pcap", rbPcap(t, 0, [][]byte{good[0], c.frame, good[1]}, 0, c.orig))
			dec := rbMustRun(t, "decode", "--format", "json", path)
			lines := strings.Split(strings.TrimSuffix(dec.stdout, "\n"), "\n")
			if dec.status != exitOK || len(lines) != 3 {
				t.Fatalf("decode: status %d, %d lines, stderr %q", dec.status, len(lines), dec.stderr)
			}
			var pkt struct {
				Frame     int    `json:"frame"`
				Malformed string `json:"malformed"`
				ICRC      string `json:"icrc"`
			}
			if err := json.Unmarshal([]byte(lines[1]), &pkt); err != nil {
				t.Fatal(err)
			}
			wantStderr := ""
			if c.reason != "" {
				wantStderr = fmt.Sprintf("1 of 3 RoCE packets malformed: %s: 1\n", c.reason)
			}
			if pkt.Frame != 2 || pkt.Malformed != c.reason || dec.stderr != wantStderr {
				t.Errorf("decode: frame %d malformed %q, stderr %q; want frame 2 malformed %q, stderr %q",
					pkt.Frame, pkt.Malformed, dec.stderr, c.reason, wantStderr)
			}
			switch c.name {
			case "IP and UDP lengths 100 beyond the frame":
				if pkt.ICRC != "unverifiable" {
					t.Errorf("ICRC %q, want unverifiable", pkt.ICRC)
				}
			case "4 bytes after the IP length":
				if pkt.ICRC != "good" {
					t.Errorf("ICRC %q, want good", pkt.ICRC)
				}
			}

			an := rbMustRun(t, "analyze", "--format", "json", path)
			var r rbAnalyzeJSON
			if err := json.Unmarshal([]byte(an.stdout), &r); err != nil || an.status != exitOK {
				t.Fatalf("analyze: status %d, %v, stderr %q", an.status, err, an.stderr)
			}
			want := map[string]uint64{}
			if c.reason != "" {
				want[c.reason] = 1
			}
			if r.Packets.RoCE != 3 || r.Packets.Malformed != uint64(len(want)) || !rbMapsEqual(r.MalformedReasons, want) {
				t.Errorf("analyze: %d RoCE, %d malformed, reasons %v; want 3, %d, %v",
					r.Packets.RoCE, r.Packets.Malformed, r.MalformedReasons, len(want), want)
			}
		})
	}

	t.Run("all in one capture", func(t *testing.T) {
		frames, origs := rbMalformedCapture(t)
		path := rbWriteFile(t, "malformed.pcap", rbPcap(t, 0, frames, origs...))
		// 24 malformed packets: 6 unknown opcodes, 5 UDP lengths, 4
		// extended headers, 3 pad counts, 2 BTHs, and one each of
		// the rest (ties in alphabetical order, capitals first). 14
		// good packets and 2 well-formed odd ones make 40 RoCE
		// packets; the ARP frame makes 41 frames.
		const wantLine = "24 of 40 RoCE packets malformed: unknown opcode: 6, " +
			"UDP length disagrees with the IP length: 5, extended header cut short: 4, " +
			"pad count larger than the payload: 3, BTH shorter than 12 bytes: 2, " +
			"GRH next header is not the InfiniBand transport: 1, IPv4 header length invalid: 1, " +
			"no room for the ICRC after the BTH: 1, transport headers cut by the snap length: 1\n"
		for _, format := range []string{"json", "text"} {
			dec := rbMustRun(t, "decode", "--format", format, path)
			if dec.status != exitOK || dec.stderr != wantLine || strings.Count(dec.stdout, "\n") != 40 {
				t.Errorf("decode --format %s: status %d, %d lines, stderr\n%q\nwant\n%q",
					format, dec.status, strings.Count(dec.stdout, "\n"), dec.stderr, wantLine)
			}
		}

		an := rbMustRun(t, "analyze", "--format", "json", path)
		var r rbAnalyzeJSON
		if err := json.Unmarshal([]byte(an.stdout), &r); err != nil || an.status != exitOK || an.stderr != "" {
			t.Fatalf("analyze: status %d, %v, stderr %q", an.status, err, an.stderr)
		}
		wantReasons := map[string]uint64{
			"unknown opcode": 6,
			"UDP length disagrees with the IP length":         5,
			"extended header cut short":                       4,
			"pad count larger than the payload":               3,
			"BTH shorter than 12 bytes":                       2,
			"GRH next header is not the InfiniBand transport": 1,
			"IPv4 header length invalid":                      1,
			"no room for the ICRC after the BTH":              1,
			"transport headers cut by the snap length":        1,
		}
		if r.Packets.Total != 41 || r.Packets.RoCE != 40 || r.Packets.Malformed != 24 || r.Packets.NotRoCE != 1 ||
			!rbMapsEqual(r.MalformedReasons, wantReasons) {
			t.Errorf("analyze: packets %+v, reasons %v; want 41 frames, 40 RoCE, 24 malformed, 1 not RoCE, reasons %v",
				r.Packets, r.MalformedReasons, wantReasons)
		}
		// Every RoCE packet has an ICRC verdict, malformed ones too. Good:
		// the 14 good packets, the one with trailing bytes, and the 12
		// malformed ones whose fault lies past where the ICRC is
		// found (3 short extended headers, 3 pad counts, 6 unknown
		// opcodes). Bad: the GRH length that puts the ICRC inside the
		// AETH. Unverifiable: the one with long lengths and the 11
		// whose fault stops the decoding before the ICRC is found.
		if r.ICRC.Good != 27 || r.ICRC.Bad != 1 || r.ICRC.Unverifiable != 12 {
			t.Errorf("analyze: ICRC %+v, want 27 good, 1 bad, 12 unverifiable", r.ICRC)
		}
		// The analysis of the good packets went on: the SEND, WRITE,
		// READ and COMPARE SWAP requests to QP 0x11.
		found := false
		for _, f := range r.Flows {
			if f.SrcIP == "10.0.0.1" && f.DstIP == "10.0.0.2" && f.DestQP == 0x11 {
				found = true
				if f.Packets != 6 {
					t.Errorf("flow to QP 0x11: %d packets, want 6", f.Packets)
				}
			}
		}
		if !found {
			t.Errorf("no flow 10.0.0.1 > 10.0.0.2 QP 0x11 in %+v", r.Flows)
		}

		ruleOf := func(stdout, name string) *rule {
			var rep checkReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Files) != 1 {
				t.Fatalf("check: %v: %q", err, stdout)
			}
			for i, ru := range rep.Files[0].Rules {
				if ru.Name == name {
					return &rep.Files[0].Rules[i]
				}
			}
			t.Fatalf("check: no rule %q in %q", name, stdout)
			return nil
		}
		// Malformed packets have no limit by default; the bad ICRC
		// fails the default check.
		ch := rbMustRun(t, "check", "--format", "json", path)
		if bad := ruleOf(ch.stdout, "bad-icrc"); ch.status != exitProblem || bad.Value != 1 || bad.Passed {
			t.Errorf("check: status %d, rule %+v; want 1 and one bad ICRC", ch.status, bad)
		}
		ch = rbMustRun(t, "check", "--format", "json", "--max-bad-icrc", "-1", path)
		if ch.status != exitOK || ch.stderr != "" {
			t.Errorf("check --max-bad-icrc -1: status %d, stderr %q", ch.status, ch.stderr)
		}
		ch = rbMustRun(t, "check", "--format", "json", "--max-bad-icrc", "-1", "--max-malformed", "0", path)
		malformed := ruleOf(ch.stdout, "malformed")
		if ch.status != exitProblem || malformed.Value != 24 || malformed.Passed {
			t.Errorf("check --max-malformed 0: status %d, rule %+v; want 1 and 24 malformed", ch.status, malformed)
		}
	})
}

func rbMapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Damaged files.

// rbFileCase is a damaged capture file and what every command must say
// about it.
type rbFileCase struct {
	name string
	// build creates the file at path.
	build func(t *testing.T, path string)
	// msg is the reader's one-line description of the fault, with %[1]s
	// for the path; empty when the file is read whole.
	msg string
	// pattern says msg is a regular expression (with %[1]s quoted).
	pattern bool
	// packets is the RoCE packets (all frames are RoCE) before the fault.
	packets int
	// truncated says the file is cut short: decode and analyze report
	// the packets before the cut with a warning and succeed; check fails
	// with status 2 unless --allow-truncated.
	truncated bool
}

func rbFileCases(t *testing.T) []rbFileCase {
	good := rbGoodFrames(t)[:3]
	// pcap: file header 24 bytes; records of 16 + 122, 16 + 122 and
	// 16 + 90 bytes at offsets 24, 162 and 300; 406 bytes in all.
	pcap := rbPcap(t, 65535, good)
	// pcapng: section header at 0 (28 bytes), interface at 28 (20),
	// packet blocks at 48 (156 bytes), 204 (156) and 360 (124); 484 in
	// all.
	ng := rbHandPcapng(good)
	gz := rbGzip(t, pcap)
	file := func(b []byte) func(*testing.T, string) {
		return func(t *testing.T, path string) {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(pcap) != 406 || len(ng) != 484 {
		t.Fatalf("hand-built captures of %d and %d bytes, not 406 and 484", len(pcap), len(ng))
	}
	gzBadCRC := slices.Clone(gz)
	gzBadCRC[len(gz)-8] ^= 0xff // the CRC-32 of the trailer
	gzGarbled := slices.Clone(gz)
	for i := 10; i < len(gz)-8; i += 7 {
		gzGarbled[i] ^= 0x55
	}
	return []rbFileCase{
		{name: "empty", build: file(nil),
			msg: "%[1]s: offset 0: not a capture file: empty file"},
		{name: "text", build: file([]byte("this is not a capture file\n")),
			msg: "%[1]s: offset 0: not a capture file: unknown magic 0x74686973"},
		{name: "bad magic", build: file(rbPatch(pcap, 0, 0xd5)),
			msg: "%[1]s: offset 0: not a capture file: unknown magic 0xd5c3b2a1"},
		{name: "three bytes", build: file(pcap[:3]),
			msg: "%[1]s: offset 0: not a capture file: file is only 3 bytes long"},
		{name: "pcap file header cut", build: file(pcap[:20]),
			msg: "%[1]s: offset 0: truncated: file ends 20 bytes into the 24-byte pcap file header"},
		{name: "pcap version 3", build: file(rbPatch(pcap, 4, 3, 0)),
			msg: "%[1]s: offset 0: not a capture file: unsupported pcap version 3.4"},
		{name: "cut in a record", build: file(pcap[:350]), packets: 2, truncated: true,
			msg: "%[1]s: offset 300 (frame 3): truncated: file ends 50 bytes into the 106-byte record"},
		{name: "cut in a record header", build: file(pcap[:306]), packets: 2, truncated: true,
			msg: "%[1]s: offset 300 (frame 3): truncated: file ends 6 bytes into the 16-byte record header"},
		{name: "record length beyond any frame", build: file(rbLE32(pcap, 162+8, 300000)), packets: 1,
			msg: "%[1]s: offset 162 (frame 2): record length 300000 exceeds the 65535-byte snap length and the 262144-byte limit"},
		{name: "record length 2^32-1", build: file(rbLE32(pcap, 24+8, 0xffffffff)),
			msg: "%[1]s: offset 24 (frame 1): record length 4294967295 exceeds the 65535-byte snap length and the 262144-byte limit"},
		{name: "record length 16 MiB + 1 with snap length 2^32-1", build: file(rbLE32(rbLE32(pcap, 16, 0xffffffff), 162+8, 16<<20+1)), packets: 1,
			msg: "%[1]s: offset 162 (frame 2): record length 16777217 exceeds the 16777216-byte limit"},
		// Records above the snap length but within libpcap's 262144
		// bytes are read, as tcpdump and Wireshark do.
		{name: "records longer than the snap length", build: file(rbLE32(pcap, 16, 64)), packets: 3},
		{name: "pcapng section header length 29", build: file(rbLE32(ng, 4, 29)),
			msg: "%[1]s: offset 0: section header block length 29 is not a multiple of 4"},
		{name: "pcapng interface block length 8", build: file(rbLE32(ng, 28+4, 8)),
			msg: "%[1]s: offset 28: interface description block length 8 is less than the minimum 20"},
		{name: "pcapng packet block length 19", build: file(rbLE32(ng, 204+4, 19)), packets: 1,
			msg: "%[1]s: offset 204 (frame 2): enhanced packet block length 19 is less than the minimum 32"},
		{name: "pcapng packet block length 158", build: file(rbLE32(ng, 204+4, 158)), packets: 1,
			msg: "%[1]s: offset 204 (frame 2): enhanced packet block length 158 is not a multiple of 4"},
		{name: "pcapng packet block length 2^32-16", build: file(rbLE32(ng, 204+4, 0xfffffff0)), packets: 1,
			msg: "%[1]s: offset 204 (frame 2): enhanced packet block length 4294967280 exceeds the 17825792-byte limit"},
		{name: "pcapng trailing length 160", build: file(rbLE32(ng, 204+152, 160)), packets: 1,
			msg: "%[1]s: offset 204 (frame 2): enhanced packet block length 156 does not match its trailing copy 160"},
		// 160 bytes from 204 end at 364: the trailing copy read is the
		// type of the next block, 6.
		{name: "pcapng packet block length 160", build: file(rbLE32(ng, 204+4, 160)), packets: 1,
			msg: "%[1]s: offset 204 (frame 2): enhanced packet block length 160 does not match its trailing copy 6"},
		{name: "pcapng captured length 4096", build: file(rbLE32(ng, 204+20, 4096)), packets: 1,
			msg: "%[1]s: offset 204 (frame 2): captured length 4096 exceeds the 124 bytes the enhanced packet block holds"},
		{name: "pcapng interface ID 3", build: file(rbLE32(ng, 204+8, 3)), packets: 1,
			msg: "%[1]s: offset 204 (frame 2): interface ID 3 out of range (interfaces declared in the section: 1)"},
		{name: "pcapng block beyond the end", build: file(rbLE32(ng, 360+4, 1000)), packets: 2, truncated: true,
			msg: "%[1]s: offset 360 (frame 3): truncated: file ends 124 bytes into the 1000-byte enhanced packet block"},
		{name: "gzip method 7", build: file([]byte{0x1f, 0x8b, 7, 0, 0, 0, 0, 0, 0, 0xff, 1, 2, 3, 4}),
			msg: "%[1]s: offset 0: corrupt gzip stream in the gzip header: gzip: invalid header"},
		// The stream decompresses whole; the CRC check at its end
		// fails where the fourth record header would start.
		{name: "gzip CRC", build: file(gzBadCRC), packets: 3,
			msg: "%[1]s: offset 406 (frame 4): corrupt gzip stream 0 bytes into the 16-byte record header: gzip: invalid checksum"},
		{name: "gzip trailer cut", build: file(gz[:len(gz)-4]), packets: 3, truncated: true,
			msg: "%[1]s: offset 406 (frame 4): truncated: compressed stream ends early, 0 bytes into the 16-byte record header"},
		// Where flate notices the damage depends on its block layout.
		{name: "gzip data garbled", build: file(gzGarbled), pattern: true,
			msg: `%[1]s: offset [0-9]+( \(frame 1\))?: corrupt gzip stream [0-9]+ bytes into the [0-9]+-byte [a-z ]+: flate: corrupt input before offset [0-9]+`},
		{name: "directory", build: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, msg: "%[1]s: is a directory, not a capture file"},
		{name: "missing", build: func(*testing.T, string) {},
			msg: "open %[1]s: no such file or directory"},
		{name: "no read permission", build: func(t *testing.T, path string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads a file whatever its permissions")
			}
			file(pcap)(t, path)
			if err := os.Chmod(path, 0); err != nil {
				t.Fatal(err)
			}
		}, msg: "open %[1]s: permission denied"},
	}
}

// TestDamagedFiles runs decode, analyze and check on damaged files and
// checks the one line each prints on stderr, its exit status, and that the
// packets before the damage are still reported.
func TestDamagedFiles(t *testing.T) {
	t.Parallel()
	for _, c := range rbFileCases(t) {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "capture")
			c.build(t, path)
			// line matches one stderr line: "" is none.
			line := func(prefix, suffix string) *regexp.Regexp {
				if c.msg == "" {
					return regexp.MustCompile(`^$`)
				}
				msg := regexp.QuoteMeta(fmt.Sprintf(c.msg, path))
				if c.pattern {
					msg = fmt.Sprintf(c.msg, regexp.QuoteMeta(path))
				}
				return regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + msg + regexp.QuoteMeta(suffix) + "\n$")
			}
			// Any damage ends decode and analyze with status 2, a cut
			// too (after the results of the frames before it).
			failed := c.msg != "" && !c.truncated
			status := exitOK
			if c.msg != "" {
				status = exitError
			}
			const cover = "; the results cover the frames before it"
			expect := func(what string, res rbResult, status int, stderr *regexp.Regexp) {
				t.Helper()
				if res.status != status || !stderr.MatchString(res.stderr) {
					t.Errorf("%s: status %d, stderr %q; want %d, stderr matching %s", what, res.status, res.stderr, status, stderr)
				}
			}

			// decode: the packets before the damage, then the error
			// or the warning.
			decLine := line("roce-inspect: ", "")
			if c.truncated {
				decLine = line("roce-inspect: ", cover)
			}
			for _, format := range []string{"json", "text"} {
				res := rbMustRun(t, "decode", "--format", format, path)
				expect("decode --format "+format, res, status, decLine)
				if n := strings.Count(res.stdout, "\n"); n != c.packets {
					t.Errorf("decode --format %s: %d packets, want %d", format, n, c.packets)
				}
			}

			// analyze: the report of the packets before the damage
			// (none when there were none and the file is unreadable),
			// then the error or the warning.
			anLine := line("roce-inspect: ", "")
			switch {
			case c.truncated:
				anLine = line("roce-inspect: ", cover)
			case failed && c.packets > 0:
				frames := "frames"
				if c.packets == 1 {
					frames = "frame"
				}
				anLine = line("roce-inspect: ", fmt.Sprintf(" (the report covers the %d %s before it)", c.packets, frames))
			}
			res := rbMustRun(t, "analyze", "--format", "json", path)
			expect("analyze --format json", res, status, anLine)
			if failed && c.packets == 0 {
				if res.stdout != "" {
					t.Errorf("analyze --format json wrote a report of nothing: %q", res.stdout)
				}
			} else {
				var r rbAnalyzeJSON
				if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
					t.Fatalf("analyze --format json: %v: %q", err, res.stdout)
				}
				if r.Packets.Total != uint64(c.packets) || r.Packets.RoCE != uint64(c.packets) {
					t.Errorf("analyze --format json: %d frames, %d RoCE; want %d", r.Packets.Total, r.Packets.RoCE, c.packets)
				}
				if c.truncated && (len(r.Warnings) == 0 || !line("", cover).MatchString(r.Warnings[0]+"\n")) {
					t.Errorf("analyze --format json: warnings %q do not start with the cut", r.Warnings)
				}
			}
			// The table carries the warning itself, once, and the
			// error line goes to stderr.
			res = rbMustRun(t, "analyze", "--color", "never", path)
			if c.truncated {
				expect("analyze", res, status, anLine)
				want := line("warning: ", cover)
				n := 0
				for _, l := range strings.SplitAfter(res.stdout, "\n") {
					if want.MatchString(l) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("analyze: the table has %d warning lines %s, want 1:\n%s", n, want, res.stdout)
				}
			} else {
				expect("analyze", res, status, anLine)
			}

			// check: status 2 for any damage, a cut included, unless
			// --allow-truncated.
			chStatus, chLine := status, line("roce-inspect: ", "")
			if c.truncated {
				chStatus, chLine = exitError, line("roce-inspect: ", cover)
			}
			res = rbMustRun(t, "check", path)
			expect("check", res, chStatus, chLine)
			state := "PASS"
			if chStatus != exitOK {
				state = "FAIL"
			}
			if head := fmt.Sprintf("%s: %s (%s, %d RoCE)\n", path, state, count(c.packets, "frame"), c.packets); !strings.HasPrefix(res.stdout, head) {
				t.Errorf("check: report starts %q, want %q", res.stdout, head)
			}
			res = rbMustRun(t, "check", "--allow-truncated", path)
			if c.truncated {
				expect("check --allow-truncated", res, exitOK, regexp.MustCompile(`^$`))
			} else {
				expect("check --allow-truncated", res, chStatus, chLine)
			}
			res = rbMustRun(t, "check", "--format", "json", path)
			var rep checkReport
			if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
				t.Fatalf("check --format json: %v: %q", err, res.stdout)
			}
			if res.status != chStatus || len(rep.Files) != 1 || rep.Files[0].Truncated != c.truncated ||
				(c.msg != "" && !line("", "").MatchString(strings.TrimSuffix(rep.Files[0].Error, cover)+"\n")) {
				t.Errorf("check --format json: status %d, %+v", res.status, rep.Files)
			}
		})
	}
}

// The corruption test.

// rbMutant is one corrupted variant of a capture.
type rbMutant struct {
	desc string
	data []byte
}

// rbLayout is what rbParse found in an uncompressed capture.
type rbLayout struct {
	pcapng  bool
	order   binary.ByteOrder
	records []int // pcap: offsets of the record headers
	blocks  []int // pcapng: offsets of the blocks
	link    uint32
}

// rbParse walks the records or blocks of a well-formed capture, without
// the package under test, so that mutations can aim at length fields.
func rbParse(b []byte) rbLayout {
	var l rbLayout
	if len(b) < 24 {
		return l
	}
	switch binary.BigEndian.Uint32(b) {
	case 0xa1b2c3d4, 0xa1b23c4d:
		l.order = binary.BigEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		l.order = binary.LittleEndian
	case 0x0a0d0d0a:
		l.pcapng = true
		l.order = binary.LittleEndian
		if binary.BigEndian.Uint32(b[8:]) == 0x1a2b3c4d {
			l.order = binary.BigEndian
		}
		for off := 0; off+12 <= len(b); {
			n := int(l.order.Uint32(b[off+4:]))
			if n < 12 || off+n > len(b) {
				break
			}
			l.blocks = append(l.blocks, off)
			off += n
		}
		return l
	default:
		return l
	}
	l.link = l.order.Uint32(b[20:]) & 0x0fffffff
	for off := 24; off+16 <= len(b); {
		n := int(l.order.Uint32(b[off+8:]))
		if off+16+n > len(b) {
			break
		}
		l.records = append(l.records, off)
		off += 16 + n
	}
	return l
}

// rbMutants returns the corrupted variants of base: bit flips at random
// offsets, cuts at every offset of the first records, absurd record and
// block lengths, IP, UDP and GRH length fields larger and smaller than the
// frame, and other opcodes. Beyond the flips, only every scale-th variant
// is kept; opStep is the step through the opcodes.
func rbMutants(base []byte, rng *rand.Rand, flips, scale, opStep int) []rbMutant {
	var out []rbMutant
	add := func(desc string, data []byte) { out = append(out, rbMutant{desc, data}) }
	set32 := func(order binary.ByteOrder, off int, v uint32) []byte {
		b := slices.Clone(base)
		order.PutUint32(b[off:], v)
		return b
	}

	for range flips {
		b := slices.Clone(base)
		// Half the flips land in the first 512 bytes, where the file
		// header and the first records' headers are.
		span := len(b)
		if rng.IntN(2) == 0 {
			span = min(span, 512)
		}
		var where []string
		for range 1 + rng.IntN(4) {
			off, bit := rng.IntN(span), rng.IntN(8)
			b[off] ^= 1 << bit
			where = append(where, fmt.Sprintf("%d.%d", off, bit))
		}
		add("flip bits "+strings.Join(where, " "), b)
	}

	l := rbParse(base)
	// Cuts at every offset through the first record or packet block (up
	// to 512 bytes: beyond is payload), at every offset of the first 64
	// bytes of the next two (record or block header, link and network
	// headers), and at every 13th offset in between.
	var starts []int
	switch {
	case len(l.records) > 0:
		starts = l.records[:min(4, len(l.records))]
	case len(l.blocks) > 2: // section header, interface, packets
		starts = l.blocks[2:min(6, len(l.blocks))]
	}
	firstEnd, end := len(base), len(base)
	if len(starts) > 1 {
		firstEnd = starts[1]
	}
	if len(starts) > 3 {
		end = starts[3]
	}
	for n := 0; n < min(end, 4096); n++ {
		inHeader := false
		for _, s := range starts[min(1, len(starts)):] {
			inHeader = inHeader || (n >= s && n < s+64)
		}
		if n < min(firstEnd, 512) || inHeader || n%13 == 0 {
			add(fmt.Sprintf("cut at %d", n), base[:n])
		}
	}

	for i, off := range l.records[:min(4, len(l.records))] {
		incl := l.order.Uint32(base[off+8:])
		snap := l.order.Uint32(base[16:])
		for _, v := range []uint32{0, 1, 15, incl - 1, incl + 1, snap, snap + 1, 262144, 262145,
			1 << 24, 1<<24 + 1, 0x7fffffff, 0x80000000, 0xffffffff} {
			add(fmt.Sprintf("record %d length %d", i+1, v), set32(l.order, off+8, v))
		}
		for _, v := range []uint32{0, incl - 1, 0xffffffff} {
			add(fmt.Sprintf("record %d original length %d", i+1, v), set32(l.order, off+12, v))
		}
		for _, v := range []uint32{0, 1, 0xffffffff} {
			b := set32(l.order, 16, v)
			l.order.PutUint32(b[off+8:], 1<<24)
			add(fmt.Sprintf("snap length %d, record %d length 2^24", v, i+1), b)
		}
	}
	if len(l.records) > 0 {
		for _, v := range []uint32{0, 1, 101, 113, 228, 229, 276, 0xffff, 0xffffffff} {
			add(fmt.Sprintf("link type %d", v), set32(l.order, 20, v))
		}
	}

	for i, off := range l.blocks[:min(6, len(l.blocks))] {
		blen := l.order.Uint32(base[off+4:])
		typ := l.order.Uint32(base[off:])
		for _, v := range []uint32{0, 4, 8, 11, 12, 16, 28, 32, blen - 4, blen - 1, blen + 4, blen + 8,
			0x7ffffffc, 0xfffffffc, 17825792, 17825796} {
			add(fmt.Sprintf("block %d length %d", i+1, v), set32(l.order, off+4, v))
			add(fmt.Sprintf("block %d trailing length %d", i+1, v), set32(l.order, off+int(blen)-4, v))
		}
		switch typ {
		case 1: // interface description: every byte of its body
			for j := off + 8; j < off+int(blen)-4; j++ {
				add(fmt.Sprintf("block %d byte %d set", i+1, j), rbPatch(base, j, 0xff))
				add(fmt.Sprintf("block %d byte %d cleared", i+1, j), rbPatch(base, j, 0))
			}
		case 6: // enhanced packet
			capLen := l.order.Uint32(base[off+20:])
			for _, v := range []uint32{0, capLen + 1, blen - 32, blen - 31, 1 << 24, 0xffffffff} {
				add(fmt.Sprintf("block %d captured length %d", i+1, v), set32(l.order, off+20, v))
			}
			for _, v := range []uint32{1, 0xffffffff} {
				add(fmt.Sprintf("block %d interface %d", i+1, v), set32(l.order, off+8, v))
			}
		}
	}

	// Network length fields of the first RoCE frames of an Ethernet pcap.
	if l.link == dissect.LinkTypeEthernet {
		out = append(out, rbNetMutants(base, l, opStep)...)
	}
	if scale > 1 {
		kept := slices.Clone(out[:flips])
		for i := flips; i < len(out); i += scale {
			kept = append(kept, out[i])
		}
		out = kept
	}
	return out
}

// rbNetMutants sets the IP, UDP and GRH length fields of the first four
// RoCE frames of an Ethernet pcap to values larger and smaller than the
// frame, and the opcode of the first one to other values.
func rbNetMutants(base []byte, l rbLayout, opStep int) []rbMutant {
	var out []rbMutant
	add := func(desc string, data []byte) { out = append(out, rbMutant{desc, data}) }
	set16 := func(off int, v uint16) []byte { return rbPatch16(base, off, v) }
	sweep := true
	for i, off := range l.records[:min(4, len(l.records))] {
		data := off + 16
		frame := base[data : data+int(l.order.Uint32(base[off+8:]))]
		if len(frame) < 14 {
			continue
		}
		net, etherType := data+14, binary.BigEndian.Uint16(frame[12:])
		for (etherType == 0x8100 || etherType == 0x88a8) && net+4 <= data+len(frame) {
			etherType = binary.BigEndian.Uint16(base[net+2:])
			net += 4
		}
		rest := data + len(frame) - net // bytes from the network header on
		var bth int
		switch {
		case etherType == 0x0800 && rest >= 28 && base[net+9] == 17:
			ihl := int(base[net]&0x0f) * 4
			if ihl < 20 || rest < ihl+8 {
				continue
			}
			ipLen, udpLen := net+2, net+ihl+4
			cur := int(binary.BigEndian.Uint16(base[ipLen:]))
			for _, v := range []int{0, 1, ihl + 7, ihl + 8, ihl + 19, ihl + 20, ihl + 23, ihl + 24, cur - 1, cur + 1, cur + 100, 0xffff} {
				add(fmt.Sprintf("frame %d IPv4 length %d", i+1, v), set16(ipLen, uint16(v)))
			}
			curUDP := int(binary.BigEndian.Uint16(base[udpLen:]))
			for _, v := range []int{0, 7, 8, 19, 20, 23, 24, curUDP - 1, curUDP + 1, curUDP + 100, 0xffff} {
				add(fmt.Sprintf("frame %d UDP length %d", i+1, v), set16(udpLen, uint16(v)))
				if v+ihl <= 0xffff {
					b := set16(udpLen, uint16(v))
					binary.BigEndian.PutUint16(b[ipLen:], uint16(v+ihl))
					add(fmt.Sprintf("frame %d UDP length %d, IPv4 length to match", i+1, v), b)
				}
			}
			for _, v := range []byte{0, 1, 4, 6, 15} {
				add(fmt.Sprintf("frame %d IHL %d", i+1, v), rbPatch(base, net, 0x40|v))
			}
			bth = net + ihl + 8
		case etherType == 0x86dd && rest >= 48 && base[net+6] == 17:
			payLen, udpLen := net+4, net+40+4
			cur := int(binary.BigEndian.Uint16(base[payLen:]))
			for _, v := range []int{0, 7, 8, 19, 20, cur - 1, cur + 1, cur + 100, 0xffff} {
				add(fmt.Sprintf("frame %d IPv6 payload length %d", i+1, v), set16(payLen, uint16(v)))
				b := set16(payLen, uint16(v))
				binary.BigEndian.PutUint16(b[udpLen:], uint16(v))
				add(fmt.Sprintf("frame %d IPv6 payload and UDP length %d", i+1, v), b)
			}
			bth = net + 48
		case etherType == 0x8915 && rest >= 40:
			payLen := net + 4
			cur := int(binary.BigEndian.Uint16(base[payLen:]))
			for _, v := range []int{0, 11, 12, 15, 16, 19, 20, cur - 1, cur + 1, cur + 100, 0xffff} {
				add(fmt.Sprintf("frame %d GRH payload length %d", i+1, v), set16(payLen, uint16(v)))
			}
			bth = net + 40
		default:
			continue
		}
		// Opcodes on the first RoCE frame, so that each opcode's
		// extended headers meet a payload of the wrong size.
		if sweep && bth+12 <= data+len(frame) {
			sweep = false
			for op := 0; op < 256; op += opStep {
				add(fmt.Sprintf("frame %d opcode 0x%02x", i+1, op), rbPatch(base, bth, byte(op)))
			}
		}
	}
	return out
}

// rbBase is a capture the corruption test mutates.
type rbBase struct {
	name string
	data []byte
}

// rbBases returns the hand-built captures, the first frames of the captures
// in testdata, and those of the reference captures when they are there.
func rbBases(t *testing.T) []rbBase {
	good := rbGoodFrames(t)
	bases := []rbBase{
		{"hand-built pcap", rbPcap(t, 0, good)},
		{"hand-built pcapng", rbPcapng(t, good)},
		{"hand-built pcap.gz", rbGzip(t, rbPcap(t, 0, good))},
		{"malformed packets pcap", rbPcap(t, 0, rbMalformedFrames(t))},
	}
	root := testref.RepoRoot(t)
	for _, name := range []string{"rc-read.pcap", "rocev1.pcap", "ipv6.pcap", "atomic.pcap", "ecn-cnp.pcap", "ud.pcap"} {
		if b := firstFrames(filepath.Join(root, "testdata", name), 12); b != nil {
			bases = append(bases, rbBase{name, b})
		}
	}
	shared := filepath.Join(root, "..", "shared", "captures")
	if _, err := os.Stat(shared); err != nil {
		t.Logf("reference captures not found at %s: they ship beside the repository, not in it; mutating the others only", shared)
		return bases
	}
	for _, name := range []string{"vectors/vectors.pcap", "vectors/ops.pcap", "real/ibdump-read.pcap",
		"real/nccl-uc-truncated.pcap", "real/mlx-rocev1-v2-mixed.pcap", "real/mlx5-dc.pcap", "real/mlx-send-bw.pcap"} {
		path := filepath.Join(shared, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reference capture: %v", err)
		}
		if len(b) > 4<<10 {
			b = firstFrames(path, 12)
		}
		bases = append(bases, rbBase{name, b})
	}
	return bases
}

// TestCorruption mutates real and hand-built captures thousands of times and
// runs decode, analyze and check on each variant (see rbPipeline for what is
// checked). The mutations are drawn from a fixed seed, so a failure names a
// variant that can be made again.
func TestCorruption(t *testing.T) {
	t.Parallel()
	// The hand-built captures of good packets get every deterministic
	// variant and every opcode; the others, whose structures repeat,
	// every third variant and a sample of the opcodes.
	flips, handScale, scale := 100, 1, 3
	if testing.Short() {
		flips, handScale, scale = 15, 8, 16
	}
	var mu sync.Mutex
	kinds := map[string]int{}
	t.Cleanup(func() {
		total := 0
		for _, n := range kinds {
			total += n
		}
		t.Logf("%d corrupted captures, each through decode, analyze and check: %v", total, kinds)
	})
	for i, base := range rbBases(t) {
		t.Run(base.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(0x5eed, uint64(i)))
			scale, opStep := scale, 8
			if strings.HasPrefix(base.name, "hand-built") {
				scale, opStep = handScale, 1
			}
			mutants := rbMutants(base.data, rng, flips, scale, opStep)
			path := filepath.Join(t.TempDir(), "mutant")
			for _, m := range mutants {
				if err := os.WriteFile(path, m.data, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := rbPipeline(path, false); err != nil {
					t.Fatalf("%s, %s: %v", base.name, m.desc, err)
				}
			}
			mu.Lock()
			for _, m := range mutants {
				kinds[rbKind(m.desc)]++
			}
			mu.Unlock()
			t.Logf("%d corrupted captures", len(mutants))
		})
	}
}

// rbAllocated runs the command lines and returns the bytes they allocated.
func rbAllocated(t *testing.T, args ...[]string) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, a := range args {
		rbMustRun(t, a...)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestAbsurdLengthsMemory checks that a length field alone never sizes an
// allocation: tiny files whose record or block claims 16 MiB or more cost
// no more to decode, analyze and check than a valid file of the same size.
// The margin, 4 MiB, is far below the 16 MiB such a buffer would take,
// and far above what a run allocates beyond the baseline. The test is not
// parallel, so that other tests' allocations do not count.
func TestAbsurdLengthsMemory(t *testing.T) {
	good := rbGoodFrames(t)[:3]
	pcap := rbPcap(t, 65535, good)
	ng := rbHandPcapng(good)
	unknown := slices.Concat(ng[:48], rbLE32(rbLE32(make([]byte, 64), 0, 0x0bad), 4, 17825792))
	cases := []struct {
		name string
		data []byte
	}{
		// 16 MiB is the largest record accepted, given this snap
		// length; 382 bytes of it are there.
		{"pcap record of 16 MiB", rbLE32(rbLE32(pcap, 16, 0xffffffff), 24+8, 16<<20)},
		{"pcap record of 2^31-1 bytes", rbLE32(pcap, 24+8, 0x7fffffff)},
		{"pcap record of 16 MiB, gzipped", rbGzip(t, rbLE32(rbLE32(pcap, 16, 0xffffffff), 24+8, 16<<20))},
		// 17825792 bytes is the largest block accepted.
		{"pcapng packet block of 17 MiB", rbLE32(ng, 48+4, 17825792)},
		{"pcapng section header of 17 MiB", rbLE32(ng, 4, 17825792)},
		{"pcapng interface block of 17 MiB", rbLE32(ng, 28+4, 17825792)},
		{"pcapng custom block of 17 MiB", unknown},
		{"pcapng packet block of 4 GiB", rbLE32(ng, 48+4, 0xfffffffc)},
	}
	const margin = 4 << 20
	dir := t.TempDir()
	lines := func(path string) [][]string {
		return [][]string{
			{"decode", "--format", "json", path},
			{"analyze", "--format", "json", path},
			{"check", "--format", "json", path},
		}
	}
	validPath := filepath.Join(dir, "valid.pcap")
	if err := os.WriteFile(validPath, pcap, 0o644); err != nil {
		t.Fatal(err)
	}
	rbAllocated(t, lines(validPath)...) // warm up: one-time initialisations
	baseline := rbAllocated(t, lines(validPath)...)
	t.Logf("a valid %d-byte capture: %d bytes allocated by decode, analyze and check", len(pcap), baseline)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "absurd")
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			got := rbAllocated(t, lines(path)...)
			t.Logf("%d-byte file: %d bytes allocated", len(c.data), got)
			if got > baseline+margin || got > 64<<20 {
				t.Errorf("%d-byte file: decode, analyze and check allocated %d bytes, %d for a valid file", len(c.data), got, baseline)
			}
		})
	}
}

// rbKind names the kind of a mutation from its description.
func rbKind(desc string) string {
	switch {
	case strings.HasPrefix(desc, "flip"):
		return "bit flips"
	case strings.HasPrefix(desc, "cut"):
		return "cuts"
	case strings.HasPrefix(desc, "record"), strings.HasPrefix(desc, "snap"), strings.HasPrefix(desc, "link"):
		return "pcap header and record fields"
	case strings.HasPrefix(desc, "block"):
		return "pcapng block fields"
	case strings.Contains(desc, "opcode"):
		return "opcodes"
	}
	return "IP, UDP and GRH lengths"
}

// TestCorruptRegression runs the inputs of testdata/corrupt, each a fault
// once mishandled or a kind of damage worth keeping in view, and checks
// what the commands print; every file there must have an entry here. It
// also puts each through rbPipeline.
func TestCorruptRegression(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(testref.RepoRoot(t), "testdata", "corrupt")
	const cover = "; the results cover the frames before it"
	tests := []struct {
		file   string
		args   []string // %[1]s stands for the file's path
		status int
		stderr string // with %[1]s for the path
		lines  int    // lines of stdout; -1: not counted
		stdout string // a line stdout must hold exactly once, if not empty
	}{
		// A cut file's warning once carried its "warning: " prefix
		// twice in the table and once inside the JSON warnings.
		{"cut-in-record.pcap", []string{"decode", "%[1]s"}, 2,
			"roce-inspect: %[1]s: offset 300 (frame 3): truncated: file ends 50 bytes into the 106-byte record" + cover + "\n", 2, ""},
		{"cut-in-record.pcap", []string{"analyze", "--color", "never", "%[1]s"}, 2,
			"roce-inspect: %[1]s: offset 300 (frame 3): truncated: file ends 50 bytes into the 106-byte record" + cover + "\n", -1,
			"warning: %[1]s: offset 300 (frame 3): truncated: file ends 50 bytes into the 106-byte record" + cover + "\n"},
		{"cut-in-record.pcap", []string{"analyze", "--format", "json", "%[1]s"}, 2,
			"roce-inspect: %[1]s: offset 300 (frame 3): truncated: file ends 50 bytes into the 106-byte record" + cover + "\n", -1,
			`    "%[1]s: offset 300 (frame 3): truncated: file ends 50 bytes into the 106-byte record` + cover + `"` + "\n"},
		{"cut-in-record.pcap", []string{"check", "%[1]s"}, 2,
			"roce-inspect: %[1]s: offset 300 (frame 3): truncated: file ends 50 bytes into the 106-byte record" + cover + "\n", -1, ""},
		{"cut-in-record.pcap", []string{"check", "--allow-truncated", "%[1]s"}, 0, "", -1, ""},
		// A whole BTH followed by two bytes was called a BTH shorter
		// than 12 bytes.
		{"bth-without-icrc.pcap", []string{"decode", "--format", "json", "%[1]s"}, 0,
			"1 of 2 RoCE packets malformed: no room for the ICRC after the BTH: 1\n", 2, ""},
		{"bth-without-icrc.pcap", []string{"analyze", "--format", "json", "%[1]s"}, 0, "", -1,
			`    "no room for the ICRC after the BTH": 1` + "\n"},
		// The report of one frame said "1 frames".
		{"record-length-2nd.pcap", []string{"analyze", "--format", "json", "%[1]s"}, 2,
			"roce-inspect: %[1]s: offset 162 (frame 2): record length 300000 exceeds the 65535-byte snap length and the 262144-byte limit (the report covers the 1 frame before it)\n",
			-1, `    "total": 1,` + "\n"},
		{"record-length-2nd.pcap", []string{"decode", "%[1]s"}, 2,
			"roce-inspect: %[1]s: offset 162 (frame 2): record length 300000 exceeds the 65535-byte snap length and the 262144-byte limit\n", 1, ""},
		{"pcapng-trailing-length.pcapng", []string{"decode", "%[1]s"}, 2,
			"roce-inspect: %[1]s: offset 204 (frame 2): enhanced packet block length 156 does not match its trailing copy 160\n", 1, ""},
		{"pcapng-block-beyond-end.pcapng", []string{"check", "%[1]s"}, 2,
			"roce-inspect: %[1]s: offset 360 (frame 3): truncated: file ends 124 bytes into the 1000-byte enhanced packet block" + cover + "\n", -1,
			"%[1]s: FAIL (2 frames, 2 RoCE)\n"},
		{"pcapng-block-beyond-end.pcapng", []string{"check", "--allow-truncated", "%[1]s"}, 0, "", -1,
			"%[1]s: PASS (2 frames, 2 RoCE)\n"},
		{"gzip-bad-crc.pcap.gz", []string{"decode", "%[1]s"}, 2,
			"roce-inspect: %[1]s: offset 406 (frame 4): corrupt gzip stream 0 bytes into the 16-byte record header: gzip: invalid checksum\n", 3, ""},
		{"malformed-packets.pcap", []string{"decode", "%[1]s"}, 0,
			"24 of 40 RoCE packets malformed: unknown opcode: 6, UDP length disagrees with the IP length: 5, " +
				"extended header cut short: 4, pad count larger than the payload: 3, BTH shorter than 12 bytes: 2, " +
				"GRH next header is not the InfiniBand transport: 1, IPv4 header length invalid: 1, " +
				"no room for the ICRC after the BTH: 1, transport headers cut by the snap length: 1\n", 40, ""},
	}
	listed := map[string]bool{}
	for _, tc := range tests {
		listed[tc.file] = true
		t.Run(tc.file+" "+tc.args[0], func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "%[1]s", path)
			}
			res := rbMustRun(t, args...)
			stderr := strings.ReplaceAll(tc.stderr, "%[1]s", path)
			if res.status != tc.status || res.stderr != stderr {
				t.Errorf("%q: status %d, stderr\n%q\nwant %d,\n%q", args, res.status, res.stderr, tc.status, stderr)
			}
			if n := strings.Count(res.stdout, "\n"); tc.lines >= 0 && n != tc.lines {
				t.Errorf("%q: %d lines, want %d", args, n, tc.lines)
			}
			if want := strings.ReplaceAll(tc.stdout, "%[1]s", path); want != "" {
				if n := strings.Count("\n"+res.stdout, "\n"+want); n != 1 {
					t.Errorf("%q: stdout holds %q %d times, want once:\n%s", args, want, n, res.stdout)
				}
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Run(e.Name()+" pipeline", func(t *testing.T) {
			if !listed[e.Name()] {
				t.Errorf("%s has no expectations in TestCorruptRegression", e.Name())
			}
			if err := rbPipeline(filepath.Join(dir, e.Name()), true); err != nil {
				t.Error(err)
			}
		})
	}
}
