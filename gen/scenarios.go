package gen

// scenario is one entry of the scenario table.
type scenario struct {
	info       ScenarioInfo
	defaultQPs int
	minPayload int  // smallest Config.Payload the scenario works with
	needsV2    bool // ECN and CNPs exist only in RoCEv2
	run        func(e *engine) error
}

// scenarioTable lists the scenarios in the order Scenarios reports them.
var scenarioTable = []scenario{
	{
		info: ScenarioInfo{
			Name:        "rc-write",
			Description: "RC RDMA WRITE messages (FIRST/MIDDLE/LAST, ONLY, with immediate) on several QPs, coalesced ACKs",
			Expected:    "no PSN gaps, no NAKs, no retransmissions; one flow per QP and direction; every ICRC good",
		},
		defaultQPs: 4, minPayload: 64, run: runRCWrite,
	},
	{
		info: ScenarioInfo{
			Name:        "rc-send",
			Description: "RC SEND FIRST/MIDDLE/LAST/ONLY and SEND with immediate, coalesced ACKs",
			Expected:    "no PSN gaps, no NAKs, no retransmissions; every ICRC good",
		},
		defaultQPs: 2, minPayload: 64, run: runRCSend,
	},
	{
		info: ScenarioInfo{
			Name:        "rc-read",
			Description: "RC RDMA READ requests answered by READ RESPONSE FIRST/MIDDLE/LAST/ONLY, each followed by WRITEs",
			Expected:    "request PSNs jump by the READ's response count; responses fill exactly those PSNs; no gaps, no NAKs",
		},
		defaultQPs: 2, minPayload: 64, run: runRCRead,
	},
	{
		info: ScenarioInfo{
			Name:        "loss-gbn",
			Description: "RC WRITEs losing packets before the capture point; PSN sequence error NAKs and go-back-N resends",
			Expected:    "PSN gaps that a NAK (syndrome 0x60) names and the requester fills by resending from the lost PSN; all losses recovered",
		},
		defaultQPs: 2, minPayload: 64, run: runLossGBN,
	},
	{
		info: ScenarioInfo{
			Name:        "loss-unrecovered",
			Description: "RC WRITEs with packets missing from the capture and never resent (a capture or mirror drop)",
			Expected:    "PSN gaps with no NAK and no retransmission; every loss unrecovered",
		},
		defaultQPs: 2, minPayload: 64, run: runLossUnrecovered,
	},
	{
		info: ScenarioInfo{
			Name:        "rnr",
			Description: "RC SENDs meeting an empty receive queue: RNR NAK (syndrome 0x20|timer), resend after the timer",
			Expected:    "RNR NAKs with timer code 6 (0.08 ms), each followed about 80 us later by a resend of the NAKed PSN",
		},
		defaultQPs: 1, minPayload: 64, run: runRNR,
	},
	{
		info: ScenarioInfo{
			Name:        "wrap",
			Description: "RC WRITEs and a READ whose PSNs cross 0xFFFFFF to 0",
			Expected:    "PSNs wrap from 16777215 to 0 with no gap reported; no NAKs",
		},
		defaultQPs: 2, minPayload: 64, run: runWrap,
	},
	{
		info: ScenarioInfo{
			Name:        "ecn-cnp",
			Description: "RC WRITEs marked ECT(0), some CE-marked by a switch; the receiver returns CNPs (opcode 0x81), at most one per 50 us per QP",
			Expected:    "CE marks during congestion episodes, CNPs to the senders' QPs a few us after the first CE and at least 50 us apart; no losses",
		},
		defaultQPs: 2, minPayload: 64, needsV2: true, run: runECN,
	},
	{
		info: ScenarioInfo{
			Name:        "ud",
			Description: "UD SEND_ONLY and SEND_ONLY_WITH_IMMEDIATE: CM MADs to QP 1 (Q_Key 0x80010000) and datagrams between UD QPs",
			Expected:    "UD flows with DETH source QPs, no ACKs, PSNs counting per source QP; every ICRC good",
		},
		defaultQPs: 2, minPayload: 256, run: runUD,
	},
	{
		info: ScenarioInfo{
			Name:        "atomic",
			Description: "RC COMPARE_SWAP and FETCH_ADD requests answered by ATOMIC ACKNOWLEDGE",
			Expected:    "one ATOMIC ACKNOWLEDGE per atomic request with the same PSN; no gaps, no NAKs",
		},
		defaultQPs: 1, minPayload: 64, run: runAtomic,
	},
	{
		info: ScenarioInfo{
			Name:        "bad-icrc",
			Description: "the rc-write traffic with every 10th frame's ICRC corrupted (or the frames Config.BadICRC lists)",
			Expected:    "ICRC bad on exactly the corrupted frames, good on all others",
		},
		defaultQPs: 4, minPayload: 64, run: runRCWrite,
	},
	{
		info: ScenarioInfo{
			Name:        "mixed",
			Description: "the demo: RC write/send/read QPs, a lossy QP with NAK and go-back-N, an RNR NAK, CE marks and CNPs, UD, and a host pair sharing one UDP source port",
			Expected:    "something in every part of the analysis: gaps and resends, a NAK, an RNR NAK, CE and CNPs, UD flows, low source-port entropy on 10.0.0.3-10.0.0.4",
		},
		defaultQPs: 3, minPayload: 256, run: runMixed,
	},
	{
		info: ScenarioInfo{
			Name:        "bench",
			Description: "streaming RC WRITEs (or, with payload 0, small SEND_ONLYs and ACKs) for large files; packets sets the frame count",
			Expected:    "a steady stream: no gaps, no NAKs; ACKs coalesced per 8 packets (every SEND with payload 0)",
		},
		defaultQPs: 1, run: runBench,
	},
}

