package livecap

import (
	"bufio"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/bpf"
)

// ErrBadFilter is wrapped by every error about a BPF filter: one that does
// not parse, does not validate, or that the kernel refuses.
var ErrBadFilter = errors.New("bad BPF filter")

// Limits of classic BPF that the kernel enforces.
const (
	// MaxFilterLen is BPF_MAXINSNS, the most instructions a socket filter
	// may hold.
	MaxFilterLen = 4096

	// maxExtraPorts bounds the extra ports of RoCEFilter: each costs one
	// instruction in a chain whose jumps to the accept instruction must
	// stay within the 255 instructions a conditional jump can skip.
	maxExtraPorts = 200
)

// acceptLen is what the RoCE filter returns for a frame it admits: the
// number of bytes to keep. It is far above any frame a link delivers (a
// 9000-byte jumbo frame, or a 64 KiB GRO aggregate), so frames are never
// cut by the filter and the ICRC at their end survives.
const acceptLen = 262144

// Ethernet and IP constants the filter tests.
const (
	etherTypeVLAN   = 0x8100
	etherTypeQinQ   = 0x88a8
	etherTypeQinQ91 = 0x9100 // pre-standard stacked tag, which the decoder also follows
	etherTypeIPv4   = 0x0800
	etherTypeIPv6   = 0x86dd
	etherTypeRoCEv1 = 0x8915
	ipProtoUDP      = 17
	roceV2Port      = 4791
)

// RoCEFilter returns a classic BPF program that admits RoCE frames only:
//
//   - Ethertype 0x8915 (RoCEv1);
//   - IPv4 carrying UDP to port 4791 or one of extraPorts, the UDP header
//     found through the IHL so that IP options are handled, fragments with
//     a non-zero offset refused (they carry no UDP header);
//   - IPv6 whose next header is UDP to one of those ports (RoCEv2 carries no
//     IPv6 extension headers);
//
// each behind zero, one or two VLAN tags (TPID 0x8100, 0x88a8 or 0x9100)
// present in the packet data. On Linux the kernel usually moves the outer
// tag of a received frame into metadata before packet sockets see it; the
// data then starts with the inner Ethertype and matches as a frame with one
// tag fewer would, so the tag's presence need not be read
// (SKF_AD_VLAN_TAG_PRESENT). Keeping to packet data also keeps the program
// runnable in golang.org/x/net/bpf's VM, which implements no ancillary load
// but the length.
//
// A first fragment (offset 0, more-fragments set) holds the UDP header and
// is admitted, as tcpdump's "udp dst port" admits it; the dissector then
// declines it. The program is, in tcpdump -d notation, with X holding the
// offset of the layer-3 header:
//
//	      ldh  [12]                outer Ethertype
//	      jeq  #0x8100 tag1        (also #0x88a8, #0x9100)
//	      ldx  #14
//	      ja   l3
//	tag1: ldh  [16]
//	      jeq  #0x8100 tag2        (also #0x88a8, #0x9100)
//	      ldx  #18
//	      ja   l3
//	tag2: ldh  [20]
//	      ldx  #22
//	l3:   jeq  #0x8915 accept
//	      jeq  #0x0800 ipv4
//	      jeq  #0x86dd ipv6 else reject
//	ipv4: ldb  [x+9]               protocol
//	      jeq  #17 else reject
//	      ldh  [x+6]               flags and fragment offset
//	      jset #0x1fff reject
//	      ldb  [x+0]
//	      and  #0x0f               IHL, in 32-bit words
//	      jge  #5 else reject
//	      lsh  #2
//	      add  x
//	      tax                      X = offset of the UDP header
//	      ldh  [x+2]               destination port
//	      ja   ports
//	ipv6: ldb  [x+6]               next header
//	      jeq  #17 else reject
//	      ldh  [x+42]              destination port
//	ports: jeq #4791 accept        (one jeq per extra port)
//	reject: ret #0
//	accept: ret #262144
//
// A load beyond the end of the frame ends a classic BPF program with 0, so
// truncated frames are refused without explicit length checks.
func RoCEFilter(extraPorts ...uint16) ([]bpf.RawInstruction, error) {
	ports := []uint16{roceV2Port}
	for _, p := range extraPorts {
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	if len(ports)-1 > maxExtraPorts {
		return nil, fmt.Errorf("%w: %d extra ports; the RoCE filter takes at most %d", ErrBadFilter, len(ports)-1, maxExtraPorts)
	}

	var a assembler
	vlanTPIDs := []uint32{etherTypeVLAN, etherTypeQinQ, etherTypeQinQ91}
	jumpIfTag := func(target string) {
		for _, t := range vlanTPIDs {
			a.jumpIf(bpf.JumpEqual, t, target, "")
		}
	}

	a.emit(bpf.LoadAbsolute{Off: 12, Size: 2})
	jumpIfTag("tag1")
	a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: 14})
	a.jump("l3")

	a.label("tag1")
	a.emit(bpf.LoadAbsolute{Off: 16, Size: 2})
	jumpIfTag("tag2")
	a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: 18})
	a.jump("l3")

	a.label("tag2")
	a.emit(bpf.LoadAbsolute{Off: 20, Size: 2})
	a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: 22})

	a.label("l3")
	a.jumpIf(bpf.JumpEqual, etherTypeRoCEv1, "accept", "")
	a.jumpIf(bpf.JumpEqual, etherTypeIPv4, "ipv4", "")
	a.jumpIf(bpf.JumpEqual, etherTypeIPv6, "ipv6", "reject")

	a.label("ipv4")
	a.emit(bpf.LoadIndirect{Off: 9, Size: 1})
	a.jumpIf(bpf.JumpEqual, ipProtoUDP, "", "reject")
	a.emit(bpf.LoadIndirect{Off: 6, Size: 2})
	a.jumpIf(bpf.JumpBitsSet, 0x1fff, "reject", "")
	a.emit(bpf.LoadIndirect{Off: 0, Size: 1})
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x0f})
	a.jumpIf(bpf.JumpGreaterOrEqual, 5, "", "reject")
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 2})
	a.emit(bpf.ALUOpX{Op: bpf.ALUOpAdd})
	a.emit(bpf.TAX{})
	a.emit(bpf.LoadIndirect{Off: 2, Size: 2})
	a.jump("ports")

	a.label("ipv6")
	a.emit(bpf.LoadIndirect{Off: 6, Size: 1})
	a.jumpIf(bpf.JumpEqual, ipProtoUDP, "", "reject")
	a.emit(bpf.LoadIndirect{Off: 40 + 2, Size: 2})

	a.label("ports")
	for _, p := range ports {
		a.jumpIf(bpf.JumpEqual, uint32(p), "accept", "")
	}
	a.label("reject")
	a.emit(bpf.RetConstant{Val: 0})
	a.label("accept")
	a.emit(bpf.RetConstant{Val: acceptLen})
	return a.assemble()
}

