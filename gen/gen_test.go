package gen

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// generate writes cfg into memory and returns the bytes, the statistics and
// the generator's own record of every frame.
func generate(t testing.TB, cfg Config) ([]byte, Stats, []frameRecord) {
	t.Helper()
	var buf bytes.Buffer
	var recs []frameRecord
	st, err := write(&buf, cfg, func(r *frameRecord) { recs = append(recs, *r) })
	if err != nil {
		t.Fatalf("Write(%+v): %v", cfg, err)
	}
	return buf.Bytes(), st, recs
}

// effective returns cfg with the defaults Write fills in.
func effective(t testing.TB, cfg Config) Config {
	t.Helper()
	sc, err := lookupScenario(cfg.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	n, err := normalize(cfg, sc)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// cliConfig is the configuration the command line uses for scenario s.
func cliConfig(s string) Config {
	c := DefaultConfig()
	c.Scenario = s
	return c
}

// countWire tallies the frames of a capture the way Stats does, from the
// wire alone.
func countWire(ws []wire) Stats {
	var s Stats
	for _, w := range ws {
		s.Frames++
		s.Bytes += int64(w.Len)
		if w.ECN == 3 {
			s.CEMarked++
		}
		switch {
		case isRequest(w.Op):
			s.Requests++
		case w.Op >= 0x0d && w.Op <= 0x10:
			s.ReadResponses++
		case w.Op == 0x11 && w.Syndrome>>5 == 0:
			s.ACKs++
		case w.Op == 0x11 && w.Syndrome>>5 == 1:
			s.RNRNAKs++
		case w.Op == 0x11 && w.Syndrome == 0x60:
			s.NAKs++
		case w.Op == 0x12:
			s.AtomicACKs++
		case w.Op == 0x64 || w.Op == 0x65:
			s.UDSends++
		case w.Op == 0x81:
			s.CNPs++
		}
	}
	return s
}

// reverse returns the key of the flow that answers flow k: from its
// destination to its source, to the QP that sends on k (which RC does not
// carry on the wire; the generator's Stats know it).
func reverse(t *testing.T, st Stats, k wkey) wkey {
	t.Helper()
	for _, f := range st.Flows {
		if f.Src == k.src && f.Dst == k.dst && f.DestQP == k.qp {
			return wkey{k.dst, k.src, f.SrcQP}
		}
	}
	t.Fatalf("flow %v not in Stats.Flows", k)
	return wkey{}
}

// TestScenarios generates every scenario over IPv4, IPv6 and RoCEv1 and
// checks the frames against the invariants and the scenario's ground truth.
func TestScenarios(t *testing.T) {
	variants := []struct {
		name string
		mod  func(*Config)
	}{
		{"ipv4", func(*Config) {}},
		{"ipv6", func(c *Config) { c.IPv6 = true }},
		{"rocev1", func(c *Config) { c.RoCEv1 = true }},
	}
	for _, sc := range Scenarios() {
		for _, v := range variants {
			t.Run(sc.Name+"/"+v.name, func(t *testing.T) {
				cfg := cliConfig(sc.Name)
				v.mod(&cfg)
				if cfg.RoCEv1 && sc.Name == "ecn-cnp" {
					if _, err := Write(&bytes.Buffer{}, cfg); !errors.Is(err, ErrInvalidConfig) {
						t.Fatalf("ecn-cnp over RoCEv1: err = %v, want ErrInvalidConfig", err)
					}
					return
				}
				data, st, _ := generate(t, cfg)
				ws := readCapture(t, data, false)
				cfg = effective(t, cfg)
				checkCommon(t, cfg, st, ws)
				checkScenario(t, sc.Name, cfg, st, ws)
			})
		}
	}
}

// checkCommon checks what holds for every capture: counts agree with Stats,
// ICRCs are good exactly where not asked bad, addresses and times are sane.
func checkCommon(t *testing.T, cfg Config, st Stats, ws []wire) {
	t.Helper()
	if len(ws) == 0 || len(ws) != st.Frames {
		t.Fatalf("read %d frames, Stats.Frames %d", len(ws), st.Frames)
	}
	got := countWire(ws)
	for _, c := range []struct {
		name      string
		wire, gen int
	}{
		{"requests", got.Requests, st.Requests},
		{"read responses", got.ReadResponses, st.ReadResponses},
		{"ACKs", got.ACKs, st.ACKs},
		{"NAKs", got.NAKs, st.NAKs},
		{"RNR NAKs", got.RNRNAKs, st.RNRNAKs},
		{"atomic ACKs", got.AtomicACKs, st.AtomicACKs},
		{"UD sends", got.UDSends, st.UDSends},
		{"CNPs", got.CNPs, st.CNPs},
		{"CE marks", got.CEMarked, st.CEMarked},
	} {
		if c.wire != c.gen {
			t.Errorf("%s: %d on the wire, %d in Stats", c.name, c.wire, c.gen)
		}
	}
	if got.Bytes != st.Bytes {
		t.Errorf("bytes: %d on the wire, %d in Stats", got.Bytes, st.Bytes)
	}
	var bad []int
	var prev int64
	for i, w := range ws {
		if !w.ICRCGood {
			bad = append(bad, w.Frame)
		}
		if w.TS < prev {
			t.Fatalf("frame %d goes back in time", w.Frame)
		}
		prev = w.TS
		if w.PKey != 0xffff {
			t.Errorf("frame %d: P_Key %#x", w.Frame, w.PKey)
		}
		if cfg.RoCEv1 != w.V1 {
			t.Fatalf("frame %d: RoCEv1 = %v", w.Frame, w.V1)
		}
		want := st.FirstTimestamp
		if i == len(ws)-1 {
			want = st.LastTimestamp
		}
		if !cfg.Nanosecond && !cfg.Pcapng {
			want -= want % 1000 // microsecond pcap
		}
		if (i == 0 || i == len(ws)-1) && w.TS != want {
			t.Errorf("frame %d: time %d disagrees with Stats", w.Frame, w.TS)
		}
		if !w.V1 && w.SrcPort < 0xc000 {
			t.Errorf("frame %d: UDP source port %d outside 49152..65535", w.Frame, w.SrcPort)
		}
		if cfg.IPv6 && !w.Src.Is6() || !cfg.IPv6 && !cfg.RoCEv1 && !w.Src.Is4() {
			t.Errorf("frame %d: address family of %v", w.Frame, w.Src)
		}
		if cfg.RoCEv1 && !w.Src.IsLinkLocalUnicast() {
			t.Errorf("frame %d: GID %v is not link-local", w.Frame, w.Src)
		}
		if w.Op == 0x81 {
			if !w.BECN || w.ECN != 0 || !bytes.Equal(w.Ext, make([]byte, 16)) || w.PayLen != 0 {
				t.Errorf("frame %d: CNP with BECN %v, ECN %d, body %x", w.Frame, w.BECN, w.ECN, w.Ext)
			}
		} else if w.BECN {
			t.Errorf("frame %d: BECN on opcode %#x", w.Frame, w.Op)
		}
	}
	var want []int
	for n := 1; n <= len(ws); n++ {
		if cfg.BadEvery > 0 && n%cfg.BadEvery == 0 || slices.Contains(cfg.BadICRC, n) {
			want = append(want, n)
		}
	}
	if cfg.Scenario == "bad-icrc" && len(cfg.BadICRC) == 0 && cfg.BadEvery == 0 {
		for n := 10; n <= len(ws); n += 10 {
			want = append(want, n)
		}
	}
	if !slices.Equal(bad, want) {
		t.Errorf("frames with a bad ICRC: %v, want %v", bad, want)
	}
	if !slices.Equal(st.BadICRC, want) || st.BadICRCCount != len(want) {
		t.Errorf("Stats.BadICRC %v (%d), want %v", st.BadICRC, st.BadICRCCount, want)
	}
	if cfg.Scenario != "ud" {
		checkRC(t, cfg, st, ws)
	}
}

// checkRC checks the RC exchanges: losses agree with Stats, every ACK and
// response answers a request, MSNs count completed messages, READ responses
// fill exactly the PSNs their request reserved.
func checkRC(t *testing.T, cfg Config, st Stats, ws []wire) {
	t.Helper()
	pmtu := cfg.Payload
	if pmtu == 0 {
		pmtu = DefaultPayload
	}
	flows := rcTrace(ws, pmtu)

	// Losses: the gaps on the wire are exactly Stats.Lost, and a loss is
	// recovered exactly when its PSN shows up later.
	type lost struct {
		k   wkey
		psn uint32
	}
	var wireLost []lost
	recovered := map[lost]int{}
	retrans := 0
	for _, f := range flows {
		retrans += f.retrans
		for _, g := range f.gaps {
			l := lost{f.key, f.psnAt(g)}
			wireLost = append(wireLost, l)
			for u, fr := range f.firstSeen {
				if u == g {
					recovered[l] = fr
				}
			}
		}
	}
	if retrans != st.Retransmitted {
		t.Errorf("retransmissions: %d on the wire, %d in Stats", retrans, st.Retransmitted)
	}
	if len(wireLost) != st.LostCount || len(st.Lost) != st.LostCount {
		t.Fatalf("losses: %d gaps on the wire, Stats %d (%d listed)", len(wireLost), st.LostCount, len(st.Lost))
	}
	unrec := 0
	for _, l := range st.Lost {
		k := lost{wkey{l.Src, l.Dst, l.DestQP}, l.PSN}
		if !slices.Contains(wireLost, k) {
			t.Errorf("Stats loss %v PSN %d is not a gap on the wire", k.k, l.PSN)
		}
		fr, ok := recovered[k]
		if ok != l.Recovered || ok && fr != l.RecoveredFrame {
			t.Errorf("loss %v PSN %d: recovered at frame %d (%v) on the wire, Stats %v at %d",
				k.k, l.PSN, fr, ok, l.Recovered, l.RecoveredFrame)
		}
		if !ok {
			unrec++
		}
	}
	if unrec != st.Unrecovered {
		t.Errorf("unrecovered: %d, Stats %d", unrec, st.Unrecovered)
	}

	// Responses. Requests are indexed by flow and PSN; every ACK names a
	// request PSN that asked for one or ended a READ or atomic.
	type reqInfo struct {
		frame  int
		w      wire
		msgEnd int // message ends at or before this PSN, first copies only
	}
	reqs := map[wkey]map[uint32]reqInfo{}
	ends := map[wkey]int{}
	for i := range ws {
		w := &ws[i]
		if !isRequest(w.Op) {
			continue
		}
		k := keyOf(w)
		if reqs[k] == nil {
			reqs[k] = map[uint32]reqInfo{}
		}
		if _, dup := reqs[k][w.PSN]; !dup {
			if endsMessage(w.Op) {
				ends[k]++
			}
			reqs[k][w.PSN] = reqInfo{frame: w.Frame, w: *w, msgEnd: ends[k]}
		}
	}
	answered := map[wkey]map[uint32]bool{}
	clean := st.LostCount == 0 && st.Retransmitted == 0 && st.RNRNAKs == 0
	for i := range ws {
		w := &ws[i]
		if !isResponse(w.Op) {
			continue
		}
		// The request flow this response answers.
		var rk wkey
		found := false
		for k := range reqs {
			if k.src == w.Dst && k.dst == w.Src && reverse(t, st, k).qp == w.DestQP {
				rk, found = k, true
				break
			}
		}
		if !found {
			t.Fatalf("frame %d: response to QP %#x answers no request flow", w.Frame, w.DestQP)
		}
		if w.Op == 0x11 && w.Syndrome>>5 != 0 {
			// NAKs name the PSN the responder expects: one that was
			// lost or refused.
			continue
		}
		if answered[rk] == nil {
			answered[rk] = map[uint32]bool{}
		}
		if w.Op >= 0x0d && w.Op <= 0x10 {
			// READ responses are checked with their READ (checkReads);
			// the first one answers the request's PSN.
			if w.Op == 0x0d || w.Op == 0x10 {
				answered[rk][w.PSN] = true
			}
			continue
		}
		r, ok := reqs[rk][w.PSN]
		if !ok && lostPSN(st, rk, w.PSN) {
			continue // the responder got it; the capture did not
		}
		if !ok {
			t.Errorf("frame %d: %#x names PSN %d, which no request carried", w.Frame, w.Op, w.PSN)
			continue
		}
		if r.frame > w.Frame {
			t.Errorf("frame %d: answers PSN %d before its request (frame %d)", w.Frame, w.PSN, r.frame)
		}
		switch w.Op {
		case 0x11:
			if !r.w.AckReq && clean {
				t.Errorf("frame %d: ACK of PSN %d, whose request did not ask for one", w.Frame, w.PSN)
			}
		case 0x12:
			if r.w.Op != 0x13 && r.w.Op != 0x14 {
				t.Errorf("frame %d: ATOMIC ACK for opcode %#x", w.Frame, r.w.Op)
			}
		}
		if clean && w.HasAETH && w.MSN != uint32(r.msgEnd) {
			t.Errorf("frame %d: MSN %d, but %d messages end at or before PSN %d", w.Frame, w.MSN, r.msgEnd, w.PSN)
		}
		if clean && answered[rk][w.PSN] {
			t.Errorf("frame %d: PSN %d answered twice", w.Frame, w.PSN)
		}
		answered[rk][w.PSN] = true
	}
	if clean {
		for k, m := range reqs {
			for psn, r := range m {
				asks := r.w.AckReq || r.w.Op == 0x0c || r.w.Op == 0x13 || r.w.Op == 0x14
				if asks && !answered[k][psn] && !isTruncatedBench(cfg, r.frame, len(ws)) {
					t.Errorf("frame %d: request PSN %d asked for an answer and got none", r.frame, psn)
				}
			}
		}
	}
	checkReads(t, st, ws, pmtu)
}

// lostPSN says whether Stats lists PSN psn of flow k as lost.
func lostPSN(st Stats, k wkey, psn uint32) bool {
	for _, l := range st.Lost {
		if l.Src == k.src && l.Dst == k.dst && l.DestQP == k.qp && l.PSN == psn {
			return true
		}
	}
	return false
}

// isTruncatedBench says whether a request is at the end of a bench capture,
// which stops mid-stream by design.
func isTruncatedBench(cfg Config, frame, total int) bool {
	return cfg.Scenario == "bench" && frame > total-16
}

// checkReads checks that each READ request is answered by READ RESPONSE
// packets with consecutive PSNs from the request's, the right opcodes and
// payloads adding up to the DMA length.
func checkReads(t *testing.T, st Stats, ws []wire, pmtu int) {
	t.Helper()
	for i := range ws {
		rq := &ws[i]
		if rq.Op != 0x0c {
			continue
		}
		rk := reverse(t, st, keyOf(rq))
		n := max(1, (int(rq.DMALen)+pmtu-1)/pmtu)
		var got []*wire
		for j := i + 1; j < len(ws) && len(got) < n; j++ {
			w := &ws[j]
			if keyOf(w) == rk && w.Op >= 0x0d && w.Op <= 0x10 && signed24(w.PSN, rq.PSN) >= 0 &&
				signed24(w.PSN, rq.PSN) < int64(n) {
				got = append(got, w)
			}
		}
		if len(got) != n {
			t.Errorf("frame %d: READ of %d bytes (%d packets) got %d responses", rq.Frame, rq.DMALen, n, len(got))
			continue
		}
		total := 0
		for j, w := range got {
			want := uint8(0x0e)
			switch {
			case n == 1:
				want = 0x10
			case j == 0:
				want = 0x0d
			case j == n-1:
				want = 0x0f
			}
			if w.Op != want || w.PSN != (rq.PSN+uint32(j))&0xffffff {
				t.Errorf("frame %d: response %d of READ frame %d: opcode %#x PSN %d, want %#x PSN %d",
					w.Frame, j, rq.Frame, w.Op, w.PSN, want, (rq.PSN+uint32(j))&0xffffff)
			}
			if w.HasAETH != (want != 0x0e) {
				t.Errorf("frame %d: AETH present %v on opcode %#x", w.Frame, w.HasAETH, w.Op)
			}
			if j < n-1 && w.PayLen != pmtu {
				t.Errorf("frame %d: a non-last READ response of %d bytes", w.Frame, w.PayLen)
			}
			total += w.PayLen
		}
		if total != int(rq.DMALen) {
			t.Errorf("frame %d: READ of %d bytes answered with %d", rq.Frame, rq.DMALen, total)
		}
	}
}

// checkScenario checks what is particular to each scenario.
func checkScenario(t *testing.T, name string, cfg Config, st Stats, ws []wire) {
	t.Helper()
	flows := rcTrace(ws, cfg.Payload)
	switch name {
	case "rc-write", "rc-send", "rc-read", "atomic", "bad-icrc", "wrap", "bench":
		if st.LostCount+st.NAKs+st.RNRNAKs+st.Retransmitted != 0 {
			t.Errorf("clean scenario with %d losses, %d NAKs, %d RNR NAKs, %d resends",
				st.LostCount, st.NAKs, st.RNRNAKs, st.Retransmitted)
		}
	}
	ops := map[uint8]int{}
	for _, w := range ws {
		ops[w.Op]++
	}
	need := func(list ...uint8) {
		t.Helper()
		for _, op := range list {
			if ops[op] == 0 {
				t.Errorf("no frame with opcode %#x", op)
			}
		}
	}
	switch name {
	case "rc-write", "bad-icrc":
		need(0x06, 0x07, 0x08, 0x0a, 0x11)
		if st.ACKs*2 >= st.Requests {
			t.Errorf("%d ACKs for %d requests: not coalesced", st.ACKs, st.Requests)
		}
		if len(flows) != cfg.QPs {
			t.Errorf("%d request flows, want %d", len(flows), cfg.QPs)
		}
	case "rc-send":
		need(0x00, 0x01, 0x02, 0x04, 0x05, 0x11)
	case "rc-read":
		need(0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x06, 0x11)
	case "atomic":
		need(0x13, 0x14, 0x12)
		checkAtomics(t, st, ws)
	case "wrap":
		for _, f := range flows {
			if !f.wrapped {
				t.Errorf("flow %v does not cross PSN 0xffffff -> 0", f.key)
			}
		}
	case "loss-gbn":
		checkGoBackN(t, st, ws, flows)
	case "loss-unrecovered":
		if st.LostCount == 0 || st.Unrecovered != st.LostCount || st.NAKs != 0 || st.Retransmitted != 0 {
			t.Errorf("%d lost, %d unrecovered, %d NAKs, %d resends: want losses, all unrecovered, no NAK, no resend",
				st.LostCount, st.Unrecovered, st.NAKs, st.Retransmitted)
		}
	case "rnr":
		checkRNR(t, st, ws)
	case "ecn-cnp":
		checkCNPs(t, st, ws)
	case "ud":
		checkUD(t, ws)
	case "mixed":
		checkMixed(t, cfg, st, ws)
	case "bench":
		switch {
		case st.Frames >= 2 && cfg.Payload == 0:
			need(0x04, 0x11)
		case st.Frames >= benchMsgPkts+2:
			need(0x06, 0x07, 0x08, 0x11)
		}
	}
}

// checkGoBackN checks loss-gbn: each lost PSN is absent until a NAK (PSN
// sequence error) names the first PSN of its gap, then present, and the
// requester resends everything from the NAKed PSN in order.
func checkGoBackN(t *testing.T, st Stats, ws []wire, flows map[wkey]*reqFlow) {
	t.Helper()
	if st.LostCount == 0 || st.Unrecovered != 0 || st.NAKs == 0 {
		t.Fatalf("%d lost, %d unrecovered, %d NAKs: want losses, all recovered, NAKs", st.LostCount, st.Unrecovered, st.NAKs)
	}
	for _, f := range flows {
		rk := reverse(t, st, f.key)
		for _, g := range f.gaps {
			psn := f.psnAt(g)
			reveal := f.gapFrame[g]
			rec := f.firstSeen[g]
			// The gap's first PSN: the NAK names it.
			first := g
			for slices.Contains(f.gaps, first-1) {
				first--
			}
			nakFrame := 0
			for _, w := range ws {
				if w.Frame > reveal && keyOf(&w) == rk && w.Op == 0x11 && w.Syndrome == 0x60 && w.PSN == f.psnAt(first) {
					nakFrame = w.Frame
					break
				}
			}
			switch {
			case nakFrame == 0:
				t.Errorf("flow %v: lost PSN %d (gap seen at frame %d) has no NAK", f.key, psn, reveal)
			case rec == 0 || rec < nakFrame:
				t.Errorf("flow %v: lost PSN %d resent at frame %d, NAK at %d", f.key, psn, rec, nakFrame)
			}
			// Go-back-N: the first resend after the NAK is the NAKed
			// PSN, and the resends go on in order from there.
			var high int64 = -1
			for u := range f.firstSeen {
				if fr := f.firstSeen[u]; fr < nakFrame {
					high = max(high, u)
				}
			}
			want := first
			for _, w := range ws {
				if w.Frame <= nakFrame || keyOf(&w) != f.key {
					continue
				}
				u := first + signed24(w.PSN, f.psnAt(first))
				if want == first && u > high {
					continue // sent before the NAK reached the requester
				}
				if u != want {
					t.Errorf("flow %v: after the NAK at frame %d the requester sent PSN %d, want %d",
						f.key, nakFrame, w.PSN, f.psnAt(want))
					break
				}
				if want++; want > high {
					break
				}
			}
		}
	}
}

// checkRNR checks that each RNR NAK carries timer code 6 and that its PSN
// is sent again no earlier than 0.08 ms later (IBTA table 45), and that
// nothing from that QP is accepted meanwhile.
func checkRNR(t *testing.T, st Stats, ws []wire) {
	t.Helper()
	if st.RNRNAKs == 0 || st.Retransmitted == 0 {
		t.Fatalf("%d RNR NAKs, %d resends", st.RNRNAKs, st.Retransmitted)
	}
	for _, n := range ws {
		if n.Op != 0x11 || n.Syndrome>>5 != 1 {
			continue
		}
		if n.Syndrome != 0x26 {
			t.Errorf("frame %d: RNR NAK syndrome %#x, want 0x26", n.Frame, n.Syndrome)
		}
		resent := false
		for _, w := range ws {
			if w.Frame > n.Frame && w.Src == n.Dst && w.PSN == n.PSN && isRequest(w.Op) {
				if w.TS-n.TS < 80_000 {
					t.Errorf("frame %d: resent %d ns after the RNR NAK at frame %d", w.Frame, w.TS-n.TS, n.Frame)
				}
				resent = true
				break
			}
		}
		if !resent {
			t.Errorf("frame %d: RNR NAKed PSN %d never resent", n.Frame, n.PSN)
		}
	}
}

// checkCNPs checks ecn-cnp: CE marks only on ECT data, CNPs to the marked
// flows' requester QPs with the connection's source port, the first one a
// few microseconds after the first CE mark, and no two within 50 us.
func checkCNPs(t *testing.T, st Stats, ws []wire) {
	t.Helper()
	if st.CEMarked == 0 || st.CNPs == 0 {
		t.Fatalf("%d CE marks, %d CNPs", st.CEMarked, st.CNPs)
	}
	firstCE := map[wkey]int64{}
	port := map[wkey]uint16{}
	lastCNP := map[wkey]int64{}
	for _, w := range ws {
		k := keyOf(&w)
		switch {
		case w.ECN == 3:
			if !isRequest(w.Op) {
				t.Errorf("frame %d: CE on opcode %#x", w.Frame, w.Op)
			}
			rk := reverse(t, st, k)
			if _, ok := firstCE[rk]; !ok {
				firstCE[rk] = w.TS
			}
			port[rk] = w.SrcPort
		case w.Op == 0x81:
			ce, ok := firstCE[k]
			if !ok {
				t.Errorf("frame %d: CNP to QP %#x, whose flow saw no CE", w.Frame, w.DestQP)
				continue
			}
			if w.SrcPort != port[k] {
				t.Errorf("frame %d: CNP from port %d, the connection uses %d", w.Frame, w.SrcPort, port[k])
			}
			if last, ok := lastCNP[k]; ok {
				if w.TS-last < 50_000 {
					t.Errorf("frame %d: CNP %d ns after the previous one", w.Frame, w.TS-last)
				}
			} else if d := w.TS - ce; d < 1_000 || d > 10_000 {
				t.Errorf("frame %d: first CNP %d ns after the first CE", w.Frame, d)
			}
			lastCNP[k] = w.TS
		case isRequest(w.Op) && w.ECN != 2:
			t.Errorf("frame %d: data packet with ECN %d, want ECT(0)", w.Frame, w.ECN)
		}
	}
}

// checkAtomics replays the atomics on the wire: each ATOMIC ACK's original
// value follows from the previous operations on the same address.
func checkAtomics(t *testing.T, st Stats, ws []wire) {
	t.Helper()
	var have bool
	var value uint64
	pending := map[uint32]wire{}
	for _, w := range ws {
		switch w.Op {
		case 0x13, 0x14:
			pending[w.PSN] = w
		case 0x12:
			rq, ok := pending[w.PSN]
			if !ok {
				t.Fatalf("frame %d: ATOMIC ACK for PSN %d without a request", w.Frame, w.PSN)
			}
			delete(pending, w.PSN)
			if have && w.Orig != value {
				t.Errorf("frame %d: original value %d, the replay has %d", w.Frame, w.Orig, value)
			}
			value, have = w.Orig, true
			if rq.Op == 0x14 {
				value += rq.SwapAdd
			} else if rq.Compare == value {
				value = rq.SwapAdd
			}
		}
	}
	if len(pending) != 0 {
		t.Errorf("%d atomics unanswered", len(pending))
	}
}

// checkUD checks the UD datagrams: MADs to QP 1 with the GSI Q_Key from
// QP 1, other datagrams with the data Q_Key, PSNs counting per source QP.
func checkUD(t *testing.T, ws []wire) {
	t.Helper()
	type src struct {
		a  netip.Addr
		qp uint32
	}
	last := map[src]uint32{}
	toGSI, toData := 0, 0
	for _, w := range ws {
		if w.Op != 0x64 && w.Op != 0x65 {
			t.Errorf("frame %d: opcode %#x in a UD capture", w.Frame, w.Op)
			continue
		}
		if w.DestQP == 1 {
			toGSI++
			if w.QKey != 0x80010000 || w.SrcQP != 1 || w.PayLen != 256 {
				t.Errorf("frame %d: MAD with Q_Key %#x from QP %d, %d bytes", w.Frame, w.QKey, w.SrcQP, w.PayLen)
			}
		} else {
			toData++
			if w.QKey != 0x11111111 {
				t.Errorf("frame %d: Q_Key %#x", w.Frame, w.QKey)
			}
		}
		k := src{w.Src, w.SrcQP}
		if p, ok := last[k]; ok && w.PSN != (p+1)&0xffffff {
			t.Errorf("frame %d: PSN %d after %d from the same QP", w.Frame, w.PSN, p)
		}
		last[k] = w.PSN
	}
	if toGSI == 0 || toData == 0 {
		t.Errorf("%d datagrams to QP 1, %d to others", toGSI, toData)
	}
}

// checkMixed checks that the demo has something for every part of the
// analysis.
func checkMixed(t *testing.T, cfg Config, st Stats, ws []wire) {
	t.Helper()
	if cfg.Packets == 0 && (st.Frames < 200 || st.Frames > 400) {
		t.Errorf("%d frames, want 200..400", st.Frames)
	}
	if st.NAKs == 0 || st.RNRNAKs == 0 || st.UDSends == 0 || st.Retransmitted == 0 || st.ReadResponses == 0 {
		t.Errorf("NAKs %d, RNR NAKs %d, UD %d, resends %d, READ responses %d: want all",
			st.NAKs, st.RNRNAKs, st.UDSends, st.Retransmitted, st.ReadResponses)
	}
	if !cfg.RoCEv1 && (st.CEMarked == 0 || st.CNPs == 0) {
		t.Errorf("%d CE marks, %d CNPs", st.CEMarked, st.CNPs)
	}
	// The second host pair: all its QPs on one source port.
	var shared netip.Addr
	for _, w := range ws {
		if s := w.Src.String(); strings.HasSuffix(s, ".3") || strings.HasSuffix(s, "::3") || strings.HasSuffix(s, ":3") {
			shared = w.Src
			break
		}
	}
	if !shared.IsValid() {
		t.Fatalf("no frame from the third host")
	}
	ports, qps := map[uint16]bool{}, map[uint32]bool{}
	for _, w := range ws {
		if w.Src == shared {
			ports[w.SrcPort] = true
			qps[w.DestQP] = true
		}
	}
	if len(qps) < 2 || len(ports) != 1 {
		t.Errorf("third host: %d QPs on %d ports, want several QPs on one port", len(qps), len(ports))
	}
}

// TestDeterminism checks that a seed fixes the bytes and that another seed
// changes them.
func TestDeterminism(t *testing.T) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			cfg := cliConfig(sc.Name)
			a, _, _ := generate(t, cfg)
			b, _, _ := generate(t, cfg)
			if !bytes.Equal(a, b) {
				t.Fatal("the same seed wrote different bytes")
			}
			cfg.Seed = 2
			c, _, _ := generate(t, cfg)
			if bytes.Equal(a, c) {
				t.Fatal("seeds 1 and 2 wrote the same bytes")
			}
		})
	}
}

