package gen

import (
	"fmt"

	"roce-inspect/layers"
)

// Timing of the simulated fabric and NICs.
const (
	oneWay      = 600 * ns  // capture point to the far end
	procDelay   = 300 * ns  // responder turnaround, plus up to procJitter
	procJitter  = 200 * ns  //
	sendJitter  = 30 * ns   // extra gap after each frame a host sends
	cnpDelay    = 2 * us    // CE arrival to CNP, plus up to cnpJitter
	cnpJitter   = 2 * us    //
	cnpInterval = 50 * us   // at most one CNP per QP in this time
	rateRecover = 55 * us   // after this without a CNP the sender speeds up
	ackTimeout  = 1049 * us // local ACK timeout code 8: 4.096 us * 2^8

	// rnrTimerCode is the RNR NAK timer field the responder sends: code 6
	// means 0.08 ms (IBTA table 45).
	rnrTimerCode = 6
	rnrDelay     = 80 * us
)

// msgKind is the operation of an RC message.
type msgKind uint8

const (
	msgWrite msgKind = iota
	msgSend
	msgRead
	msgCompareSwap
	msgFetchAdd
)

// message is one work request a requester posts.
type message struct {
	kind   msgKind
	length int    // bytes to write, send or read
	imm    bool   // with immediate data (WRITE and SEND)
	se     bool   // solicited event on the last packet (SEND)
	rnr    bool   // the responder has no receive buffer the first time
	think  int64  // idle time before the first packet
	swap   uint64 // COMPARE_SWAP swap value or FETCH_ADD addend
	cmp    uint64 // COMPARE_SWAP compare value
}

// workload yields a requester's messages one by one; ok false ends them.
type workload func(c *rcConn) (m message, ok bool)

// lossKind says what becomes of a request packet on its first transmission.
type lossKind uint8

const (
	// lossNone: the packet reaches the capture and the responder.
	lossNone lossKind = iota
	// lossNet: the network drops it before the capture point; the
	// responder never sees it and NAKs the gap.
	lossNet
	// lossCapture: the responder gets it but the capture misses it (a
	// mirror or capture drop), so the file has a gap nobody resends.
	lossCapture
)

// desc is one request packet a requester has sent or is about to send.
type desc struct {
	seq    uint64 // PSN offset from the initial PSN, not wrapped
	op     layers.Opcode
	npsn   uint32 // PSNs consumed: the response packets of a READ, else 1
	payLen int
	ext    layers.ExtHeaders
	reth   layers.RETH
	imm    uint32
	atomic layers.AtomicETH
	ackReq bool
	se     bool
	msgEnd bool
	rnr    bool
	sent   bool

	// lost marks a packet missing from the capture that a resend will
	// bring back; lostIndex is its index in Stats.Lost.
	lost      bool
	lostIndex int
}

// rcConn simulates one RC connection: a requester QP on host req, its
// responder QP on host resp, and the packets both exchange.
type rcConn struct {
	e             *engine
	req, resp     *host
	reqQP, respQP uint32
	sport         uint16
	flowLabel     uint32
	forceECT      bool
	ipsn          uint32
	pmtu          int
	ackEvery      int

	work     workload
	look     message // the next message, fetched one ahead
	haveLook bool
	msgs     int // messages started
	va       uint64
	rkey     uint32

	ring        []desc // sent or queued packets not yet acknowledged
	next        int    // index in ring of the next packet to send
	nextSeq     uint64 // seq of the next new PSN
	sinceAckReq int
	ready       int64 // earliest next send (think time, rate limiting)
	lastSend    int64

	// A pending rewind: from rewindAt on, send again from rewindSeq; between
	// pauseFrom and rewindAt (an RNR wait) send nothing.
	rewind    bool
	rewindAt  int64
	pauseFrom int64
	rewindSeq uint64

	// loss and ce decide the fate of a request on its first transmission.
	loss func(c *rcConn, d *desc, t int64) lossKind
	ce   func(c *rcConn, d *desc, t int64) bool

	// Congestion control: a sender halves its rate per CNP, down to 1/8.
	rateDiv  int64
	cutAt    int64
	cutDue   bool
	lastCut  int64
	cnpLast  int64
	cnpAny   bool
	memory   map[uint64]uint64 // the responder's atomic targets
	atomicVA uint64

	// Responder state.
	ePSN    uint64 // expected seq
	msn     uint32
	nakSent bool
	rnrWait bool
}

