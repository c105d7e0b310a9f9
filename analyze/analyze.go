// Package analyze turns a stream of decoded RoCE packets into a report an
// RDMA engineer can act on: per-QP flows with their traffic and message
// counts, PSN gaps, retransmissions and losses that were never repaired,
// NAKs, ECN marks and the CNPs they caused, and how well the UDP source
// ports spread the flows over equal-cost paths (ECMP entropy).
//
// An Analyzer keeps state per flow and per host pair, never per packet, and
// Add does not allocate once a flow is known, so a capture of any length
// can be analyzed in bounded memory.
package analyze

import (
	"net/netip"

	"roce-inspect/dissect"
	"roce-inspect/layers"
)

// Defaults for the zero values of Options.
const (
	// DefaultECMPPaths is the number of equal-cost paths the ECMP
	// simulation spreads flows over when Options.ECMPPaths is 0.
	DefaultECMPPaths = 8
	// MaxECMPPaths bounds Options.ECMPPaths, which sizes two arrays of
	// the report.
	MaxECMPPaths = 1 << 16
	// DefaultMaxMissingRanges is how many ranges of missing PSNs each
	// flow remembers when Options.MaxMissingRanges is 0.
	DefaultMaxMissingRanges = 64
)

// Bounds on per-flow and global state that packets could otherwise grow.
const (
	// maxListedPorts is how many UDP source ports a flow lists in the
	// report; the rest are counted in src_ports_more.
	maxListedPorts = 16
	// inlinePorts is how many distinct UDP port pairs a flow keeps
	// without allocating; more go to a map created on demand.
	inlinePorts = 4
	// maxMalformedReasons bounds the distinct malformed reasons kept;
	// further reasons are counted under otherMalformed.
	maxMalformedReasons = 64
	otherMalformed      = "other reasons"
	// schemaVersion is the version of the report's JSON layout.
	schemaVersion = 1
)

// Options configures an Analyzer. The zero value analyzes everything with
// the defaults.
type Options struct {
	// PMTU is the path MTU in bytes used to count the PSNs an RDMA READ
	// reserves. 0 learns it from the payload of FIRST and MIDDLE packets
	// between the same two hosts.
	PMTU int
	// ECMPPaths is the number of equal-cost paths of the ECMP simulation;
	// 0 means DefaultECMPPaths, and more than MaxECMPPaths means
	// MaxECMPPaths.
	ECMPPaths int
	// QPs keeps only packets whose destination QP is listed; empty keeps
	// all.
	QPs []uint32
	// Hosts keeps only packets whose source or destination address is
	// listed; empty keeps all.
	Hosts []netip.Addr
	// MaxMissingRanges bounds the ranges of missing PSNs each flow
	// remembers to find out whether they are retransmitted later; 0 means
	// DefaultMaxMissingRanges. When more are outstanding the oldest is
	// forgotten and counted in ranges_dropped.
	MaxMissingRanges int
}

// flowKey identifies a flow: one direction between two addresses (IP
// addresses, or the GIDs of RoCEv1) to one destination QP. The RoCE version
// is part of the key so that RoCEv1 and RoCEv2 traffic between hosts whose
// GIDs map to their IP addresses is not mixed.
type flowKey struct {
	src, dst netip.Addr
	qp       uint32
	version  uint8
}

// pairKey identifies one direction between two hosts.
type pairKey struct {
	src, dst netip.Addr
	version  uint8
}

// hostPair is the state shared by the flows from one host to another.
type hostPair struct {
	key   pairKey
	flows []*flow
	// pmtu is the largest IBTA MTU seen as the payload of a FIRST or
	// MIDDLE packet in this direction.
	pmtu int
	// ceSeen and firstCE: the first CE-marked packet of any flow in this
	// direction.
	ceSeen  bool
	firstCE int64
	// reverse is the host pair in the other direction, once it exists.
	reverse *hostPair
}

// portUse is the traffic of a flow on one UDP port pair.
type portUse struct {
	ports uint32 // source port << 16 | destination port
	bytes uint64
}

// opCount counts the packets of one opcode.
type opCount struct {
	op layers.Opcode
	n  uint64
}

