package gen

import (
	"math/rand/v2"
	"net"
	"net/netip"

	"roce-inspect/layers"
)

// Times inside the generator are picoseconds since the start of the capture:
// a 1 KiB frame takes about 88 ns on a 100 Gb/s link, so nanoseconds would
// round away the pacing. They become nanoseconds since the epoch on output.
const (
	ps = 1
	ns = 1000 * ps
	us = 1000 * ns

	// baseTime is the first frame's time: 2024-06-01 00:00:00 UTC.
	baseTime = 1717200000 * 1_000_000_000

	// linkBitsPerNS is the line rate in bits per nanosecond (100 Gb/s).
	linkBitsPerNS = 100

	// wireOverhead is what a frame occupies on the wire besides the bytes
	// captured: FCS (4), preamble and start delimiter (8), inter-frame gap
	// (12).
	wireOverhead = 24

	// minFrame is the shortest Ethernet frame without its FCS; shorter
	// frames are padded, as NICs pad them.
	minFrame = 60
)

// Fixed values of the simulated fabric.
const (
	pkeyDefault = 0xffff
	ipTTL       = 64
	dscpRoCE    = 26 // the DSCP RoCE traffic commonly runs on
	dscpCNP     = 48 // the DSCP CNPs commonly run on
	ecnNotECT   = 0
	ecnECT0     = 2
	ecnCE       = 3
	nextHdrIBA  = 0x1b // GRH next header: IBA transport
	gsiQKey     = 0x80010000
	roceUDPPort = 4791
	portBase    = 0xc000 // NICs pick RoCEv2 source ports from 49152..65535
)

// wireTime is how long a frame of n captured bytes occupies a link.
func wireTime(n int) int64 {
	return int64(n+wireOverhead) * 8 * ns / linkBitsPerNS
}

// host is one end node: its addresses, the next IPv4 identification it
// uses and when its egress link is free again.
type host struct {
	n    int // host number, 1-based
	mac  net.HardwareAddr
	ip   net.IP     // IPv4 or IPv6 address, as the configuration asks
	addr netip.Addr // ip, or the GID for RoCEv1: what Stats reports
	ipID uint16
	link int64

	qpNext uint32 // the next QP number the host hands out
}

// newHost makes host number n (1-based): MAC 02:00:0a:00:00:n, IPv4
// 10.0.0.n, IPv6 fd00::n and, for RoCEv1, the link-local GID fe80::/64 with
// the MAC's modified EUI-64 as interface identifier.
func newHost(cfg *Config, n byte, rng *rand.Rand) *host {
	mac := net.HardwareAddr{0x02, 0x00, 0x0a, 0x00, 0x00, n}
	// QP numbers: a random start in a range of its own per host, so
	// requester and responder QPs never share a number.
	qp := 0x100 + uint32(n-1)*0x800 + rng.Uint32N(0x700)
	h := &host{n: int(n), mac: mac, ipID: uint16(rng.Uint32()), qpNext: qp}
	switch {
	case cfg.RoCEv1:
		var gid [16]byte
		gid[0], gid[1] = 0xfe, 0x80
		gid[8] = mac[0] ^ 0x02 // flip the universal/local bit (RFC 4291)
		gid[9], gid[10] = mac[1], mac[2]
		gid[11], gid[12] = 0xff, 0xfe
		gid[13], gid[14], gid[15] = mac[3], mac[4], mac[5]
		h.ip = net.IP(gid[:])
		h.addr = netip.AddrFrom16(gid)
	case cfg.IPv6:
		var a [16]byte
		a[0], a[1], a[15] = 0xfd, 0x00, n
		h.ip = net.IP(a[:])
		h.addr = netip.AddrFrom16(a)
	default:
		a := [4]byte{10, 0, 0, n}
		h.ip = net.IP(a[:])
		h.addr = netip.AddrFrom4(a)
	}
	return h
}

// pktKind says what role a packet plays, for the statistics.
type pktKind uint8