// TestBadICRCOptions checks --bad-icrc and --bad-every on top of scenarios.
func TestBadICRCOptions(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"list", Config{Scenario: "rc-write", Seed: 3, BadICRC: []int{17, 3, 3, 40}}},
		{"every", Config{Scenario: "rc-send", Seed: 3, BadEvery: 7}},
		{"both", Config{Scenario: "ud", Seed: 3, BadEvery: 5, BadICRC: []int{1, 2}}},
		{"bad-icrc list", Config{Scenario: "bad-icrc", Seed: 3, BadICRC: []int{2}}},
		{"bench every", Config{Scenario: "bench", Seed: 3, Packets: 300, BadEvery: 13}},
		{"beyond the end", Config{Scenario: "atomic", Seed: 3, BadICRC: []int{5, 100000}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, st, _ := generate(t, tc.cfg)
			cfg := effective(t, tc.cfg)
			checkCommon(t, cfg, st, readCapture(t, data, false))
		})
	}
}

// TestOutputFormats checks pcapng and nanosecond pcap: the same frames as
// the microsecond pcap, with exact times.
func TestOutputFormats(t *testing.T) {
	base := cliConfig("mixed")
	pcap, _, recs := generate(t, base)
	ref := readCapture(t, pcap, false)
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		ng   bool
	}{
		{"nanosecond", func(c *Config) { c.Nanosecond = true }, false},
		{"pcapng", func(c *Config) { c.Pcapng = true }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mod(&cfg)
			data, st, _ := generate(t, cfg)
			ws := readCapture(t, data, tc.ng)
			checkCommon(t, effective(t, cfg), st, ws)
			if len(ws) != len(ref) {
				t.Fatalf("%d frames, the pcap has %d", len(ws), len(ref))
			}
			for i := range ws {
				if ws[i].TS != recs[i].Time {
					t.Fatalf("frame %d: time %d, generated %d", i+1, ws[i].TS, recs[i].Time)
				}
				if ws[i].TS/1000 != ref[i].TS/1000 {
					t.Fatalf("frame %d: time %d, the microsecond pcap says %d", i+1, ws[i].TS, ref[i].TS)
				}
				w, r := ws[i], ref[i]
				w.TS, r.TS = 0, 0
				w.Ext, r.Ext = nil, nil
				if fmt.Sprint(w) != fmt.Sprint(r) {
					t.Fatalf("frame %d differs:\n%+v\n%+v", i+1, w, r)
				}
			}
		})
	}
}

