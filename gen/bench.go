package gen

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"

	"roce-inspect/layers"
)

// The bench scenario writes millions of frames, so it does not serialize
// each one: it serializes every distinct frame once (a template, through the
// same SerializeTo path as the other scenarios) and then, per frame, patches
// the fields that change (PSN, AckReq, MSN, IPv4 identification and
// checksum) and recomputes the ICRC.
const (
	benchNatural   = 128 // frames when Config.Packets is 0
	benchMsgPkts   = 64  // packets per WRITE message (64 KiB at 1 KiB)
	benchAckEvery  = 8   // AckReq on every 8th packet of a QP
	benchAckDelay  = 1 * us
	benchSendGap   = 200 * ns // small SENDs: pause after the ACK arrives
	benchSmallSize = 5        // small SENDs carry 0..4 bytes
)

// template is one pre-serialized frame.
type template struct {
	frame   []byte
	bth     int // offset of the BTH
	icrc    int // offset of the ICRC
	ipv4    bool
	src     *host
	kind    pktKind
	payLen  int
	proto   *pkt // the packet it was made from, for the flow statistics
	flow    int  // index in Stats.Flows, -1 until first written
	written int
}

// benchQP is one QP of the bench scenario and its responder.
type benchQP struct {
	ipsn  uint32
	seq   uint64
	msn   uint32
	pkt   int   // index of the next packet in its message
	ready int64 // earliest next data packet
	data  []*template
	ack   *template
}

// benchAck is an ACK waiting for its time.
type benchAck struct {
	t   int64
	q   *benchQP
	psn uint32
	msn uint32
}

// ackQueue is a FIFO of ACKs in a ring buffer, so that steady streaming
// does not allocate.
type ackQueue struct {
	buf     []benchAck
	head, n int
}

func (q *ackQueue) front() *benchAck { return &q.buf[q.head] }

func (q *ackQueue) pop() benchAck {
	a := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return a
}