const (
	kindRequest pktKind = iota
	kindReadResp
	kindACK
	kindAtomicACK
	kindNAK
	kindRNR
	kindCNP
	kindUD
)

// pkt is one frame waiting to be written.
type pkt struct {
	t    int64  // capture time, ps
	seq  uint64 // scheduling order, breaks ties between equal times
	kind pktKind

	src, dst  *host
	sport     uint16
	flowLabel uint32
	ecn, dscp uint8

	bth       layers.BTH
	ext       layers.ExtHeaders
	reth      layers.RETH
	aeth      layers.AETH
	deth      layers.DETH
	imm       layers.ImmDt
	atomic    layers.AtomicETH
	atomicAck layers.AtomicAckETH
	cnp       layers.CNP

	payLen int    // transport payload bytes, pad excluded
	data   []byte // payload bytes; nil selects the engine's pattern

	srcQP     uint32
	retrans   bool
	recovers  bool // this resend recovers a packet missing from the capture
	lostIndex int  // index of that loss in Stats.Lost, -1 when not recorded
}

// frameRecord is what the generator meant to write in one frame, for the
// package's tests.
type frameRecord struct {
	Frame    int
	Time     int64
	Kind     pktKind
	Opcode   layers.Opcode
	DestQP   uint32
	PSN      uint32
	AckReq   bool
	Syndrome uint8 // valid when the frame has an AETH
	HasAETH  bool
	MSN      uint32
	ECN      uint8
	SrcPort  uint16
	BadICRC  bool
	Retrans  bool
	Len      int
}

type flowKey struct {
	src, dst *host
	qp       uint32
}

// engine schedules packets, writes them in time order and keeps the
// statistics.
type engine struct {
	cfg   Config
	rng   *rand.Rand
	sink  frameSink
	trace func(*frameRecord)
	ser   *serializer
	st    Stats
	flows map[flowKey]int

	pend []*pkt // binary heap ordered by (t, seq)
	free []*pkt
	seq  uint64
	now  int64 // nothing will be scheduled before this time

	badNext  int // index into cfg.BadICRC of the next listed bad frame
	frame    int
	hostsBuf []*host
	rec      frameRecord

	benchTemplates []*template

	singlePorts map[portKey]uint16
	usedPorts   map[portKey]map[uint16]bool
	connPorts   map[connKey]uint16

	// lossBefore counts losses on flows that have not written a frame yet.
	lossBefore map[flowKey]int
}

func newEngine(cfg Config, sink frameSink, trace func(*frameRecord)) *engine {
	// PCG with a fixed stream constant: the seed alone decides the output.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x526f4345_67656e31))
	e := &engine{
		cfg:   cfg,
		rng:   rng,
		sink:  sink,
		trace: trace,
		flows: make(map[flowKey]int),
		st:    Stats{Scenario: cfg.Scenario},
	}
	e.ser = newSerializer(&e.cfg, rng)
	return e
}

// host returns host number n (1-based), creating hosts as needed.
func (e *engine) host(n int) *host {
	for len(e.hostsBuf) < n {
		e.hostsBuf = append(e.hostsBuf, newHost(&e.cfg, byte(len(e.hostsBuf)+1), e.rng))
	}
	return e.hostsBuf[n-1]
}

// budgetLeft says whether a scenario sized by Config.Packets should start
// more work; with Packets 0 the scenario decides alone.
func (e *engine) budgetLeft() bool {
	return e.cfg.Packets == 0 || e.frame+len(e.pend) < e.cfg.Packets
}

// ecn returns the ECN codepoint of data packets and ACKs: ECT(0) when the
// configuration asks for it (or force is set) on RoCEv2, else Not-ECT.
func (e *engine) ecn(force bool) uint8 {
	if !e.cfg.RoCEv1 && (e.cfg.ECN || force) {
		return ecnECT0
	}
	return ecnNotECT
}

// sized reports whether the frame budget drives the scenario's length.
func (e *engine) sized() bool { return e.cfg.Packets > 0 }

// jitter returns a random duration in [0, limit).
func (e *engine) jitter(limit int64) int64 {
	if limit <= 0 {
		return 0
	}
	return e.rng.Int64N(limit)
}