// TestOptions checks the options that change the traffic's shape.
func TestOptions(t *testing.T) {
	t.Run("single port", func(t *testing.T) {
		cfg := cliConfig("rc-write")
		cfg.SrcPorts = SrcPortsSingle
		data, st, _ := generate(t, cfg)
		ws := readCapture(t, data, false)
		checkCommon(t, effective(t, cfg), st, ws)
		ports := map[uint16]bool{}
		for _, w := range ws {
			ports[w.SrcPort] = true
		}
		if len(ports) != 1 {
			t.Errorf("%d source ports, want 1", len(ports))
		}
	})
	t.Run("spread ports", func(t *testing.T) {
		cfg := cliConfig("rc-write")
		cfg.QPs = 16
		data, st, _ := generate(t, cfg)
		ws := readCapture(t, data, false)
		byQP := map[uint32]uint16{}
		owners := map[uint16]map[uint32]bool{}
		for _, w := range ws {
			if !isRequest(w.Op) {
				continue
			}
			if p, ok := byQP[w.DestQP]; ok && p != w.SrcPort {
				t.Errorf("QP %#x on ports %d and %d", w.DestQP, p, w.SrcPort)
			}
			byQP[w.DestQP] = w.SrcPort
			if owners[w.SrcPort] == nil {
				owners[w.SrcPort] = map[uint32]bool{}
			}
			owners[w.SrcPort][w.DestQP] = true
		}
		if len(byQP) != 16 || len(owners) != 16 {
			t.Errorf("%d QPs on %d ports, want 16 on 16", len(byQP), len(owners))
		}
		// ACKs travel on their connection's port.
		for _, w := range ws {
			if w.Op == 0x11 {
				rk := reverse(t, st, keyOf(&w))
				if byQP[rk.qp] != w.SrcPort {
					t.Errorf("frame %d: ACK on port %d, its connection uses %d", w.Frame, w.SrcPort, byQP[rk.qp])
				}
			}
		}
	})
	t.Run("no ECN", func(t *testing.T) {
		cfg := cliConfig("rc-write")
		cfg.ECN = false
		data, _, _ := generate(t, cfg)
		for _, w := range readCapture(t, data, false) {
			if w.ECN != 0 {
				t.Fatalf("frame %d: ECN %d with ECN off", w.Frame, w.ECN)
			}
		}
	})
	t.Run("payload", func(t *testing.T) {
		for _, p := range []int{256, 4096, 9000} {
			cfg := cliConfig("rc-read")
			cfg.Payload = p
			data, st, _ := generate(t, cfg)
			ws := readCapture(t, data, false)
			checkCommon(t, effective(t, cfg), st, ws)
			biggest := 0
			for _, w := range ws {
				biggest = max(biggest, w.PayLen)
			}
			if biggest != p {
				t.Errorf("payload %d: largest packet payload %d", p, biggest)
			}
		}
	})
	t.Run("qps", func(t *testing.T) {
		cfg := cliConfig("rc-send")
		cfg.QPs = 7
		data, _, _ := generate(t, cfg)
		if n := len(rcTrace(readCapture(t, data, false), DefaultPayload)); n != 7 {
			t.Errorf("%d request flows, want 7", n)
		}
	})
}