// flow is the state of one flow.
type flow struct {
	key flowKey
	hp  *hostPair

	transports uint8 // bit per layers.Transport seen
	packets    uint64
	bytes      uint64
	payload    uint64
	messages   uint64

	ports     [inlinePorts]portUse
	nports    int
	morePorts map[uint32]uint64

	ops []opCount

	first, last int64

	icrc [3]uint64 // by dissect.ICRCVerdict
	ecn  [4]uint64 // by dissect.ECN
	fecn uint64
	becn uint64

	// cnp counts CNPs received on this flow (this QP is the one being told
	// to slow down); firstCNP is the first one and cnpAfterCE the first one
	// at or after the first CE mark seen in the opposite direction.
	cnp        uint64
	firstCNP   int64
	cnpAfterCE int64
	hasAfterCE bool

	ceSeen  bool
	firstCE int64

	psn psnTracker

	// Responses (ACKs, READ responses) carry PSNs of the opposite flow's
	// requests: kept to pair the two QPs of a connection.
	respSeen       bool
	respTop        uint32 // the most advanced response PSN
	nakSeq, nakRNR uint64
	nakOther       uint64
}

// Analyzer accumulates packets into flows. It is not safe for concurrent
// use: callers that report while adding (live mode) serialize the calls.
type Analyzer struct {
	opt   Options
	qps   map[uint32]struct{}
	hosts map[netip.Addr]struct{}
	flows map[flowKey]*flow
	pairs map[pairKey]*hostPair
	// recent caches flows by a cheap hash of their key, in front of the
	// flow map: traffic interleaves a few flows (data one way, ACKs the
	// other), and hashing a flowKey for the map costs more than the rest
	// of Add.
	recent [recentFlows]*flow

	total, notRoCE, filtered uint64
	roce, v1, v2, malformed  uint64
	reasons                  map[string]uint64
	icrc                     [3]uint64
	ecn                      [4]uint64
	cnp, fecn, becn          uint64
	bytes                    uint64
	tsSeen                   bool
	first, last              int64
}

// New returns an Analyzer configured by o.
func New(o Options) *Analyzer {
	if o.ECMPPaths <= 0 {
		o.ECMPPaths = DefaultECMPPaths
	}
	o.ECMPPaths = min(o.ECMPPaths, MaxECMPPaths)
	if o.MaxMissingRanges <= 0 {
		o.MaxMissingRanges = DefaultMaxMissingRanges
	}
	if o.PMTU < 0 {
		o.PMTU = 0
	}
	a := &Analyzer{
		opt:     o,
		flows:   make(map[flowKey]*flow),
		pairs:   make(map[pairKey]*hostPair),
		reasons: make(map[string]uint64),
	}
	if len(o.QPs) > 0 {
		a.qps = make(map[uint32]struct{}, len(o.QPs))
		for _, q := range o.QPs {
			a.qps[q&0xFFFFFF] = struct{}{}
		}
	}
	if len(o.Hosts) > 0 {
		a.hosts = make(map[netip.Addr]struct{}, len(o.Hosts))
		for _, h := range o.Hosts {
			a.hosts[h.Unmap()] = struct{}{}
		}
	}
	return a
}

// NotRoCE counts a frame that is not RoCE: it shows in packets.total and
// packets.not_roce only.
func (a *Analyzer) NotRoCE() {
	a.total++
	a.notRoCE++
}

// keep applies the QP and host filters.
func (a *Analyzer) keep(p *dissect.Packet) bool {
	if a.qps != nil {
		if _, ok := a.qps[p.BTH.DestQP&0xFFFFFF]; !ok {
			return false
		}
	}
	if a.hosts != nil {
		_, s := a.hosts[p.SrcIP.Unmap()]
		_, d := a.hosts[p.DstIP.Unmap()]
		if !s && !d {
			return false
		}
	}
	return true
}