// newPkt returns a cleared packet from the free list.
func (e *engine) newPkt() *pkt {
	if n := len(e.free); n > 0 {
		p := e.free[n-1]
		e.free = e.free[:n-1]
		*p = pkt{lostIndex: -1}
		return p
	}
	return &pkt{lostIndex: -1}
}

// schedule queues p for writing at time p.t.
func (e *engine) schedule(p *pkt) {
	if p.t < e.now {
		// Scenarios never schedule into the past; clamping keeps the
		// file in time order even if one did.
		p.t = e.now
	}
	e.seq++
	p.seq = e.seq
	e.pend = append(e.pend, p)
	e.up(len(e.pend) - 1)
}

// advance declares that nothing will be scheduled before t any more and
// writes every packet due by then.
func (e *engine) advance(t int64) error {
	if t > e.now {
		e.now = t
	}
	for len(e.pend) > 0 && e.pend[0].t <= e.now {
		if err := e.emit(e.pop()); err != nil {
			return err
		}
	}
	return nil
}

// finish writes whatever is still queued.
func (e *engine) finish() error {
	for len(e.pend) > 0 {
		if err := e.emit(e.pop()); err != nil {
			return err
		}
	}
	return nil
}

func (e *engine) less(i, j int) bool {
	a, b := e.pend[i], e.pend[j]
	if a.t != b.t {
		return a.t < b.t
	}
	return a.seq < b.seq
}

func (e *engine) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !e.less(i, parent) {
			return
		}
		e.pend[i], e.pend[parent] = e.pend[parent], e.pend[i]
		i = parent
	}
}

func (e *engine) pop() *pkt {
	h := e.pend
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = nil
	e.pend = h[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && e.less(l, m) {
			m = l
		}
		if r < last && e.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		e.pend[i], e.pend[m] = e.pend[m], e.pend[i]
		i = m
	}
	return top
}

// isBad says whether frame number n (1-based) gets a corrupted ICRC.
func (e *engine) isBad(n int) bool {
	if e.cfg.BadEvery > 0 && n%e.cfg.BadEvery == 0 {
		return true
	}
	list := e.cfg.BadICRC
	for e.badNext < len(list) && list[e.badNext] < n {
		e.badNext++
	}
	return e.badNext < len(list) && list[e.badNext] == n
}

// emit serializes p, writes it and accounts for it.
func (e *engine) emit(p *pkt) error {
	defer func() { e.free = append(e.free, p) }()
	frame, icrcOff, err := e.ser.build(p)
	if err != nil {
		return err
	}
	e.frame++
	n := e.frame
	v, err := layers.ComputeICRC(e.ser.netKind, frame[ethHeaderLen:icrcOff])
	if err != nil {
		return err
	}
	bad := e.isBad(n)
	if bad {
		v = ^v // every bit wrong: no chance of matching by accident
	}
	layers.PutICRC(frame[icrcOff:icrcOff+4], v)
	ts := baseTime + p.t/ns
	if err := e.sink.WriteFrame(ts, frame, len(frame)); err != nil {
		return err
	}
	e.account(p, n, ts, len(frame), bad)
	if e.trace != nil {
		e.rec = frameRecord{
			Frame: n, Time: ts, Kind: p.kind, Opcode: p.bth.Opcode,
			DestQP: p.bth.DestQP, PSN: p.bth.PSN, AckReq: p.bth.AckReq,
			HasAETH: p.ext&layers.HasAETH != 0, Syndrome: p.aeth.Syndrome,
			MSN: p.aeth.MSN, ECN: p.ecn, SrcPort: p.sport, BadICRC: bad,
			Retrans: p.retrans, Len: len(frame),
		}
		e.trace(&e.rec)
	}
	return nil
}