func (q *ackQueue) push(a benchAck) {
	if q.n == len(q.buf) {
		grown := make([]benchAck, max(16, 2*len(q.buf)))
		for i := 0; i < q.n; i++ {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = a
	q.n++
}

// newTemplate serializes p once and keeps a copy of the frame.
func (e *engine) newTemplate(p *pkt) (*template, error) {
	frame, icrcOff, err := e.ser.build(p)
	if err != nil {
		return nil, err
	}
	tp := &template{
		frame: append([]byte(nil), frame...),
		bth:   icrcOff - (transportLen(p) - icrcLen),
		icrc:  icrcOff, ipv4: !e.cfg.RoCEv1 && !e.cfg.IPv6,
		src: p.src, kind: p.kind, payLen: p.payLen, proto: p, flow: -1,
	}
	e.benchTemplates = append(e.benchTemplates, tp)
	return tp, nil
}

func runBench(e *engine) error {
	total := e.cfg.Packets
	if total == 0 {
		total = benchNatural
	}
	small := e.cfg.Payload == 0
	a, b := e.host(1), e.host(2)
	qps := make([]*benchQP, e.cfg.QPs)
	for i := range qps {
		qa, qb := e.newQP(a), e.newQP(b)
		port := e.udpPort(a, b, qa, qb, false)
		q := &benchQP{ipsn: e.rng.Uint32N(1 << 24)}
		va := 0x7f0000000000 | uint64(e.rng.Uint32()&^0xfff)<<4
		rkey := e.rng.Uint32()
		mk := func(src, dst *host, kind pktKind, op layers.Opcode, destQP, srcQP uint32, payLen int) (*template, error) {
			p := &pkt{lostIndex: -1, kind: kind, src: src, dst: dst, sport: port,
				flowLabel: flowLabel(qa, qb), dscp: dscpRoCE, ecn: e.ecn(false), payLen: payLen, srcQP: srcQP}
			p.bth = layers.BTH{Opcode: op, MigReq: true, PKey: pkeyDefault, DestQP: destQP}
			switch op {
			case opWriteFirst, opWriteOnly:
				p.ext = layers.HasRETH
				p.reth = layers.RETH{VA: va, RKey: rkey, DMALength: uint32(benchMsgPkts * e.cfg.Payload)}
			case opAcknowledge:
				p.ext = layers.HasAETH
				p.aeth.Syndrome = synACK
			}
			return e.newTemplate(p)
		}
		var err error
		if small {
			for n := 0; n < benchSmallSize; n++ {
				t, err := mk(a, b, kindRequest, opSendOnly, qb, qa, n)
				if err != nil {
					return err
				}
				q.data = append(q.data, t)
			}
		} else {
			for _, op := range []layers.Opcode{opWriteFirst, opWriteMiddle, opWriteLast} {
				t, err := mk(a, b, kindRequest, op, qb, qa, e.cfg.Payload)
				if err != nil {
					return err
				}
				q.data = append(q.data, t)
			}
		}
		if q.ack, err = mk(b, a, kindACK, opAcknowledge, qa, qb, 0); err != nil {
			return err
		}
		qps[i] = q
	}

	var acks ackQueue
	var ackLink int64
	written := 0
	for written < total {
		// The data packet that would go next: the QP ready first.
		var q *benchQP
		for _, c := range qps {
			if q == nil || c.ready < q.ready {
				q = c
			}
		}
		tData := max(q.ready, a.link)
		if acks.n > 0 && (acks.front().t <= tData || written+acks.n >= total) {
			k := acks.pop()
			if err := e.benchFrame(k.q.ack, k.t, k.psn, false, k.msn, written+1); err != nil {
				return err
			}
			written++
			continue
		}
		var tp *template
		psn := (q.ipsn + uint32(q.seq)) & 0xffffff
		var ackReq bool
		if small {
			tp = q.data[q.seq%benchSmallSize]
			ackReq = true
		} else {
			switch q.pkt {
			case 0:
				tp = q.data[0]
			case benchMsgPkts - 1:
				tp = q.data[2]
			default:
				tp = q.data[1]
			}
			ackReq = q.seq%benchAckEvery == benchAckEvery-1 || q.pkt == benchMsgPkts-1
		}
		// An AckReq whose ACK would not fit the frame budget is not made:
		// the capture ends before it.
		if ackReq && written+acks.n+2 > total {
			ackReq = false
		}
		if err := e.benchFrame(tp, tData, psn, ackReq, 0, written+1); err != nil {
			return err
		}
		written++
		wt := wireTime(len(tp.frame))
		a.link = tData + wt + e.jitter(sendJitter)
		q.ready = tData
		endMsg := small || q.pkt == benchMsgPkts-1
		if endMsg {
			q.msn++
			q.pkt = 0
		} else {
			q.pkt++
		}
		if ackReq {
			at := max(tData+benchAckDelay+e.jitter(procJitter), ackLink)
			ackLink = at + wireTime(len(q.ack.frame))
			acks.push(benchAck{t: at, q: q, psn: psn, msn: q.msn & 0xffffff})
			if small {
				// Ping-pong: the next SEND waits for the ACK.
				q.ready = at + oneWay + benchSendGap
			}
		}
		q.seq++
	}
	e.benchFold()
	return nil
}

// benchFrame patches template tp for one frame and writes it as frame n.
func (e *engine) benchFrame(tp *template, t int64, psn uint32, ackReq bool, msn uint32, n int) error {
	f := tp.frame
	bth := f[tp.bth:]
	bth[8] = bth[8]&^0x80 | byte(boolInt(ackReq))<<7
	bth[9], bth[10], bth[11] = byte(psn>>16), byte(psn>>8), byte(psn)
	if tp.kind == kindACK {
		bth[13], bth[14], bth[15] = byte(msn>>16), byte(msn>>8), byte(msn)
	}
	if tp.ipv4 {
		ip := f[ethHeaderLen : ethHeaderLen+ipv4HeaderLen]
		binary.BigEndian.PutUint16(ip[4:], tp.src.ipID)
		tp.src.ipID++
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], gopacket.FoldChecksum(gopacket.ComputeChecksum(ip, 0)))
	}
	v, err := layers.ComputeICRC(e.ser.netKind, f[ethHeaderLen:tp.icrc])
	if err != nil {
		return err
	}
	bad := e.isBad(n)
	if bad {
		v = ^v
	}
	layers.PutICRC(f[tp.icrc:tp.icrc+icrcLen], v)
	ts := baseTime + t/ns
	if err := e.sink.WriteFrame(ts, f, len(f)); err != nil {
		return err
	}
	e.frame = n

	st := &e.st
	if st.Frames == 0 {
		st.FirstTimestamp = ts
	}
	st.Frames++
	st.Bytes += int64(len(f))
	st.LastTimestamp = ts
	if bad {
		st.BadICRCCount++
		if len(st.BadICRC) < MaxRecorded {
			st.BadICRC = append(st.BadICRC, n)
		}
	}
	if tp.flow < 0 {
		tp.proto.bth.PSN = psn
		tp.flow = e.flowIndex(tp.proto)
		e.st.Flows[tp.flow].FirstPSN = psn
	}
	fl := &st.Flows[tp.flow]
	fl.Frames++
	fl.Bytes += int64(len(f))
	fl.PayloadBytes += int64(tp.payLen)
	fl.LastPSN = psn
	tp.written++
	if tp.kind == kindACK {
		st.ACKs++
		fl.ACKs++
	} else {
		st.Requests++
		fl.Requests++
	}
	if e.trace != nil {
		e.rec = frameRecord{
			Frame:   n,
			Time:    ts,
			Kind:    tp.kind,
			Opcode:  layers.Opcode(bth[0]),
			DestQP:  uint32(bth[5])<<16 | uint32(bth[6])<<8 | uint32(bth[7]),
			PSN:     psn,
			AckReq:  ackReq,
			HasAETH: tp.kind == kindACK,
			MSN:     msn,
			SrcPort: tp.proto.sport,
			BadICRC: bad,
			Len:     len(f),
		}
		if tp.kind == kindACK {
			e.rec.Syndrome = synACK
		}
		e.trace(&e.rec)
	}
	return nil
}

// benchFold adds the per-template opcode counts to the flows.
func (e *engine) benchFold() {
	for _, tp := range e.benchTemplates {
		if tp.flow >= 0 {
			e.st.Flows[tp.flow].Opcodes[tp.proto.bth.Opcode] += tp.written
		}
	}
}