// assembler builds a classic BPF program with symbolic forward jumps and
// resolves them to the 8-bit skips of the instruction set.
type assembler struct {
	ins    []bpf.Instruction
	labels map[string]int
	fixups []fixup
}

// fixup is a jump whose targets are resolved by assemble. An empty target
// means the next instruction.
type fixup struct {
	at             int
	always         bool
	ifTrue, ifElse string
}

func (a *assembler) emit(i bpf.Instruction) { a.ins = append(a.ins, i) }

func (a *assembler) label(name string) {
	if a.labels == nil {
		a.labels = make(map[string]int)
	}
	a.labels[name] = len(a.ins)
}

func (a *assembler) jumpIf(cond bpf.JumpTest, val uint32, ifTrue, ifElse string) {
	a.fixups = append(a.fixups, fixup{at: len(a.ins), ifTrue: ifTrue, ifElse: ifElse})
	a.emit(bpf.JumpIf{Cond: cond, Val: val})
}

func (a *assembler) jump(target string) {
	a.fixups = append(a.fixups, fixup{at: len(a.ins), always: true, ifTrue: target})
	a.emit(bpf.Jump{})
}

// skip returns how many instructions a jump at pc skips to reach target.
func (a *assembler) skip(pc int, target string) (int, error) {
	if target == "" {
		return 0, nil
	}
	to, ok := a.labels[target]
	if !ok {
		return 0, fmt.Errorf("%w: jump to undefined label %q", ErrBadFilter, target)
	}
	n := to - pc - 1
	if n < 0 {
		return 0, fmt.Errorf("%w: backward jump to %q", ErrBadFilter, target)
	}
	return n, nil
}