// Add accounts for one RoCE packet. Malformed packets (p.Malformed set) are
// counted by reason and otherwise left out of the analysis, since their
// fields past the fault are not trustworthy. Add keeps no reference to p or
// its slices. A nil p is ignored.
func (a *Analyzer) Add(p *dissect.Packet) {
	if p == nil {
		return
	}
	a.total++
	if !a.keep(p) {
		a.filtered++
		return
	}
	a.roce++
	switch p.Version {
	case 1:
		a.v1++
	case 2:
		a.v2++
	}
	if !a.tsSeen || p.Timestamp < a.first {
		a.first = p.Timestamp
	}
	if !a.tsSeen || p.Timestamp > a.last {
		a.last = p.Timestamp
	}
	a.tsSeen = true
	if p.Len > 0 {
		a.bytes += uint64(p.Len)
	}
	// Every RoCE packet has an ICRC verdict, malformed ones too: a CI gate
	// must not pass a corrupted packet because its headers are also wrong.
	if p.ICRC <= dissect.ICRCBad {
		a.icrc[p.ICRC]++
	}
	if p.Malformed != "" {
		a.malformed++
		a.countReason(p.Malformed)
		return
	}

	op := p.BTH.Opcode
	v2 := p.Version == 2
	if v2 {
		a.ecn[p.ECN&3]++
	}
	cnp := op.IsCNP()
	if cnp {
		a.cnp++
	}
	if p.BTH.FECN {
		a.fecn++
	}
	if p.BTH.BECN {
		a.becn++
	}

	f := a.flowFor(p)
	f.packets++
	if p.Len > 0 {
		f.bytes += uint64(p.Len)
	}
	if p.PayloadLen > 0 {
		f.payload += uint64(p.PayloadLen)
	}
	f.transports |= 1 << op.Transport()
	if endsMessage(op) {
		f.messages++
	}
	f.countOp(op)
	if p.Timestamp < f.first {
		f.first = p.Timestamp
	}
	if p.Timestamp > f.last {
		f.last = p.Timestamp
	}
	if p.ICRC <= dissect.ICRCBad {
		f.icrc[p.ICRC]++
	}
	if p.BTH.FECN {
		f.fecn++
	}
	if p.BTH.BECN {
		f.becn++
	}
	if v2 {
		f.ecn[p.ECN&3]++
		f.countPorts(p.SrcPort, p.DstPort, p.Len)
		if p.ECN&3 == dissect.ECNCE {
			f.markCE(p.Timestamp)
		}
	}

	switch {
	case cnp:
		f.receiveCNP(a.reversePair(f.hp), p.Timestamp)
	case op.IsRequest():
		if pmtuSized(op) {
			f.hp.learnPMTU(p.PayloadLen - int(p.BTH.PadCount))
		}
		if psnTracked(op.Transport()) {
			read := op.IsReadRequest() && p.Headers&layers.HasRETH != 0
			pmtu := 0
			if f.psn.readPending {
				// Only a pending READ reservation needs the PMTU.
				pmtu = a.pmtuBetween(f.hp)
			}
			f.psn.request(p.BTH.PSN, read, uint64(p.RETH.DMALength), pmtu)
		}
	case isResponse(op):
		if pmtuSized(op) {
			f.hp.learnPMTU(p.PayloadLen - int(p.BTH.PadCount))
		}
		f.response(p.BTH.PSN)
		if isAcknowledge(op) && p.Headers&layers.HasAETH != 0 {
			f.countNAK(p.AETH.Syndrome)
		}
	}
}

// countReason counts a malformed reason, bounding the distinct reasons.
func (a *Analyzer) countReason(r string) {
	if _, ok := a.reasons[r]; !ok && len(a.reasons) >= maxMalformedReasons {
		r = otherMalformed
	}
	a.reasons[r]++
}

// flowFor returns the flow of p, creating it (and its host pair) on first
// sight.
func (a *Analyzer) flowFor(p *dissect.Packet) *flow {
	qp := p.BTH.DestQP & 0xFFFFFF
	slot := &a.recent[recentSlot(qp, p.Version, p.SrcPort)]
	// Field by field, cheapest first: no flowKey to build on a hit.
	if f := *slot; f != nil && f.key.qp == qp && f.key.version == p.Version && f.key.src == p.SrcIP && f.key.dst == p.DstIP {
		return f
	}
	k := flowKey{src: p.SrcIP, dst: p.DstIP, qp: qp, version: p.Version}
	f, ok := a.flows[k]
	if !ok {
		pk := pairKey{src: k.src, dst: k.dst, version: k.version}
		hp, ok := a.pairs[pk]
		if !ok {
			hp = &hostPair{key: pk}
			a.pairs[pk] = hp
		}
		f = &flow{
			key:   k,
			hp:    hp,
			first: p.Timestamp,
			last:  p.Timestamp,
			ops:   make([]opCount, 0, 8),
		}
		f.psn.maxRanges = a.opt.MaxMissingRanges
		hp.flows = append(hp.flows, f)
		a.flows[k] = f
	}
	*slot = f
	return f
}

// recentFlows is the size of Analyzer.recent.
const (
	recentBits  = 8
	recentFlows = 1 << recentBits
)

