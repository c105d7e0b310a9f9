package analyze

// A CNP for the CE-marked traffic of flow A->B (to QP q at B) travels B->A
// to the QP p at A that sent it. The capture names q (the destination QP of
// the marked packets) and p (the destination QP of the CNP) but nothing in
// either packet ties them together; the pairing comes from the reliable
// traffic of the connection: the ACKs and READ responses B->A to p carry
// PSNs of the requests A->B to q.

// pairQPs returns, for each flow with requests, the flow in the opposite
// direction that carries its responses, where exactly one candidate exists
// on both sides.
func (a *Analyzer) pairQPs() map[*flow]*flow {
	claims := make(map[*flow][]*flow) // request flow -> response flows pointing at it
	for _, hp := range a.pairs {
		rev := a.peekReverse(hp)
		if rev == nil {
			continue
		}
		for _, x := range hp.flows {
			if !x.respSeen {
				continue
			}
			var match *flow
			n := 0
			for _, f := range rev.flows {
				if f.psn.started && psnIn(x.respTop, f.psn.first, f.psn.lastReserved(a.pmtuBetween(rev))) {
					match = f
					n++
				}
			}
			if n == 1 {
				claims[match] = append(claims[match], x)
			}
		}
	}
	pairs := make(map[*flow]*flow, len(claims))
	for f, xs := range claims {
		if len(xs) == 1 {
			pairs[f] = xs[0]
		}
	}
	return pairs
}

// peekReverse returns the host pair opposite hp without linking the two, so
// that Report leaves the analyzer as it was.
func (a *Analyzer) peekReverse(hp *hostPair) *hostPair {
	if hp.reverse != nil {
		return hp.reverse
	}
	return a.pairs[pairKey{src: hp.key.dst, dst: hp.key.src, version: hp.key.version}]
}

// congestion reports each CE-marked flow, in the order given.
func (a *Analyzer) congestion(flows []*flow) []CongestionReport {
	out := []CongestionReport{}
	var pairs map[*flow]*flow
	for _, f := range flows {
		if !f.ceSeen {
			continue
		}
		if pairs == nil {
			pairs = a.pairQPs()
		}
		c := CongestionReport{
			Flow:      flowKeyString(f.key.src, f.key.dst, f.key.qp, int(f.key.version)),
			SrcIP:     f.key.src,
			DstIP:     f.key.dst,
			DestQP:    f.key.qp,
			CE:        f.ecn[3],
			FirstCETS: formatTS(f.firstCE),
		}
		rev := a.peekReverse(f.hp)
		if rev != nil {
			for _, x := range rev.flows {
				c.CNPsToSenderHost += x.cnp
			}
		}
		x := pairs[f]
		if x == nil {
			x = a.onlyCNPTarget(f, rev)
		}
		if x != nil {
			qp := x.key.qp
			c.CNPMatched = true
			c.SenderQP = &qp
			c.CNPsBack = x.cnp
			if d, ok := cnpDelay(f, x); ok {
				us := float64(d) / 1e3
				c.FirstCEToCNPMicros = &us
			}
		}
		out = append(out, c)
	}
	return out
}

// onlyCNPTarget pairs f with the sender's QP when nothing else is possible
// but nothing else is plausible either: f is the only flow from its source
// to its destination, and only one QP of the source received CNPs from the
// destination.
func (a *Analyzer) onlyCNPTarget(f *flow, rev *hostPair) *flow {
	if len(f.hp.flows) != 1 || rev == nil {
		return nil
	}
	var only *flow
	for _, x := range rev.flows {
		if x.cnp > 0 {
			if only != nil {
				return nil
			}
			only = x
		}
	}
	return only
}

// cnpDelay returns the time from f's first CE mark to the first CNP at or
// after it on x, when the state kept identifies that CNP.
func cnpDelay(f, x *flow) (int64, bool) {
	if x.cnp == 0 {
		return 0, false
	}
	// The first CNP of all came after the first CE: it is the one.
	if x.firstCNP >= f.firstCE {
		return x.firstCNP - f.firstCE, true
	}
	// x remembers the first CNP after the first CE of any flow from f's
	// source to its destination; when that CE was f's, it is the one.
	if x.hasAfterCE && f.hp.ceSeen && f.hp.firstCE == f.firstCE && x.cnpAfterCE >= f.firstCE {
		return x.cnpAfterCE - f.firstCE, true
	}
	return 0, false
}