func (a *assembler) assemble() ([]bpf.RawInstruction, error) {
	for _, f := range a.fixups {
		t, err := a.skip(f.at, f.ifTrue)
		if err != nil {
			return nil, err
		}
		if f.always {
			a.ins[f.at] = bpf.Jump{Skip: uint32(t)}
			continue
		}
		e, err := a.skip(f.at, f.ifElse)
		if err != nil {
			return nil, err
		}
		if t > 255 || e > 255 {
			return nil, fmt.Errorf("%w: conditional jump of more than 255 instructions", ErrBadFilter)
		}
		j := a.ins[f.at].(bpf.JumpIf)
		j.SkipTrue, j.SkipFalse = uint8(t), uint8(e)
		a.ins[f.at] = j
	}
	raw, err := bpf.Assemble(a.ins)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFilter, err)
	}
	return raw, nil
}

// ParseTcpdumpDD reads a classic BPF program in the form `tcpdump -dd`
// prints, one instruction per line:
//
//	{ 0x28, 0, 0, 0x0000000c },
//
// The four fields are the opcode (16 bits), the true and false jump skips
// (8 bits each) and the constant k (32 bits), in any base strconv accepts
// with prefix (0x hex, decimal). Blank lines are skipped; anything else that
// is not an instruction is an error naming the line, as is a program that
// is empty, longer than MaxFilterLen, jumps past its end or does not end in
// a return. The kernel checks the rest when the filter is attached.
func ParseTcpdumpDD(text string) ([]bpf.RawInstruction, error) {
	var prog []bpf.RawInstruction
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		ins, err := parseDDLine(s)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrBadFilter, line, err)
		}
		if len(prog) == MaxFilterLen {
			return nil, fmt.Errorf("%w: more than %d instructions", ErrBadFilter, MaxFilterLen)
		}
		prog = append(prog, ins)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrBadFilter, line+1, err)
	}
	if len(prog) == 0 {
		return nil, fmt.Errorf("%w: no instructions (expected the output of tcpdump -dd)", ErrBadFilter)
	}
	if err := checkProgram(prog); err != nil {
		return nil, err
	}
	return prog, nil
}

// parseDDLine parses one `{ code, jt, jf, k },` line; the final comma is
// optional.
func parseDDLine(s string) (bpf.RawInstruction, error) {
	const want = "want `{ code, jt, jf, k },` as printed by tcpdump -dd"
	body, ok := strings.CutPrefix(s, "{")
	if ok {
		body, ok = strings.CutSuffix(strings.TrimSuffix(body, ","), "}")
	}
	if !ok {
		return bpf.RawInstruction{}, fmt.Errorf("%s, got %q", want, s)
	}
	fields := strings.Split(body, ",")
	if len(fields) != 4 {
		return bpf.RawInstruction{}, fmt.Errorf("%s, got %d fields in %q", want, len(fields), s)
	}
	names := [4]string{"code", "jt", "jf", "k"}
	bits := [4]int{16, 8, 8, 32}
	var v [4]uint64
	for i, f := range fields {
		f = strings.TrimSpace(f)
		n, err := strconv.ParseUint(f, 0, bits[i])
		if err != nil {
			return bpf.RawInstruction{}, fmt.Errorf("%s %q is not a %d-bit number", names[i], f, bits[i])
		}
		v[i] = n
	}
	return bpf.RawInstruction{Op: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])}, nil
}

// Classic BPF opcode fields used by checkProgram.
const (
	bpfClassMask = 0x07
	bpfClassJmp  = 0x05
	bpfClassRet  = 0x06
	bpfOpMask    = 0xf0
	bpfJA        = 0x00
)

// checkProgram refuses jumps past the end of prog and a last instruction
// that is not a return, the two faults the kernel reports only as EINVAL.
func checkProgram(prog []bpf.RawInstruction) error {
	for pc, ins := range prog {
		if ins.Op&bpfClassMask != bpfClassJmp {
			continue
		}
		left := uint64(len(prog) - pc - 1) // instructions after this one
		if ins.Op&bpfOpMask == bpfJA {
			if uint64(ins.K) >= left {
				return fmt.Errorf("%w: instruction %d jumps %d past the end of the program", ErrBadFilter, pc, ins.K)
			}
			continue
		}
		if uint64(ins.Jt) >= left || uint64(ins.Jf) >= left {
			return fmt.Errorf("%w: instruction %d jumps past the end of the program", ErrBadFilter, pc)
		}
	}
	if last := prog[len(prog)-1]; last.Op&bpfClassMask != bpfClassRet {
		return fmt.Errorf("%w: the last instruction (%#04x) is not a return", ErrBadFilter, last.Op)
	}
	return nil
}