// TestPacketBudget checks that Packets sizes the scenarios: roughly for the
// simulated ones, exactly for bench, and that losses keep being recovered
// in a long go-back-N run.
func TestPacketBudget(t *testing.T) {
	tests := []struct {
		scenario string
		packets  int
		payload  int
		exact    bool
	}{
		{"rc-write", 3000, 0, false},
		{"loss-gbn", 3000, 0, false},
		{"ecn-cnp", 1500, 0, false},
		{"ud", 800, 0, false},
		{"mixed", 1200, 0, false},
		{"bench", 2500, 1024, true},
		{"bench", 2501, 0, true},
		{"bench", 1, 0, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s-%d-%d", tc.scenario, tc.packets, tc.payload), func(t *testing.T) {
			cfg := cliConfig(tc.scenario)
			cfg.Packets, cfg.Payload = tc.packets, tc.payload
			data, st, _ := generate(t, cfg)
			ws := readCapture(t, data, false)
			cfg = effective(t, cfg)
			checkCommon(t, cfg, st, ws)
			checkScenario(t, tc.scenario, cfg, st, ws)
			if tc.exact && st.Frames != tc.packets {
				t.Errorf("%d frames, want exactly %d", st.Frames, tc.packets)
			}
			if !tc.exact && (st.Frames < tc.packets || st.Frames > tc.packets*13/10) {
				t.Errorf("%d frames for a budget of %d", st.Frames, tc.packets)
			}
		})
	}
}