// counted returns a workload of n messages made by gen, or, when the frame
// budget drives the size, of messages as long as the budget lasts.
func counted(e *engine, n int, gen func(i int) message) workload {
	i := 0
	return func(*rcConn) (message, bool) {
		if e.sized() {
			if !e.budgetLeft() {
				return message{}, false
			}
		} else if i >= n {
			return message{}, false
		}
		m := gen(i)
		i++
		return m, true
	}
}

// connect makes an RC connection from a new QP on host a to a new QP on
// host b, with a random initial PSN.
func (e *engine) connect(a, b int, single bool, work workload) *rcConn {
	ha, hb := e.host(a), e.host(b)
	qa, qb := e.newQP(ha), e.newQP(hb)
	return e.newConn(connOpts{
		req: a, resp: b, reqQP: qa, respQP: qb,
		port:     e.udpPort(ha, hb, qa, qb, single),
		ipsn:     e.rng.Uint32N(1 << 24),
		work:     work,
		ackEvery: 4,
	})
}

// Message sizes relative to the path MTU.

// smallLen is a length that fits one packet, at least 8 bytes.
func (e *engine) smallLen() int { return 8 + e.rng.IntN(e.cfg.Payload-7) }

// pktsLen is a length of exactly k packets, the last one partly filled.
func (e *engine) pktsLen(k int) int {
	return (k-1)*e.cfg.Payload + 1 + e.rng.IntN(e.cfg.Payload)
}

// between returns a random value in [lo, hi].
func (e *engine) between(lo, hi int64) int64 { return lo + e.rng.Int64N(hi-lo+1) }