// connOpts are the parameters of a new connection.
type connOpts struct {
	req, resp int // host numbers
	reqQP     uint32
	respQP    uint32
	port      uint16
	ipsn      uint32
	work      workload
	ackEvery  int
	forceECT  bool
}

func (e *engine) newConn(o connOpts) *rcConn {
	c := &rcConn{
		e: e, req: e.host(o.req), resp: e.host(o.resp),
		reqQP: o.reqQP, respQP: o.respQP, sport: o.port,
		flowLabel: flowLabel(o.reqQP, o.respQP),
		forceECT:  o.forceECT, ipsn: o.ipsn & 0xffffff,
		pmtu: e.cfg.Payload, ackEvery: max(o.ackEvery, 1),
		work:    o.work,
		va:      0x7f0000000000 | uint64(e.rng.Uint32()&^0xfff)<<4,
		rkey:    e.rng.Uint32(),
		rateDiv: 1,
	}
	c.atomicVA = c.va + 0x100000
	if c.work != nil {
		c.look, c.haveLook = c.work(c)
	}
	return c
}

func (c *rcConn) psn(seq uint64) uint32 { return (c.ipsn + uint32(seq)) & 0xffffff }

func (c *rcConn) host() *host { return c.req }

func (c *rcConn) last() int64 { return c.lastSend }

// readyAt returns when the requester can send its next packet; ok false
// means it is finished.
func (c *rcConn) readyAt() (int64, bool) {
	t := max(c.ready, c.req.link)
	var cand int64
	ok := false
	switch {
	case c.next < len(c.ring):
		cand, ok = t, true
	case c.haveLook:
		cand, ok = max(t, c.lastSend+c.look.think), true
	}
	if c.rewind {
		// The rewind happens at rewindAt even if the requester is idle
		// then; an RNR wait also silences it from pauseFrom on.
		if !ok || cand > c.rewindAt {
			cand = max(t, c.rewindAt)
		}
		if cand >= c.pauseFrom && cand < c.rewindAt {
			cand = c.rewindAt
		}
		return cand, true
	}
	if ok {
		return cand, true
	}
	if len(c.ring) > 0 {
		// Nothing new to send but packets unacknowledged: the last
		// packets were lost, and only the ACK timeout brings them back.
		c.rewind = true
		c.rewindAt = c.lastSend + ackTimeout
		c.pauseFrom = c.rewindAt
		c.rewindSeq = c.ring[0].seq
		return c.rewindAt, true
	}
	return 0, false
}

// step sends the requester's next packet at time t.
func (c *rcConn) step(t int64) error {
	e := c.e
	if c.rewind && t >= c.rewindAt {
		c.rewind = false
		i := c.indexOf(c.rewindSeq)
		if i < 0 {
			return fmt.Errorf("gen: QP %#x: resend from PSN offset %d, which is not queued", c.reqQP, c.rewindSeq)
		}
		c.next = i
	}
	if c.next == len(c.ring) {
		if !c.haveLook {
			return fmt.Errorf("gen: QP %#x stepped with nothing to send", c.reqQP)
		}
		c.startMessage()
	}
	if c.cutDue && t >= c.cutAt {
		c.cutDue = false
		c.rateDiv = min(c.rateDiv*2, 8)
		c.lastCut = c.cutAt
	} else if c.rateDiv > 1 && t-c.lastCut >= rateRecover {
		c.rateDiv /= 2
		c.lastCut = t
	}

	idx := c.next
	c.next++
	d := &c.ring[idx]
	p := e.newPkt()
	p.t, p.kind = t, kindRequest
	p.src, p.dst, p.sport, p.flowLabel = c.req, c.resp, c.sport, c.flowLabel
	p.dscp, p.ecn = dscpRoCE, e.ecn(c.forceECT)
	p.bth = layers.BTH{Opcode: d.op, SE: d.se, MigReq: true, PKey: pkeyDefault,
		DestQP: c.respQP, AckReq: d.ackReq, PSN: c.psn(d.seq)}
	p.ext, p.reth, p.atomic, p.payLen = d.ext, d.reth, d.atomic, d.payLen
	p.imm.Immediate = d.imm
	p.srcQP = c.reqQP
	p.retrans = d.sent
	if d.lost {
		p.recovers, p.lostIndex = true, d.lostIndex
		d.lost = false
	}
	size := frameLen(&e.cfg, p)
	c.req.link = t + wireTime(size) + e.jitter(sendJitter)
	c.lastSend = t
	c.ready = t + (c.rateDiv-1)*wireTime(size)

	fate := lossNone
	if !d.sent && c.loss != nil {
		fate = c.loss(c, d, t)
	}
	if !d.sent && c.ce != nil && c.ce(c, d, t) && p.ecn != ecnNotECT {
		p.ecn = ecnCE
	}
	d.sent = true
	ce := p.ecn == ecnCE
	switch fate {
	case lossNone:
		e.schedule(p)
	case lossNet:
		d.lost = true
		d.lostIndex = e.recordLoss(c.req, c.resp, c.respQP, p.bth.PSN)
		e.free = append(e.free, p)
	case lossCapture:
		e.recordLoss(c.req, c.resp, c.respQP, p.bth.PSN)
		e.free = append(e.free, p)
	}
	if fate != lossNet {
		c.receive(idx, t+oneWay, ce)
	}
	return nil
}