// TestConfigErrors checks that bad configurations are refused with the
// sentinel errors.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
		text string
	}{
		{"unknown scenario", Config{Scenario: "nope"}, ErrUnknownScenario, "rc-write, rc-send"},
		{"empty scenario", Config{}, ErrUnknownScenario, "mixed"},
		{"negative packets", Config{Scenario: "rc-write", Packets: -1}, ErrInvalidConfig, "packets"},
		{"payload not multiple of 4", Config{Scenario: "rc-write", Payload: 1001}, ErrInvalidConfig, "multiple of 4"},
		{"payload too big", Config{Scenario: "rc-write", Payload: MaxPayload + 4}, ErrInvalidConfig, "payload"},
		{"payload negative", Config{Scenario: "rc-write", Payload: -4}, ErrInvalidConfig, "payload"},
		{"payload too small for MADs", Config{Scenario: "ud", Payload: 128}, ErrInvalidConfig, "at least 256"},
		{"too many QPs", Config{Scenario: "rc-write", QPs: MaxQPs + 1}, ErrInvalidConfig, "qps"},
		{"negative bad-every", Config{Scenario: "rc-write", BadEvery: -1}, ErrInvalidConfig, "bad-every"},
		{"frame 0", Config{Scenario: "rc-write", BadICRC: []int{0}}, ErrInvalidConfig, "bad-icrc"},
		{"ipv6 and rocev1", Config{Scenario: "rc-write", IPv6: true, RoCEv1: true}, ErrInvalidConfig, "exclude"},
		{"ecn over rocev1", Config{Scenario: "ecn-cnp", RoCEv1: true}, ErrInvalidConfig, "RoCEv2"},
		{"src ports", Config{Scenario: "rc-write", SrcPorts: "many"}, ErrInvalidConfig, "src-ports"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := Write(&buf, tc.cfg)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.want, tc.text)
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written before the error", buf.Len())
			}
			if verr := Validate(tc.cfg); verr == nil || verr.Error() != err.Error() {
				t.Errorf("Validate: %v, Write: %v", verr, err)
			}
		})
	}
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

