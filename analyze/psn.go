package analyze

// PSNs are 24-bit counters that wrap; two PSNs are ordered by their distance
// modulo 2^24, with half the space (2^23) on either side.
const (
	psnMask = 1<<24 - 1
	psnHalf = 1 << 23
)

// psnDiff returns b - a modulo 2^24: the forward distance from a to b.
func psnDiff(a, b uint32) uint32 { return (b - a) & psnMask }

// psnAhead reports whether b is ahead of (or equal to) a within the half
// window.
func psnAhead(a, b uint32) bool { return psnDiff(a, b) < psnHalf }

// psnIn reports whether x lies in the inclusive wrapped range [lo, hi].
func psnIn(x, lo, hi uint32) bool { return psnDiff(lo, x) <= psnDiff(lo, hi) }

// psnRange is an inclusive range of PSNs, possibly wrapping through 0.
type psnRange struct{ lo, hi uint32 }

// size returns the number of PSNs in r.
func (r psnRange) size() uint64 { return uint64(psnDiff(r.lo, r.hi)) + 1 }

// psnTracker follows the request PSNs of one flow.
type psnTracker struct {
	requests uint64 // request packets analyzed
	started  bool
	first    uint32 // PSN of the first request seen
	top      uint32 // most advanced request PSN seen
	expected uint32 // PSN the next in-order request should carry
	// slack is how far past expected the next request may land without a
	// gap: a READ whose PSN reservation could not be computed (unknown
	// PMTU) may have taken up to slack more PSNs.
	slack uint32
	// An RDMA READ at the top reserves one PSN per PMTU of its length.
	// The reservation is settled when the next request arrives, so that a
	// PMTU learned from the READ's own responses counts.
	readPending bool
	readLen     uint64

	gaps    uint64
	missing uint64
	retrans uint64

	// ranges holds the PSNs skipped by gaps and not seen since, oldest
	// first; at most maxRanges of them.
	ranges    []psnRange
	maxRanges int
	dropped   uint64
}

// readSpan returns how many PSNs a READ of length bytes takes, and how many
// more it may take when the PMTU is unknown (0): then anything up to the
// count for the smallest IBTA MTU, 256, is possible.
func readSpan(length uint64, pmtu int) (span, extra uint32) {
	if pmtu > 0 {
		return readPSNs(length, uint64(pmtu)), 0
	}
	return 1, readPSNs(length, 256) - 1
}

// readPSNs returns ceil(length/pmtu), at least 1, capped below the PSN half
// window so that a huge length cannot make the PSN arithmetic wrap.
func readPSNs(length, pmtu uint64) uint32 {
	n := length / pmtu
	if length%pmtu != 0 {
		n++
	}
	if n < 1 {
		n = 1
	}
	if n >= psnHalf {
		n = psnHalf - 1
	}
	return uint32(n)
}

// settle fixes the reservation of a pending READ with the PMTU known now.
func (t *psnTracker) settle(pmtu int) {
	if !t.readPending {
		return
	}
	t.readPending = false
	span, extra := readSpan(t.readLen, pmtu)
	t.expected = (t.top + span) & psnMask
	t.slack = extra
}

// request accounts for one request carrying psn. read says it is an RDMA
// READ of readLen bytes; pmtu is the path MTU known now, 0 if none.
func (t *psnTracker) request(psn uint32, read bool, readLen uint64, pmtu int) {
	psn &= psnMask
	t.requests++
	if !t.started {
		t.started = true
		t.first = psn
		t.advance(psn, read, readLen)
		return
	}
	t.settle(pmtu)
	d := psnDiff(t.expected, psn)
	if d >= psnHalf {
		// Behind the expected PSN: the requester sent this PSN again
		// (go-back-N after a NAK or a timeout, a resend after an RNR NAK)
		// or the network duplicated it. It may repair a gap.
		t.retrans++
		t.crossOff(psn)
		return
	}
	if d > t.slack {
		// A forward jump: PSNs [expected+slack, psn-1] never arrived
		// (in this capture, so far).
		t.gaps++
		lo := (t.expected + t.slack) & psnMask
		hi := (psn - 1) & psnMask
		t.missing += uint64(d - t.slack)
		t.addRange(psnRange{lo, hi})
	}
	t.advance(psn, read, readLen)
}

// advance makes psn the top of the sequence.
func (t *psnTracker) advance(psn uint32, read bool, readLen uint64) {
	t.top = psn
	t.expected = (psn + 1) & psnMask
	t.slack = 0
	t.readPending = read
	t.readLen = readLen
}

// addRange records an outstanding missing range, dropping the oldest when
// the limit is reached so that state stays bounded.
func (t *psnTracker) addRange(r psnRange) {
	if t.maxRanges <= 0 {
		t.dropped++
		return
	}
	if t.ranges == nil {
		// Grown as gaps appear rather than sized to the limit, which
		// may be large: memory follows the losses actually seen.
		t.ranges = make([]psnRange, 0, min(t.maxRanges, 8))
	}
	if len(t.ranges) == t.maxRanges {
		copy(t.ranges, t.ranges[1:])
		t.ranges = t.ranges[:len(t.ranges)-1]
		t.dropped++
	}
	t.ranges = append(t.ranges, r)
}

// crossOff removes psn from the outstanding missing ranges.
func (t *psnTracker) crossOff(psn uint32) {
	for i := 0; i < len(t.ranges); i++ {
		r := t.ranges[i]
		if !psnIn(psn, r.lo, r.hi) {
			continue
		}
		switch {
		case r.lo == r.hi:
			copy(t.ranges[i:], t.ranges[i+1:])
			t.ranges = t.ranges[:len(t.ranges)-1]
		case psn == r.lo:
			t.ranges[i].lo = (psn + 1) & psnMask
		case psn == r.hi:
			t.ranges[i].hi = (psn - 1) & psnMask
		default:
			// A PSN in the middle: split. The second half keeps the
			// age of the original range, so it goes right after it;
			// when that overflows the limit the oldest range goes.
			second := psnRange{(psn + 1) & psnMask, r.hi}
			t.ranges[i].hi = (psn - 1) & psnMask
			if len(t.ranges) == t.maxRanges {
				copy(t.ranges, t.ranges[1:])
				t.ranges = t.ranges[:len(t.ranges)-1]
				t.dropped++
				i--
			}
			t.ranges = append(t.ranges, psnRange{})
			copy(t.ranges[i+2:], t.ranges[i+1:])
			t.ranges[i+1] = second
		}
		return
	}
}

// unrecovered returns how many PSNs skipped by gaps are still outstanding.
func (t *psnTracker) unrecovered() uint64 {
	var n uint64
	for _, r := range t.ranges {
		n += r.size()
	}
	return n
}

// lastReserved returns the last PSN the requester is known to have used,
// the READ reservation (with the PMTU known now) and its uncertainty
// included. It does not change the tracker.
func (t *psnTracker) lastReserved(pmtu int) uint32 {
	expected, slack := t.expected, t.slack
	if t.readPending {
		span, extra := readSpan(t.readLen, pmtu)
		expected, slack = (t.top+span)&psnMask, extra
	}
	return (expected + slack - 1) & psnMask
}
