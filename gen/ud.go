package gen

import (
	"encoding/binary"

	"roce-inspect/layers"
)

// Q_Keys and the management QP.
const (
	gsiQP     = 1          // the General Services Interface QP
	udDataKey = 0x11111111 // the Q_Key perftest and many applications use
)

// Communication Management attribute IDs (IBTA 12.6) for the MADs sent to
// QP 1.
const (
	cmAttrREQ = 0x0010
	cmAttrREP = 0x0013
	cmAttrRTU = 0x0014
)

// madLen is the size of a MAD: every UD packet to QP 1 carries one.
const madLen = 256

// udMsg is one UD SEND.
type udMsg struct {
	dstQP  uint32
	qkey   uint32
	length int
	imm    bool
	data   []byte // nil: the pattern
	think  int64  // idle time before it
	at     int64  // when non-zero, the absolute earliest send time
}

// udActor is a UD QP sending datagrams from host src to host dst.
type udActor struct {
	e         *engine
	src, dst  *host
	srcQP     uint32
	psn       uint32
	sport     uint16
	flowLabel uint32
	ready     int64
	lastSend  int64

	work     func(u *udActor) (udMsg, bool)
	look     udMsg
	haveLook bool
	sent     int
}

func (e *engine) newUD(src, dst *host, srcQP, peerQP uint32, single bool, work func(u *udActor) (udMsg, bool)) *udActor {
	u := &udActor{
		e: e, src: src, dst: dst, srcQP: srcQP,
		psn:       e.rng.Uint32N(1 << 24),
		sport:     e.udpPort(src, dst, srcQP, peerQP, single),
		flowLabel: flowLabel(srcQP, peerQP),
		work:      work,
	}
	u.look, u.haveLook = work(u)
	return u
}

func (u *udActor) host() *host { return u.src }

func (u *udActor) last() int64 { return u.lastSend }

func (u *udActor) readyAt() (int64, bool) {
	if !u.haveLook {
		return 0, false
	}
	t := max(u.ready, u.lastSend+u.look.think, u.look.at)
	return t, true
}

func (u *udActor) step(t int64) error {
	e := u.e
	m := u.look
	u.look, u.haveLook = u.work(u)
	p := e.newPkt()
	p.t, p.kind = t, kindUD
	p.src, p.dst, p.sport, p.flowLabel = u.src, u.dst, u.sport, u.flowLabel
	p.dscp, p.ecn = dscpRoCE, e.ecn(false)
	op := opUDSendOnly
	p.ext = layers.HasDETH
	if m.imm {
		op = opUDSendOnlyImm
		p.ext |= layers.HasImmDt
		p.imm.Immediate = e.rng.Uint32()
	}
	p.bth = layers.BTH{Opcode: op, MigReq: true, PKey: pkeyDefault, DestQP: m.dstQP, PSN: u.psn}
	p.deth = layers.DETH{QKey: m.qkey, SrcQP: u.srcQP}
	p.payLen, p.data = m.length, m.data
	p.srcQP = u.srcQP
	u.psn = (u.psn + 1) & 0xffffff
	u.sent++
	size := frameLen(&e.cfg, p)
	u.src.link = t + wireTime(size) + e.jitter(sendJitter)
	u.lastSend = t
	u.ready = t
	e.schedule(p)
	return nil
}

// cmMAD returns a 256-byte Communication Management MAD with the given
// attribute and transaction ID; the attribute's fields are zero.
func cmMAD(attr uint16, tid uint64) []byte {
	b := make([]byte, madLen)
	b[0] = 1    // base version
	b[1] = 0x07 // management class: Communication Management
	b[2] = 2    // class version
	b[3] = 0x03 // method: Send
	binary.BigEndian.PutUint64(b[8:], tid)
	binary.BigEndian.PutUint16(b[16:], attr)
	return b
}