// indexOf returns the ring index of the packet with the given seq, or -1.
func (c *rcConn) indexOf(seq uint64) int {
	for i := range c.ring {
		if c.ring[i].seq == seq {
			return i
		}
	}
	return -1
}

// startMessage queues the packets of the next message.
func (c *rcConn) startMessage() {
	m := c.look
	c.msgs++
	c.look, c.haveLook = c.work(c)
	// Ask for an ACK before going idle or at the end, so that nothing
	// stays unacknowledged across a pause.
	burstEnd := !c.haveLook || c.look.think > 0
	n := max(1, (m.length+c.pmtu-1)/c.pmtu)
	switch m.kind {
	case msgRead:
		d := desc{op: opReadRequest, npsn: uint32(n), ext: layers.HasRETH, ackReq: true, msgEnd: true,
			reth: layers.RETH{VA: c.va, RKey: c.rkey, DMALength: uint32(m.length)}}
		c.va += uint64(m.length+63) &^ 63
		c.push(d)
		return
	case msgCompareSwap, msgFetchAdd:
		op := opFetchAdd
		if m.kind == msgCompareSwap {
			op = opCompareSwap
		}
		d := desc{op: op, npsn: 1, ext: layers.HasAtomicETH, ackReq: true, msgEnd: true,
			atomic: layers.AtomicETH{VA: c.atomicVA, RKey: c.rkey, SwapAdd: m.swap, Compare: m.cmp}}
		c.push(d)
		return
	}
	for i := 0; i < n; i++ {
		first, lastPkt := i == 0, i == n-1
		d := desc{npsn: 1, payLen: min(c.pmtu, m.length-i*c.pmtu), msgEnd: lastPkt, rnr: first && m.rnr}
		switch {
		case m.kind == msgWrite && n == 1 && m.imm:
			d.op, d.ext = opWriteOnlyImm, layers.HasRETH|layers.HasImmDt
		case m.kind == msgWrite && n == 1:
			d.op, d.ext = opWriteOnly, layers.HasRETH
		case m.kind == msgWrite && first:
			d.op, d.ext = opWriteFirst, layers.HasRETH
		case m.kind == msgWrite && lastPkt && m.imm:
			d.op, d.ext = opWriteLastImm, layers.HasImmDt
		case m.kind == msgWrite && lastPkt:
			d.op = opWriteLast
		case m.kind == msgWrite:
			d.op = opWriteMiddle
		case n == 1 && m.imm:
			d.op, d.ext = opSendOnlyImm, layers.HasImmDt
		case n == 1:
			d.op = opSendOnly
		case first:
			d.op = opSendFirst
		case lastPkt && m.imm:
			d.op, d.ext = opSendLastImm, layers.HasImmDt
		case lastPkt:
			d.op = opSendLast
		default:
			d.op = opSendMiddle
		}
		if d.ext&layers.HasRETH != 0 {
			d.reth = layers.RETH{VA: c.va, RKey: c.rkey, DMALength: uint32(m.length)}
		}
		if d.ext&layers.HasImmDt != 0 {
			d.imm = c.e.rng.Uint32()
		}
		d.se = lastPkt && m.se
		d.ackReq = c.sinceAckReq+1 >= c.ackEvery || (lastPkt && burstEnd)
		c.push(d)
	}
	if m.kind == msgWrite {
		c.va += uint64(m.length+63) &^ 63
	}
}

