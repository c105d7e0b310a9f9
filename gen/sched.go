package gen

// actor is a sender the engine schedules: an RC requester or a UD QP.
type actor interface {
	// host is the sending host, whose link the actor shares.
	host() *host
	// readyAt is the earliest time of the next packet; ok false means
	// the actor is finished.
	readyAt() (t int64, ok bool)
	// step sends the next packet at time t.
	step(t int64) error
	// last is when the actor last sent, to share a link fairly.
	last() int64
}

// run lets the actors send until all are finished: each turn the actor
// that can send earliest (its own readiness and its host's link both
// allowing) sends one packet; among equal candidates the one that waited
// longest goes first, as a NIC's round-robin arbiter does.
func (e *engine) run(actors ...actor) error {
	for {
		best := -1
		var bt, bl int64
		for i, a := range actors {
			t, ok := a.readyAt()
			if !ok {
				continue
			}
			t = max(t, a.host().link)
			l := a.last()
			if best < 0 || t < bt || (t == bt && l < bl) {
				best, bt, bl = i, t, l
			}
		}
		if best < 0 {
			return nil
		}
		if err := e.advance(bt); err != nil {
			return err
		}
		if err := actors[best].step(bt); err != nil {
			return err
		}
	}
}

// newQP hands out the next QP number of host h.
func (e *engine) newQP(h *host) uint32 {
	qp := h.qpNext
	h.qpNext++
	return qp
}

// portKey identifies a host pair, in either order.
type portKey struct{ a, b int }

// udpPort returns the UDP source port of the connection between QP qa on
// host a and QP qb on host b: a hash of the two QP numbers in 49152..65535
// (the same in both directions, as NICs derive it from both), unique per
// host pair; or one port for the whole pair when single is set or the
// configuration asks for it. RoCEv1 has no UDP: the port is 0.
func (e *engine) udpPort(a, b *host, qa, qb uint32, single bool) uint16 {
	if e.cfg.RoCEv1 {
		return 0
	}
	k := portKey{min(a.n, b.n), max(a.n, b.n)}
	if single || e.cfg.SrcPorts == SrcPortsSingle {
		if e.singlePorts == nil {
			e.singlePorts = make(map[portKey]uint16)
		}
		p, ok := e.singlePorts[k]
		if !ok {
			p = portBase | uint16(e.rng.Uint32N(0x4000))
			e.singlePorts[k] = p
		}
		return p
	}
	ck := connKey{k, min(qa, qb), max(qa, qb)}
	if p, ok := e.connPorts[ck]; ok {
		return p // the other direction of a connection already seen
	}
	if e.usedPorts == nil {
		e.usedPorts = make(map[portKey]map[uint16]bool)
		e.connPorts = make(map[connKey]uint16)
	}
	used := e.usedPorts[k]
	if used == nil {
		used = make(map[uint16]bool)
		e.usedPorts[k] = used
	}
	h := flowLabel(qa, qb)
	p := uint16(h^h>>14) & 0x3fff
	for used[portBase|p] {
		p = (p + 1) & 0x3fff
	}
	used[portBase|p] = true
	e.connPorts[ck] = portBase | p
	return portBase | p
}

// connKey identifies a connection: a host pair and its two QP numbers.
type connKey struct {
	hosts  portKey
	lo, hi uint32
}