// account adds frame n, which carries p, to the statistics.
func (e *engine) account(p *pkt, n int, ts int64, length int, bad bool) {
	st := &e.st
	if st.Frames == 0 {
		st.FirstTimestamp = ts
	}
	st.Frames++
	st.Bytes += int64(length)
	st.LastTimestamp = ts
	if bad {
		st.BadICRCCount++
		if len(st.BadICRC) < MaxRecorded {
			st.BadICRC = append(st.BadICRC, n)
		}
	}
	f := e.flow(p)
	f.Frames++
	f.Bytes += int64(length)
	f.PayloadBytes += int64(p.payLen)
	if f.Frames == 1 {
		f.FirstPSN = p.bth.PSN
	}
	f.LastPSN = p.bth.PSN
	f.Opcodes[p.bth.Opcode]++
	if p.ecn == ecnCE {
		st.CEMarked++
		f.CEMarked++
	}
	if p.retrans {
		st.Retransmitted++
		f.Retransmitted++
	}
	if p.recovers {
		st.Unrecovered--
		if p.lostIndex >= 0 {
			st.Lost[p.lostIndex].Recovered = true
			st.Lost[p.lostIndex].RecoveredFrame = n
		}
	}
	switch p.kind {
	case kindRequest:
		st.Requests++
		f.Requests++
	case kindReadResp:
		st.ReadResponses++
		f.ReadResponses++
	case kindACK:
		st.ACKs++
		f.ACKs++
	case kindAtomicACK:
		st.AtomicACKs++
		f.AtomicACKs++
	case kindNAK:
		st.NAKs++
		f.NAKs++
	case kindRNR:
		st.RNRNAKs++
		f.RNRNAKs++
	case kindCNP:
		st.CNPs++
		f.CNPs++
	case kindUD:
		st.UDSends++
		f.UDSends++
	}
}

// flow returns the statistics entry of p's flow, creating it on first use.
func (e *engine) flow(p *pkt) *Flow {
	return &e.st.Flows[e.flowIndex(p)]
}

// flowIndex returns the index in Stats.Flows of p's flow, creating the
// entry on first use.
func (e *engine) flowIndex(p *pkt) int {
	k := flowKey{p.src, p.dst, p.bth.DestQP}
	i, ok := e.flows[k]
	if !ok {
		tr := "RC"
		if p.kind == kindUD {
			tr = "UD"
		}
		i = len(e.st.Flows)
		e.st.Flows = append(e.st.Flows, Flow{
			Src: p.src.addr, Dst: p.dst.addr, SrcPort: p.sport,
			DestQP: p.bth.DestQP, SrcQP: p.srcQP, Transport: tr,
			Opcodes: make(map[layers.Opcode]int),
		})
		e.flows[k] = i
	}
	return i
}

// recordLoss notes a request packet that the capture will not hold where
// it was sent, and returns its index in Stats.Lost (-1 when the list is
// full). It counts as unrecovered until a resend of it is written.
func (e *engine) recordLoss(src, dst *host, destQP, psn uint32) int {
	e.st.LostCount++
	e.st.Unrecovered++
	k := flowKey{src, dst, destQP}
	if i, ok := e.flows[k]; ok {
		e.st.Flows[i].Lost++
	} else {
		e.pendingFlowLoss(k)
	}
	if len(e.st.Lost) >= MaxRecorded {
		return -1
	}
	e.st.Lost = append(e.st.Lost, Loss{Src: src.addr, Dst: dst.addr, DestQP: destQP, PSN: psn})
	return len(e.st.Lost) - 1
}

// pendingFlowLoss handles a loss on a flow that has written no frame yet:
// the flow's entry is created when its first frame is written, so the
// count waits in lossBefore until then.
func (e *engine) pendingFlowLoss(k flowKey) {
	if e.lossBefore == nil {
		e.lossBefore = make(map[flowKey]int)
	}
	e.lossBefore[k]++
}

// finishStats returns the statistics, with losses on flows that never
// wrote a frame folded in.
func (e *engine) finishStats() Stats {
	for k, n := range e.lossBefore {
		if i, ok := e.flows[k]; ok {
			e.st.Flows[i].Lost += n
			delete(e.lossBefore, k)
		}
	}
	return e.st
}