var errDisk = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, errDisk
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWriteError checks that an error of the writer reaches the caller.
func TestWriteError(t *testing.T) {
	for _, n := range []int{0, 10, 100000} {
		_, err := Write(&failWriter{n: n}, Config{Scenario: "mixed", Seed: 1})
		if !errors.Is(err, errDisk) {
			t.Errorf("failing after %d bytes: err = %v", n, err)
		}
	}
}

// TestValidateAccepts checks that Validate accepts every scenario's
// command-line configuration.
func TestValidateAccepts(t *testing.T) {
	for _, s := range ScenarioNames() {
		if err := Validate(cliConfig(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// TestScenarioList checks the scenario descriptions.
func TestScenarioList(t *testing.T) {
	want := []string{"rc-write", "rc-send", "rc-read", "loss-gbn", "loss-unrecovered", "rnr", "wrap",
		"ecn-cnp", "ud", "atomic", "bad-icrc", "mixed", "bench"}
	if got := ScenarioNames(); !slices.Equal(got, want) {
		t.Fatalf("scenarios %v, want %v", got, want)
	}
	for _, s := range Scenarios() {
		if s.Description == "" || s.Expected == "" || strings.Contains(s.Description, "\n") {
			t.Errorf("%s: description %q, expected %q", s.Name, s.Description, s.Expected)
		}
	}
}