// recentSlot hashes a flow to a slot of Analyzer.recent. It takes the QP,
// which tells most flows apart, and the UDP source port, which RoCEv2 NICs
// derive from the QP, so that hosts that number their QPs alike still spread
// over the slots. Hashing the addresses as well would cost more than the map
// lookups it saves; a packet whose flow is not in its slot only falls back to
// the map.
func recentSlot(qp uint32, version uint8, srcPort uint16) uint {
	h := uint64(qp)<<24 | uint64(srcPort)<<8 | uint64(version)
	h *= 0x9E3779B97F4A7C15
	return uint(h >> (64 - recentBits)) // the top bits mix every input bit
}

// reversePair returns the host pair in the opposite direction of hp, or nil
// when no packet has gone that way yet.
func (a *Analyzer) reversePair(hp *hostPair) *hostPair {
	if hp.reverse == nil {
		if r, ok := a.pairs[pairKey{src: hp.key.dst, dst: hp.key.src, version: hp.key.version}]; ok {
			hp.reverse = r
			r.reverse = hp
		}
	}
	return hp.reverse
}

// pmtuBetween returns the path MTU for the flows of hp: the configured one,
// else the largest learned in either direction, else 0.
func (a *Analyzer) pmtuBetween(hp *hostPair) int {
	if a.opt.PMTU > 0 {
		return a.opt.PMTU
	}
	m := hp.pmtu
	if r := a.peekReverse(hp); r != nil && r.pmtu > m {
		m = r.pmtu
	}
	return m
}

// ibtaMTU reports whether n is one of the path MTUs InfiniBand defines.
func ibtaMTU(n int) bool {
	switch n {
	case 256, 512, 1024, 2048, 4096:
		return true
	}
	return false
}

// learnPMTU records the payload of a FIRST or MIDDLE packet.
func (hp *hostPair) learnPMTU(n int) {
	if ibtaMTU(n) && n > hp.pmtu {
		hp.pmtu = n
	}
}

// countOp counts one packet of opcode op.
func (f *flow) countOp(op layers.Opcode) {
	for i := range f.ops {
		if f.ops[i].op == op {
			f.ops[i].n++
			return
		}
	}
	f.ops = append(f.ops, opCount{op: op, n: 1})
}

// countPorts adds a packet's length to its UDP port pair.
func (f *flow) countPorts(src, dst uint16, length int) {
	k := uint32(src)<<16 | uint32(dst)
	n := uint64(0)
	if length > 0 {
		n = uint64(length)
	}
	for i := 0; i < f.nports; i++ {
		if f.ports[i].ports == k {
			f.ports[i].bytes += n
			return
		}
	}
	if f.nports < inlinePorts {
		f.ports[f.nports] = portUse{ports: k, bytes: n}
		f.nports++
		return
	}
	if f.morePorts == nil {
		f.morePorts = make(map[uint32]uint64)
	}
	f.morePorts[k] += n
}

// eachPort calls fn for every UDP port pair the flow used.
func (f *flow) eachPort(fn func(ports uint32, bytes uint64)) {
	for i := 0; i < f.nports; i++ {
		fn(f.ports[i].ports, f.ports[i].bytes)
	}
	for k, n := range f.morePorts {
		fn(k, n)
	}
}

// markCE records a CE-marked packet.
func (f *flow) markCE(ts int64) {
	if !f.ceSeen || ts < f.firstCE {
		f.ceSeen, f.firstCE = true, ts
	}
	if !f.hp.ceSeen || ts < f.hp.firstCE {
		f.hp.ceSeen, f.hp.firstCE = true, ts
	}
}

// receiveCNP records a CNP arriving on this flow; rev is the host pair the
// congested traffic went through (the opposite direction), if known.
func (f *flow) receiveCNP(rev *hostPair, ts int64) {
	if f.cnp == 0 || ts < f.firstCNP {
		f.firstCNP = ts
	}
	f.cnp++
	if !f.hasAfterCE && rev != nil && rev.ceSeen && rev.firstCE <= ts {
		f.hasAfterCE, f.cnpAfterCE = true, ts
	}
}

// response records the PSN of an ACK or READ response.
func (f *flow) response(psn uint32) {
	psn &= psnMask
	if !f.respSeen {
		f.respSeen, f.respTop = true, psn
		return
	}
	if psnAhead(f.respTop, psn) {
		f.respTop = psn
	}
}

// countNAK classifies an AETH syndrome: bits 6-5 are 00 ACK, 01 RNR NAK,
// 11 NAK whose low five bits are the code (0: PSN sequence error).
func (f *flow) countNAK(syn uint8) {
	switch syn >> 5 & 3 {
	case 1:
		f.nakRNR++
	case 3:
		if syn&0x1F == 0 {
			f.nakSeq++
		} else {
			f.nakOther++
		}
	}
}