// push appends a new packet to the ring, giving it the next PSNs.
func (c *rcConn) push(d desc) {
	d.seq = c.nextSeq
	d.lostIndex = -1
	c.nextSeq += uint64(d.npsn)
	if d.ackReq {
		c.sinceAckReq = 0
	} else {
		c.sinceAckReq++
	}
	c.ring = append(c.ring, d)
}

// ack drops every packet up to and including seq from the ring: the
// requester will never resend them.
func (c *rcConn) ack(seq uint64) {
	k := 0
	for k < len(c.ring) && c.ring[k].seq <= seq {
		k++
	}
	if k == 0 {
		return
	}
	n := copy(c.ring, c.ring[k:])
	c.ring = c.ring[:n]
	c.next -= k
	if c.next < 0 {
		c.next = 0
	}
}

// respond reserves the responder's link for a frame of size bytes, no
// earlier than at, and returns its time.
func (c *rcConn) respond(at int64, size int) int64 {
	t := max(at, c.resp.link)
	c.resp.link = t + wireTime(size) + c.e.jitter(sendJitter)
	return t
}

// respPkt returns a packet from the responder to the requester's QP.
func (c *rcConn) respPkt(kind pktKind, op layers.Opcode, psn uint32) *pkt {
	p := c.e.newPkt()
	p.kind = kind
	p.src, p.dst, p.sport, p.flowLabel = c.resp, c.req, c.sport, c.flowLabel
	p.dscp, p.ecn = dscpRoCE, c.e.ecn(c.forceECT)
	p.bth = layers.BTH{Opcode: op, MigReq: true, PKey: pkeyDefault, DestQP: c.reqQP, PSN: psn}
	p.srcQP = c.respQP
	return p
}

// sendAETH schedules an ACK, NAK or RNR NAK arriving no earlier than at,
// and returns its time.
func (c *rcConn) sendAETH(kind pktKind, at int64, psn uint32, syndrome uint8) int64 {
	p := c.respPkt(kind, opAcknowledge, psn)
	p.ext = layers.HasAETH
	p.aeth = layers.AETH{Syndrome: syndrome, MSN: c.msn & 0xffffff}
	p.t = c.respond(at+procDelay+c.e.jitter(procJitter), frameLen(&c.e.cfg, p))
	c.e.schedule(p)
	return p.t
}

// receive is the responder's handling of the packet at ring index idx,
// arriving at time ta; ce says it carries a CE mark.
func (c *rcConn) receive(idx int, ta int64, ce bool) {
	if ce {
		c.congestion(ta)
	}
	d := c.ring[idx]
	switch {
	case d.seq == c.ePSN:
		if d.rnr {
			// No receive buffer: NAK the packet and drop everything
			// until the requester resends it after the timer.
			c.ring[idx].rnr = false
			tn := c.sendAETH(kindRNR, ta, c.psn(d.seq), synRNRNAK|rnrTimerCode)
			c.rnrWait = true
			c.rewind = true
			c.pauseFrom = tn + oneWay
			c.rewindAt = c.pauseFrom + rnrDelay
			c.rewindSeq = d.seq
			return
		}
		c.ePSN += uint64(d.npsn)
		c.nakSent, c.rnrWait = false, false
		if d.msgEnd {
			c.msn++
		}
		switch d.op {
		case opReadRequest:
			c.readResponse(d, ta)
			c.ack(d.seq)
		case opCompareSwap, opFetchAdd:
			c.atomicResponse(d, ta)
			c.ack(d.seq)
		default:
			if d.ackReq {
				c.sendAETH(kindACK, ta, c.psn(d.seq), synACK)
				c.ack(d.seq)
			}
		}
	case d.seq > c.ePSN:
		if c.nakSent || c.rnrWait {
			return // silently dropped until the expected PSN comes
		}
		c.nakSent = true
		tn := c.sendAETH(kindNAK, ta, c.psn(c.ePSN), synNAKPSNSeq)
		c.rewind = true
		c.rewindAt = tn + oneWay
		c.pauseFrom = c.rewindAt
		c.rewindSeq = c.ePSN
	default:
		// A duplicate: acknowledge again what has been received.
		if d.ackReq {
			c.sendAETH(kindACK, ta, c.psn(c.ePSN-1), synACK)
			c.ack(c.ePSN - 1)
		}
	}
}