// actors converts connections to the scheduler's interface.
func actors(cs []*rcConn) []actor {
	out := make([]actor, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// writeMsg is the message mix of rc-write.
func (e *engine) writeMsg(i int) message {
	m := message{kind: msgWrite}
	switch r := e.rng.IntN(10); {
	case r < 3:
		m.length = e.smallLen()
	case r == 3:
		m.length = e.cfg.Payload
	case r < 9:
		m.length = e.pktsLen(2 + e.rng.IntN(5))
	default:
		m.length = e.pktsLen(1 + e.rng.IntN(3))
		m.imm = true
	}
	if i > 0 && i%4 == 0 {
		m.think = e.between(1*us, 3*us)
	}
	return m
}

func runRCWrite(e *engine) error {
	cs := make([]*rcConn, e.cfg.QPs)
	for i := range cs {
		cs[i] = e.connect(1, 2, false, counted(e, 6, e.writeMsg))
	}
	return e.run(actors(cs)...)
}

// sendMsg is the message mix of rc-send.
func (e *engine) sendMsg(i int) message {
	m := message{kind: msgSend}
	switch r := e.rng.IntN(10); {
	case r < 3:
		m.length = e.smallLen()
	case r < 5:
		m.length = e.smallLen()
		m.imm, m.se = true, true
	case r < 9:
		m.length = e.pktsLen(2 + e.rng.IntN(3))
	default:
		m.length = e.pktsLen(2 + e.rng.IntN(2))
		m.imm, m.se = true, true
	}
	if i > 0 && i%5 == 0 {
		m.think = e.between(1*us, 3*us)
	}
	return m
}

func runRCSend(e *engine) error {
	cs := make([]*rcConn, e.cfg.QPs)
	for i := range cs {
		cs[i] = e.connect(1, 2, false, counted(e, 10, e.sendMsg))
	}
	return e.run(actors(cs)...)
}

// readRounds yields READs, each followed by one or two WRITEs; every third
// READ fits one packet (READ RESPONSE ONLY).
func (e *engine) readRounds(rounds int, think func() int64) workload {
	var queue []message
	round := 0
	return func(*rcConn) (message, bool) {
		if len(queue) == 0 {
			if e.sized() && !e.budgetLeft() || !e.sized() && round >= rounds {
				return message{}, false
			}
			rd := message{kind: msgRead, length: e.pktsLen(4 + e.rng.IntN(7)), think: think()}
			if round%3 == 2 {
				rd.length = e.smallLen()
			}
			queue = append(queue, rd)
			for k := 1 + e.rng.IntN(2); k > 0; k-- {
				queue = append(queue, message{kind: msgWrite, length: e.pktsLen(1 + e.rng.IntN(2))})
			}
			round++
		}
		m := queue[0]
		queue = queue[1:]
		return m, true
	}
}

func runRCRead(e *engine) error {
	cs := make([]*rcConn, e.cfg.QPs)
	for i := range cs {
		cs[i] = e.connect(1, 2, false, e.readRounds(4, func() int64 { return e.between(500*ns, 2*us) }))
	}
	return e.run(actors(cs)...)
}

// lossPlan drops packets at planned PSN offsets on their first
// transmission: the offsets in plan, then, when the budget drives the
// size, one every 40 to 60 packets.
func (e *engine) lossPlan(kind lossKind, plan []uint64) func(*rcConn, *desc, int64) lossKind {
	next := 0
	var after uint64
	if n := len(plan); n > 0 {
		after = plan[n-1]
	}
	return func(c *rcConn, d *desc, _ int64) lossKind {
		for next < len(plan) && plan[next] < d.seq {
			next++
		}
		if next < len(plan) {
			if plan[next] == d.seq {
				next++
				return kind
			}
			return lossNone
		}
		if e.sized() && d.seq >= after+40 {
			after = d.seq + uint64(e.rng.IntN(20))
			if d.seq == after {
				return kind
			}
		}
		return lossNone
	}
}

// fourPacketWrites is the workload of the loss scenarios: WRITEs of exactly
// four packets, back to back, so that a loss is always followed by packets
// that reveal it.
func (e *engine) fourPacketWrites(n int) workload {
	return counted(e, n, func(int) message {
		return message{kind: msgWrite, length: e.pktsLen(4)}
	})
}

// lossConns builds the connections of loss-gbn and loss-unrecovered: QP 0
// loses one packet and later two in a row, QP 1 one packet, further QPs one
// packet each.
func (e *engine) lossConns(kind lossKind) []*rcConn {
	cs := make([]*rcConn, e.cfg.QPs)
	for i := range cs {
		c := e.connect(1, 2, false, e.fourPacketWrites(10))
		var plan []uint64
		if i == 0 {
			a := uint64(6 + e.rng.IntN(6))
			b := uint64(22 + e.rng.IntN(6))
			plan = []uint64{a, b, b + 1}
		} else {
			plan = []uint64{uint64(10 + e.rng.IntN(12))}
		}
		c.loss = e.lossPlan(kind, plan)
		cs[i] = c
	}
	return cs
}

func runLossGBN(e *engine) error {
	return e.run(actors(e.lossConns(lossNet))...)
}

func runLossUnrecovered(e *engine) error {
	return e.run(actors(e.lossConns(lossCapture))...)
}

// rnrSends is the workload of rnr: SENDs, of which messages 2 and 6 (and
// then every 12th) find no receive buffer.
func (e *engine) rnrSends(n int, think func() int64) workload {
	return counted(e, n, func(i int) message {
		m := message{kind: msgSend, length: e.smallLen(), think: think()}
		if e.rng.IntN(2) == 0 {
			m.length = e.pktsLen(2 + e.rng.IntN(2))
		}
		m.rnr = i == 2 || i == 6 || (i > 6 && i%12 == 6)
		return m
	})
}

func runRNR(e *engine) error {
	cs := make([]*rcConn, e.cfg.QPs)
	for i := range cs {
		cs[i] = e.connect(1, 2, false, e.rnrSends(10, func() int64 { return 0 }))
	}
	return e.run(actors(cs)...)
}

func runWrap(e *engine) error {
	cs := make([]*rcConn, e.cfg.QPs)
	for i := range cs {
		var c *rcConn
		if i%2 == 0 {
			c = e.connect(1, 2, false, counted(e, 12, func(int) message {
				return message{kind: msgWrite, length: e.pktsLen(1 + e.rng.IntN(3))}
			}))
			c.ipsn = 0xffffff - 4 - e.rng.Uint32N(12)
		} else {
			// A WRITE at ipsn+0, then a READ of six packets from
			// ipsn+1, which crosses the wrap for ipsn >= 0xfffffa.
			c = e.connect(1, 2, false, counted(e, 10, func(i int) message {
				if i%4 == 1 {
					return message{kind: msgRead, length: e.pktsLen(6)}
				}
				return message{kind: msgWrite, length: e.pktsLen(1 + e.rng.IntN(2))}
			}))
			c.ipsn = 0xfffffc + e.rng.Uint32N(2)
		}
		cs[i] = c
	}
	return e.run(actors(cs)...)
}

// congested says whether a packet sent at t meets a congested switch queue:
// from 30 to 80 us and from 120 to 160 us of every 200 us.
func congested(t int64) bool {
	phase := t % (200 * us)
	return phase >= 30*us && phase < 80*us || phase >= 120*us && phase < 160*us
}

// ceMarks marks a packet CE with probability pct percent while inCongestion
// says the queue is congested.
func (e *engine) ceMarks(pct int, inCongestion func(int64) bool) func(*rcConn, *desc, int64) bool {
	return func(_ *rcConn, _ *desc, t int64) bool {
		return inCongestion(t) && e.rng.IntN(100) < pct
	}
}

func runECN(e *engine) error {
	cs := make([]*rcConn, e.cfg.QPs)
	for i := range cs {
		c := e.connect(1, 2, false, counted(e, 14, func(i int) message {
			m := message{kind: msgWrite, length: e.pktsLen(2 + e.rng.IntN(3))}
			if i > 0 {
				m.think = e.between(8*us, 16*us)
			}
			return m
		}))
		c.forceECT = true
		c.ce = e.ceMarks(35, congested)
		cs[i] = c
	}
	return e.run(actors(cs)...)
}

// gsiExchange returns the two QP 1 actors of a connection setup between
// hosts a and b: REQ from a at t0, REP from b 8 us later, RTU from a 8 us
// after that.
func (e *engine) gsiExchange(a, b int, t0 int64, single bool) []actor {
	ha, hb := e.host(a), e.host(b)
	tid := e.rng.Uint64()
	script := func(msgs ...udMsg) func(*udActor) (udMsg, bool) {
		return func(u *udActor) (udMsg, bool) {
			if u.sent+boolInt(u.haveLook) >= len(msgs) {
				return udMsg{}, false
			}
			return msgs[u.sent+boolInt(u.haveLook)], true
		}
	}
	mad := func(attr uint16, at int64) udMsg {
		return udMsg{dstQP: gsiQP, qkey: gsiQKey, length: madLen, data: cmMAD(attr, tid), at: at}
	}
	ua := e.newUD(ha, hb, gsiQP, gsiQP, single, script(mad(cmAttrREQ, t0), mad(cmAttrRTU, t0+16*us)))
	ub := e.newUD(hb, ha, gsiQP, gsiQP, single, script(mad(cmAttrREP, t0+8*us)))
	return []actor{ua, ub}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// udData returns a UD QP on host a sending n datagrams to QP peer on host
// b, every third with immediate data.
func (e *engine) udData(a, b int, qa, peer uint32, n int, start int64, single bool) *udActor {
	i := 0
	return e.newUD(e.host(a), e.host(b), qa, peer, single, func(u *udActor) (udMsg, bool) {
		if e.sized() && !e.budgetLeft() || !e.sized() && i >= n {
			return udMsg{}, false
		}
		m := udMsg{dstQP: peer, qkey: udDataKey, length: e.smallLen(), imm: i%3 == 2,
			think: e.between(300*ns, 3*us)}
		if i == 0 {
			m.at = start
		}
		i++
		return m, true
	})
}

func runUD(e *engine) error {
	as := e.gsiExchange(1, 2, 0, false)
	for i := 0; i < e.cfg.QPs; i++ {
		qa, qb := e.newQP(e.host(1)), e.newQP(e.host(2))
		as = append(as,
			e.udData(1, 2, qa, qb, 8, 30*us, false),
			e.udData(2, 1, qb, qa, 5, 32*us, false))
	}
	return e.run(as...)
}

func runAtomic(e *engine) error {
	cs := make([]*rcConn, e.cfg.QPs)
	for i := range cs {
		var model uint64
		c := e.connect(1, 2, false, nil)
		c.memory = map[uint64]uint64{}
		model = e.rng.Uint64() >> 16
		c.memory[c.atomicVA] = model
		c.work = counted(e, 16, func(i int) message {
			m := message{think: e.between(1*us, 2*us)}
			if i%2 == 0 {
				m.kind, m.swap = msgFetchAdd, uint64(1+e.rng.IntN(16))
				model += m.swap
				return m
			}
			m.kind, m.swap = msgCompareSwap, e.rng.Uint64()>>16
			m.cmp = model
			if i%8 == 7 {
				m.cmp = model ^ 1 // a compare that fails
			} else {
				model = m.swap
			}
			return m
		})
		c.look, c.haveLook = c.work(c)
		cs[i] = c
	}
	return e.run(actors(cs)...)
}

func runMixed(e *engine) error {
	think := func(lo, hi int64) func() int64 {
		return func() int64 { return e.between(lo, hi) }
	}
	var as []actor
	// Host pair 10.0.0.1 - 10.0.0.2.
	w := e.connect(1, 2, false, counted(e, 14, func(i int) message {
		m := message{kind: msgWrite, length: e.smallLen(), think: e.between(4*us, 12*us)}
		if i%3 == 1 {
			m.length = e.pktsLen(2 + e.rng.IntN(2))
		}
		m.imm = i == 5
		return m
	}))
	s := e.connect(2, 1, false, counted(e, 10, func(i int) message {
		m := e.sendMsg(i)
		m.think = e.between(4*us, 12*us)
		return m
	}))
	r := e.connect(1, 2, false, e.readRounds(3, think(10*us, 20*us)))
	lossy := e.connect(1, 2, false, counted(e, 5, func(i int) message {
		m := message{kind: msgWrite, length: e.pktsLen(3)}
		if i >= 3 {
			m.think = e.between(10*us, 20*us)
		}
		return m
	}))
	lossy.loss = e.lossPlan(lossNet, []uint64{uint64(3 + e.rng.IntN(3))})
	rnr := e.connect(1, 2, false, e.rnrSends(5, think(5*us, 10*us)))
	cong := e.connect(1, 2, false, counted(e, 8, func(i int) message {
		m := message{kind: msgWrite, length: e.pktsLen(2 + e.rng.IntN(2))}
		if i > 0 {
			m.think = e.between(12*us, 18*us)
		}
		return m
	}))
	if !e.cfg.RoCEv1 {
		cong.forceECT = true
		cong.ce = e.ceMarks(50, func(t int64) bool { return t >= 10*us && t < 150*us })
	}
	as = append(as, w, s, r, lossy, rnr, cong)
	as = append(as, e.gsiExchange(1, 2, 0, false)...)
	qa, qb := e.newQP(e.host(1)), e.newQP(e.host(2))
	as = append(as, e.udData(1, 2, qa, qb, 8, 25*us, false), e.udData(2, 1, qb, qa, 6, 27*us, false))

	// Host pair 10.0.0.3 - 10.0.0.4: all QPs on one UDP source port.
	for i := 0; i < e.cfg.QPs; i++ {
		as = append(as, e.connect(3, 4, true, counted(e, 9, func(int) message {
			m := message{kind: msgWrite, length: e.smallLen(), think: e.between(6*us, 20*us)}
			if e.rng.IntN(3) == 0 {
				m.length = e.pktsLen(2)
			}
			return m
		})))
	}
	return e.run(as...)
}