// readResponse schedules the READ RESPONSE packets for request d.
func (c *rcConn) readResponse(d desc, ta int64) {
	n := int(d.npsn)
	length := int(d.reth.DMALength)
	at := ta + procDelay + c.e.jitter(procJitter)
	for i := 0; i < n; i++ {
		var op layers.Opcode
		switch {
		case n == 1:
			op = opReadRespOnly
		case i == 0:
			op = opReadRespFirst
		case i == n-1:
			op = opReadRespLast
		default:
			op = opReadRespMiddle
		}
		p := c.respPkt(kindReadResp, op, c.psn(d.seq+uint64(i)))
		p.payLen = min(c.pmtu, length-i*c.pmtu)
		if op != opReadRespMiddle {
			p.ext = layers.HasAETH
			p.aeth = layers.AETH{Syndrome: synACK, MSN: c.msn & 0xffffff}
		}
		p.t = c.respond(at, frameLen(&c.e.cfg, p))
		c.e.schedule(p)
	}
}

// atomicResponse applies atomic request d to the responder's memory and
// schedules the ATOMIC ACKNOWLEDGE with the original value.
func (c *rcConn) atomicResponse(d desc, ta int64) {
	if c.memory == nil {
		c.memory = map[uint64]uint64{}
	}
	va := d.atomic.VA
	orig, ok := c.memory[va]
	if !ok {
		orig = c.e.rng.Uint64() >> 16
	}
	switch d.op {
	case opCompareSwap:
		if orig == d.atomic.Compare {
			c.memory[va] = d.atomic.SwapAdd
		} else {
			c.memory[va] = orig
		}
	default:
		c.memory[va] = orig + d.atomic.SwapAdd
	}
	p := c.respPkt(kindAtomicACK, opAtomicAcknowledge, c.psn(d.seq))
	p.ext = layers.HasAETH | layers.HasAtomicAckETH
	p.aeth = layers.AETH{Syndrome: synACK, MSN: c.msn & 0xffffff}
	p.atomicAck.OrigRemoteData = orig
	p.t = c.respond(ta+procDelay+c.e.jitter(procJitter), frameLen(&c.e.cfg, p))
	c.e.schedule(p)
}

// congestion is the responder NIC's reaction to a CE-marked packet arriving
// at ta: a CNP to the requester's QP a few microseconds later, at most one
// per cnpInterval.
func (c *rcConn) congestion(ta int64) {
	at := ta + cnpDelay + c.e.jitter(cnpJitter)
	if c.cnpAny && at-c.cnpLast < cnpInterval {
		return
	}
	p := c.e.newPkt()
	p.kind = kindCNP
	p.src, p.dst, p.sport, p.flowLabel = c.resp, c.req, c.sport, c.flowLabel
	p.dscp, p.ecn = dscpCNP, ecnNotECT
	p.bth = layers.BTH{Opcode: opCNP, BECN: true, PKey: pkeyDefault, DestQP: c.reqQP}
	p.ext = layers.HasCNP
	p.srcQP = c.respQP
	p.t = c.respond(at, frameLen(&c.e.cfg, p))
	c.e.schedule(p)
	c.cnpAny, c.cnpLast = true, p.t
	c.cutDue, c.cutAt = true, p.t+oneWay
}

// flowLabel derives a 20-bit IPv6 flow label from the two QP numbers of a
// connection, the same in both directions.
func flowLabel(a, b uint32) uint32 {
	v := uint64(a) * uint64(b)
	v ^= v >> 23
	v *= 0x9e3779b97f4a7c15
	return uint32(v>>40) & 0xfffff
}
