package analyze

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"roce-inspect/dissect"
	"roce-inspect/layers"
)

// Report is the result of an analysis, laid out for encoding/json. Apart
// from packets.total, packets.not_roce and packets.filtered, every counter
// covers the RoCE packets kept by the filters of Options.
type Report struct {
	// SchemaVersion is the version of this layout, 1. It changes when a
	// field changes meaning or goes away; new fields may appear without a
	// change.
	SchemaVersion int `json:"schema_version"`
	// Packets counts the frames by kind.
	Packets PacketCounts `json:"packets"`
	// MalformedReasons counts the malformed RoCE packets by what the
	// dissector found wrong (for example "BTH shorter than 12 bytes").
	// Malformed packets are left out of every other analysis.
	MalformedReasons map[string]uint64 `json:"malformed_reasons"`
	// ICRC counts the invariant CRC verdicts of all RoCE packets kept by
	// the filters, malformed ones included.
	ICRC ICRCCounts `json:"icrc"`
	// ECN counts the ECN codepoints of the well-formed RoCEv2 packets.
	ECN ECNCounts `json:"ecn"`
	// CNP is the number of Congestion Notification Packets (opcode 0x81).
	CNP uint64 `json:"cnp"`
	// FECN is the number of packets with the BTH FECN bit set.
	FECN uint64 `json:"fecn"`
	// BECN is the number of packets with the BTH BECN bit set.
	BECN uint64 `json:"becn"`
	// FirstTS is the time of the first RoCE packet, RFC 3339 in UTC with
	// nanoseconds; empty when there was none.
	FirstTS string `json:"first_ts"`
	// LastTS is the time of the last RoCE packet, in the same format.
	LastTS string `json:"last_ts"`
	// SpanSeconds is LastTS minus FirstTS in seconds.
	SpanSeconds float64 `json:"span_seconds"`
	// Bytes is the length on the wire of all RoCE packets, malformed ones
	// included.
	Bytes uint64 `json:"bytes"`
	// Gbps is Bytes over SpanSeconds in gigabits per second, 0 when the
	// span is 0.
	Gbps float64 `json:"gbps"`
	// PMTU is the path MTU in bytes used to count the PSNs of RDMA READs:
	// the configured one, else the largest learned between any two hosts
	// (from FIRST and MIDDLE packets, whose payload is one PMTU), else 0.
	PMTU int `json:"pmtu"`
	// FlowCount is the number of flows (the length of Flows).
	FlowCount int `json:"flow_count"`
	// Flows lists the flows by bytes, largest first, then by source
	// address, destination address, destination QP and version.
	Flows []FlowReport `json:"flows"`
	// Congestion has one entry per flow that carried CE-marked packets, in
	// the order of Flows.
	Congestion []CongestionReport `json:"congestion"`
	// ECMP describes how the UDP source ports of RoCEv2 flows spread them
	// over equal-cost paths.
	ECMP ECMPReport `json:"ecmp"`
	// Warnings are observations in plain words that do not by themselves
	// mean data was lost or corrupted (congestion, poor ECMP spread,
	// packets whose ICRC could not be checked).
	Warnings []string `json:"warnings"`
	// Problems are signs, in plain words, that packets were lost,
	// resent, refused or corrupted: PSN gaps, retransmissions, losses never
	// repaired, NAKs, bad ICRCs, malformed packets. Empty when clean.
	Problems []string `json:"problems"`

	index map[string]int // Flows by key, built on demand
}

// PacketCounts counts frames by kind.
type PacketCounts struct {
	// Total is every frame given to the analyzer: RoCE, not RoCE, and
	// filtered out.
	Total uint64 `json:"total"`
	// RoCE is the RoCE packets kept by the filters, malformed ones
	// included.
	RoCE uint64 `json:"roce"`
	// RoCEv1 is the RoCE packets carried in a GRH (Ethertype 0x8915).
	RoCEv1 uint64 `json:"rocev1"`
	// RoCEv2 is the RoCE packets carried in UDP (destination port 4791).
	RoCEv2 uint64 `json:"rocev2"`
	// Malformed is the RoCE packets the dissector could not fully decode.
	Malformed uint64 `json:"malformed"`
	// NotRoCE is the frames that are not RoCE.
	NotRoCE uint64 `json:"not_roce"`
	// Filtered is the RoCE packets left out by the QP or host filters.
	Filtered uint64 `json:"filtered"`
}

// ICRCCounts counts invariant CRC verdicts.
type ICRCCounts struct {
	// Good is the packets whose ICRC matches their content.
	Good uint64 `json:"good"`
	// Bad is the packets whose ICRC does not match: corrupted, or
	// rewritten by the capture point.
	Bad uint64 `json:"bad"`
	// Unverifiable is the packets cut by the capture's snap length, whose
	// ICRC cannot be computed.
	Unverifiable uint64 `json:"unverifiable"`
}

// ECNCounts counts the ECN codepoints of RoCEv2 packets (RFC 3168).
type ECNCounts struct {
	// NotECT is codepoint 00: the sender does not take part in ECN.
	NotECT uint64 `json:"not_ect"`
	// ECT0 is codepoint 10: ECN-capable, the usual RoCE marking.
	ECT0 uint64 `json:"ect0"`
	// ECT1 is codepoint 01: ECN-capable.
	ECT1 uint64 `json:"ect1"`
	// CE is codepoint 11: a switch found its queue congested.
	CE uint64 `json:"ce"`
}

// FlowReport describes one flow: the packets from one address to another
// addressed to one destination QP.
type FlowReport struct {
	// SrcIP is the source address (the source GID for RoCEv1).
	SrcIP netip.Addr `json:"src_ip"`
	// DstIP is the destination address (the destination GID for RoCEv1).
	DstIP netip.Addr `json:"dst_ip"`
	// DestQP is the destination queue pair number (24 bits).
	DestQP uint32 `json:"dest_qp"`
	// Version is the RoCE version, 1 or 2.
	Version int `json:"version"`
	// Transport is the transport service of the flow's opcodes: RC, UC,
	// RD, UD, XRC, UNKNOWN (reserved opcode ranges), or CNP for a flow
	// that carried only CNPs. Several services on one flow are joined with
	// "+" in that order (CNPs then left out), for example "RC+UD".
	Transport string `json:"transport"`
	// Packets is the number of packets.
	Packets uint64 `json:"packets"`
	// Bytes is their length on the wire.
	Bytes uint64 `json:"bytes"`
	// PayloadBytes is their transport payload (pad bytes included).
	PayloadBytes uint64 `json:"payload_bytes"`
	// Messages is the number of messages: packets that end one (a LAST
	// or ONLY packet: single-packet requests such as READ REQUEST,
	// atomics, FLUSH and ATOMIC WRITE count, and so do READ RESPONSE LAST
	// and ONLY; ACKs and CNPs do not).
	Messages uint64 `json:"messages"`
	// SrcPorts lists the UDP source ports of a RoCEv2 flow, ascending, at
	// most 16; empty for RoCEv1.
	SrcPorts []uint16 `json:"src_ports"`
	// SrcPortsMore is how many more distinct source ports the flow used.
	SrcPortsMore int `json:"src_ports_more"`
	// Opcodes counts the packets by opcode name, such as "RC_SEND_FIRST",
	// "UD_SEND_ONLY" or "CNP" ("UNKNOWN_0xNN" for undefined opcodes).
	Opcodes map[string]uint64 `json:"opcodes"`
	// FirstTS is the time of the flow's first packet (RFC 3339, UTC,
	// nanoseconds).
	FirstTS string `json:"first_ts"`
	// LastTS is the time of its last packet.
	LastTS string `json:"last_ts"`
	// DurationSeconds is LastTS minus FirstTS in seconds.
	DurationSeconds float64 `json:"duration_seconds"`
	// Gbps is Bytes over DurationSeconds in gigabits per second, 0 for a
	// flow of one instant.
	Gbps float64 `json:"gbps"`
	// ICRC counts the flow's ICRC verdicts.
	ICRC ICRCCounts `json:"icrc"`
	// ECN counts the flow's ECN codepoints (RoCEv2 only).
	ECN ECNCounts `json:"ecn"`
	// ECNCE is the number of CE-marked packets (ECN.CE, repeated for
	// convenience).
	ECNCE uint64 `json:"ecn_ce"`
	// CNP is the number of CNPs received on this flow: sent to this QP to
	// tell it to slow down.
	CNP uint64 `json:"cnp"`
	// FECN is the number of packets with the BTH FECN bit set.
	FECN uint64 `json:"fecn"`
	// BECN is the number of packets with the BTH BECN bit set.
	BECN uint64 `json:"becn"`
	// PSN is the request PSN analysis, present for RC, UC and XRC flows
	// and null for the others.
	PSN *PSNReport `json:"psn"`
	// NAKs counts the negative acknowledgements the flow carried (they
	// refuse requests of the flow in the opposite direction).
	NAKs NAKCounts `json:"naks"`

	key string
}

// PSNReport is the analysis of a flow's request PSNs. Responses (ACKs, READ
// responses) carry the requester's PSNs and ACKs are coalesced, so only
// requests are analyzed. PSNs are 24-bit and wrap through 0.
type PSNReport struct {
	// Requests is the number of request packets analyzed.
	Requests uint64 `json:"requests"`
	// Gaps is the number of forward jumps: a request arriving with a PSN
	// beyond the one expected (last PSN + 1, or + the PSNs an RDMA READ
	// reserved, one per PMTU of its DMA length; when no PMTU is known, a
	// jump after a READ of up to ceil(length/256) PSNs is not a gap).
	Gaps uint64 `json:"gaps"`
	// Missing is the number of PSNs skipped by those jumps.
	Missing uint64 `json:"missing"`
	// Retransmitted is the number of requests arriving behind the expected
	// PSN: resent after a NAK (go-back-N), a timeout or an RNR NAK, or
	// duplicated by the network.
	Retransmitted uint64 `json:"retransmitted"`
	// Unrecovered is the number of skipped PSNs that never showed up later
	// in the capture. It is a lower bound when RangesDropped is not 0.
	Unrecovered uint64 `json:"unrecovered"`
	// RangesDropped is how many ranges of missing PSNs were forgotten
	// because more than Options.MaxMissingRanges were outstanding.
	RangesDropped uint64 `json:"ranges_dropped"`
	// First is the PSN of the first request seen; null when the flow had
	// no requests (only responses).
	First *uint32 `json:"first"`
	// Last is the most advanced request PSN seen (retransmissions behind
	// it do not move it back); null when the flow had no requests.
	Last *uint32 `json:"last"`
}

// NAKCounts counts negative acknowledgements by AETH syndrome.
type NAKCounts struct {
	// SeqErr is NAK code 0, PSN sequence error: the responder saw a PSN
	// beyond the one it expected and asks for a resend from it.
	SeqErr uint64 `json:"seq_err"`
	// RNR is the Receiver Not Ready NAKs: no receive buffer was posted.
	RNR uint64 `json:"rnr"`
	// Other is the other NAK codes (invalid request, remote access error,
	// remote operational error, invalid RD request, reserved).
	Other uint64 `json:"other"`
}

// CongestionReport follows one flow that carried CE-marked packets to the
// CNPs its receiver sent back to the sender's QP.
type CongestionReport struct {
	// Flow is the key of the CE-marked flow (see FlowReport.Key).
	Flow string `json:"flow"`
	// SrcIP is the sender of the CE-marked flow.
	SrcIP netip.Addr `json:"src_ip"`
	// DstIP is its receiver.
	DstIP netip.Addr `json:"dst_ip"`
	// DestQP is the receiver's QP.
	DestQP uint32 `json:"dest_qp"`
	// CE is the number of CE-marked packets.
	CE uint64 `json:"ce"`
	// FirstCETS is the time of the first CE-marked packet.
	FirstCETS string `json:"first_ce_ts"`
	// CNPMatched is true when the sender's QP was identified: from the
	// ACKs and READ responses going back to it, whose PSNs fall in this
	// flow's request PSNs, or because this is the only flow between the
	// two hosts and only one QP of the sender received CNPs. When false
	// the CNPs cannot be attributed and CNPsBack is 0.
	CNPMatched bool `json:"cnp_matched"`
	// SenderQP is the sender's QP, when matched.
	SenderQP *uint32 `json:"sender_qp"`
	// CNPsBack is the number of CNPs sent to the sender's QP.
	CNPsBack uint64 `json:"cnps_back"`
	// CNPsToSenderHost is the number of CNPs from the receiver to the
	// sender on any QP, for context when the match fails.
	CNPsToSenderHost uint64 `json:"cnps_to_sender_host"`
	// FirstCEToCNPMicros is the time in microseconds from the first CE
	// mark to the first CNP to the sender's QP at or after it; null when
	// unmatched or when no such CNP could be identified.
	FirstCEToCNPMicros *float64 `json:"first_ce_to_cnp_us"`
}

// ECMPReport measures how well the UDP source ports of the RoCEv2 flows let
// equal-cost multipath routing spread them: switches hash the 5-tuple
// (addresses, protocol, ports) to pick a path, and RoCE's destination port
// is always 4791, so the source port is the only entropy.
type ECMPReport struct {
	// Flows is the number of RoCEv2 flows.
	Flows int `json:"flows"`
	// DistinctSrcPorts is the number of distinct UDP source ports.
	DistinctSrcPorts int `json:"distinct_src_ports"`
	// FlowEntropyBits is the Shannon entropy (base 2) of the source port
	// distribution over flows, each (flow, source port) pair counted once.
	FlowEntropyBits float64 `json:"flow_entropy_bits"`
	// MaxEntropyBits is log2(Flows): the entropy when every flow has a
	// port of its own.
	MaxEntropyBits float64 `json:"max_entropy_bits"`
	// CollidingFlows is the number of flows that share their 5-tuple with
	// another flow, which no hash can separate.
	CollidingFlows int `json:"colliding_flows"`
	// Paths is the number of equal-cost paths simulated.
	Paths int `json:"paths"`
	// PathFlows counts, per simulated path, the flows hashed onto it (a
	// flow that used several source ports counts once per port). The path
	// is the CRC-32 (IEEE) of source address (4 or 16 bytes), destination
	// address, protocol 17, source and destination port (big-endian),
	// modulo Paths.
	PathFlows []int `json:"path_flows"`
	// PathBytes is the wire bytes per simulated path.
	PathBytes []uint64 `json:"path_bytes"`
	// PathImbalance is the bytes of the busiest path over the mean of all
	// paths: 1 is a perfect spread, Paths means everything on one path; 0
	// without traffic.
	PathImbalance float64 `json:"path_imbalance"`
	// HostPairs has the same measures per (source, destination) pair,
	// ordered by source then destination.
	HostPairs []HostPairECMP `json:"host_pairs"`
}

// HostPairECMP is the ECMP measure of the RoCEv2 flows from one host to
// another.
type HostPairECMP struct {
	// SrcIP is the source address.
	SrcIP netip.Addr `json:"src_ip"`
	// DstIP is the destination address.
	DstIP netip.Addr `json:"dst_ip"`
	// Flows is the number of flows (QPs) from SrcIP to DstIP.
	Flows int `json:"flows"`
	// DistinctSrcPorts is the number of distinct UDP source ports.
	DistinctSrcPorts int `json:"distinct_src_ports"`
	// FlowEntropyBits is the entropy of the source ports over the flows.
	FlowEntropyBits float64 `json:"flow_entropy_bits"`
	// MaxEntropyBits is log2(Flows).
	MaxEntropyBits float64 `json:"max_entropy_bits"`
	// CollidingFlows is the flows sharing their 5-tuple with another.
	CollidingFlows int `json:"colliding_flows"`
	// Bytes is the wire bytes of these flows.
	Bytes uint64 `json:"bytes"`
	// PathImbalance is the bytes of the busiest simulated path over the
	// mean, for these flows alone.
	PathImbalance float64 `json:"path_imbalance"`
}

// Key returns a stable string naming the flow, the same in every report of
// a capture: "src > dst QP n v2".
func (f *FlowReport) Key() string {
	if f.key == "" {
		f.key = flowKeyString(f.SrcIP, f.DstIP, f.DestQP, f.Version)
	}
	return f.key
}

func flowKeyString(src, dst netip.Addr, qp uint32, version int) string {
	return src.String() + " > " + dst.String() + " QP " + fmt.Sprintf("0x%06x", qp) +
		" v" + strconv.Itoa(version)
}

// Flow returns the flow with the given key, for comparing the counters of
// two reports (live mode rates).
func (r *Report) Flow(key string) (*FlowReport, bool) {
	if r.index == nil {
		r.index = make(map[string]int, len(r.Flows))
		for i := range r.Flows {
			r.index[r.Flows[i].Key()] = i
		}
	}
	i, ok := r.index[key]
	if !ok {
		return nil, false
	}
	return &r.Flows[i], true
}

// Clean reports whether the capture shows no sign of loss, retransmission,
// refusal or corruption (Problems is empty).
func (r *Report) Clean() bool { return len(r.Problems) == 0 }

// HasProblems is the opposite of Clean, for templates and callers that read
// better that way.
func (r *Report) HasProblems() bool { return !r.Clean() }

// formatTS formats nanoseconds since the epoch as RFC 3339 in UTC with all
// nine fractional digits, so that timestamps line up and sort as text.
func formatTS(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z07:00")
}

// gbps returns bytes over ns nanoseconds in gigabits per second.
func gbps(bytes uint64, ns int64) float64 {
	if ns <= 0 {
		return 0
	}
	return float64(bytes) * 8 / float64(ns)
}

// Report builds the report of everything added so far. It does not change
// the analyzer: it may be called any number of times, between Adds too.
func (a *Analyzer) Report() *Report {
	r := &Report{
		SchemaVersion: schemaVersion,
		Packets: PacketCounts{
			Total: a.total, RoCE: a.roce, RoCEv1: a.v1, RoCEv2: a.v2,
			Malformed: a.malformed, NotRoCE: a.notRoCE, Filtered: a.filtered,
		},
		MalformedReasons: make(map[string]uint64, len(a.reasons)),
		ICRC:             icrcCounts(a.icrc),
		ECN:              ecnCounts(a.ecn),
		CNP:              a.cnp,
		FECN:             a.fecn,
		BECN:             a.becn,
		Bytes:            a.bytes,
		Flows:            make([]FlowReport, 0, len(a.flows)),
		Congestion:       []CongestionReport{},
		Warnings:         []string{},
		Problems:         []string{},
	}
	for k, v := range a.reasons {
		r.MalformedReasons[k] = v
	}
	if a.tsSeen {
		r.FirstTS, r.LastTS = formatTS(a.first), formatTS(a.last)
		r.SpanSeconds = float64(a.last-a.first) / 1e9
		r.Gbps = gbps(a.bytes, a.last-a.first)
	}
	r.PMTU = a.opt.PMTU
	if r.PMTU == 0 {
		for _, hp := range a.pairs {
			r.PMTU = max(r.PMTU, hp.pmtu)
		}
	}

	flows := a.sortedFlows()
	for _, f := range flows {
		r.Flows = append(r.Flows, a.flowReport(f))
	}
	r.FlowCount = len(r.Flows)
	r.Congestion = a.congestion(flows)
	var ecmpWarnings []string
	r.ECMP, ecmpWarnings = a.ecmp()
	a.judge(r, ecmpWarnings)
	return r
}

// sortedFlows returns the flows by bytes descending, then by key.
func (a *Analyzer) sortedFlows() []*flow {
	flows := make([]*flow, 0, len(a.flows))
	for _, f := range a.flows {
		flows = append(flows, f)
	}
	slices.SortFunc(flows, func(x, y *flow) int {
		if c := cmp.Compare(y.bytes, x.bytes); c != 0 {
			return c
		}
		return compareKeys(x.key, y.key)
	})
	return flows
}

// compareKeys orders flow keys by source, destination, QP and version.
func compareKeys(x, y flowKey) int {
	if c := x.src.Compare(y.src); c != 0 {
		return c
	}
	if c := x.dst.Compare(y.dst); c != 0 {
		return c
	}
	if c := cmp.Compare(x.qp, y.qp); c != 0 {
		return c
	}
	return cmp.Compare(x.version, y.version)
}

func icrcCounts(c [3]uint64) ICRCCounts {
	return ICRCCounts{
		Good:         c[dissect.ICRCGood],
		Bad:          c[dissect.ICRCBad],
		Unverifiable: c[dissect.ICRCUnverifiable],
	}
}

func ecnCounts(c [4]uint64) ECNCounts {
	return ECNCounts{
		NotECT: c[dissect.ECNNotECT],
		ECT0:   c[dissect.ECNECT0],
		ECT1:   c[dissect.ECNECT1],
		CE:     c[dissect.ECNCE],
	}
}

// flowReport renders the state of one flow.
func (a *Analyzer) flowReport(f *flow) FlowReport {
	fr := FlowReport{
		SrcIP:           f.key.src,
		DstIP:           f.key.dst,
		DestQP:          f.key.qp,
		Version:         int(f.key.version),
		Transport:       flowTransport(f.transports),
		Packets:         f.packets,
		Bytes:           f.bytes,
		PayloadBytes:    f.payload,
		Messages:        f.messages,
		SrcPorts:        []uint16{},
		Opcodes:         make(map[string]uint64, len(f.ops)),
		FirstTS:         formatTS(f.first),
		LastTS:          formatTS(f.last),
		DurationSeconds: float64(f.last-f.first) / 1e9,
		Gbps:            gbps(f.bytes, f.last-f.first),
		ICRC:            icrcCounts(f.icrc),
		ECN:             ecnCounts(f.ecn),
		ECNCE:           f.ecn[dissect.ECNCE],
		CNP:             f.cnp,
		FECN:            f.fecn,
		BECN:            f.becn,
		NAKs:            NAKCounts{SeqErr: f.nakSeq, RNR: f.nakRNR, Other: f.nakOther},
	}
	fr.key = flowKeyString(fr.SrcIP, fr.DstIP, fr.DestQP, fr.Version)
	for _, oc := range f.ops {
		fr.Opcodes[oc.op.String()] += oc.n
	}
	ports := f.srcPorts()
	if len(ports) > maxListedPorts {
		fr.SrcPortsMore = len(ports) - maxListedPorts
		ports = ports[:maxListedPorts]
	}
	fr.SrcPorts = append(fr.SrcPorts, ports...)
	if f.psnFlow() {
		t := &f.psn
		pr := &PSNReport{
			Requests:      t.requests,
			Gaps:          t.gaps,
			Missing:       t.missing,
			Retransmitted: t.retrans,
			Unrecovered:   t.unrecovered(),
			RangesDropped: t.dropped,
		}
		if t.started {
			first, last := t.first, t.top
			pr.First, pr.Last = &first, &last
		}
		fr.PSN = pr
	}
	return fr
}

// psnFlow reports whether the flow is of a transport whose requests get
// PSN analysis.
func (f *flow) psnFlow() bool {
	const tracked = 1<<layers.TransportRC | 1<<layers.TransportUC | 1<<layers.TransportXRC
	return f.transports&tracked != 0
}

// srcPorts returns the distinct UDP source ports of the flow, ascending.
func (f *flow) srcPorts() []uint16 {
	var ports []uint16
	f.eachPort(func(k uint32, _ uint64) {
		ports = append(ports, uint16(k>>16))
	})
	slices.Sort(ports)
	return slices.Compact(ports)
}

// flowTransport names the transports of a flow (bit per layers.Transport).
func flowTransport(bits uint8) string {
	if bits == 0 {
		return layers.TransportUnknown.String()
	}
	if bits == 1<<layers.TransportCNP {
		return "CNP"
	}
	bits &^= 1 << layers.TransportCNP
	name := ""
	for t := layers.TransportRC; t <= layers.TransportUnknown; t++ {
		if bits&(1<<t) != 0 {
			if name != "" {
				name += "+"
			}
			name += t.String()
		}
	}
	return name
}

// tally sums one measure over flows and remembers the flow where it is
// largest, so that a one-line summary can point at the worst case.
type tally struct {
	total, flows, worst uint64
	worstKey            string
}

func (t *tally) add(key string, n uint64) {
	if n == 0 {
		return
	}
	t.total += n
	t.flows++
	if n > t.worst {
		t.worst, t.worstKey = n, key
	}
}

// count writes n and the singular or plural noun.
func count(n uint64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatUint(n, 10) + " " + many
}

// judge fills the warnings and problems of r in plain words, one line per
// kind of finding (the flows hold the details).
func (a *Analyzer) judge(r *Report, ecmpWarnings []string) {
	p := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }
	w := func(format string, args ...any) { r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...)) }
	flows := func(n uint64) string { return count(n, "flow", "flows") }

	if r.Packets.Malformed > 0 {
		p("%d RoCE packets are malformed and were left out of the analysis", r.Packets.Malformed)
	}
	if r.ICRC.Bad > 0 {
		p("%d packets have a bad ICRC: corrupted on the way, or rewritten by the capture point", r.ICRC.Bad)
	}
	var gaps, missing, unrecovered, retrans, naks tally
	var rcGaps, dropped uint64
	var seqErr, rnr, other uint64
	for i := range r.Flows {
		f := &r.Flows[i]
		if s := f.PSN; s != nil {
			gaps.add(f.Key(), s.Gaps)
			missing.add(f.Key(), s.Missing)
			unrecovered.add(f.Key(), s.Unrecovered)
			retrans.add(f.Key(), s.Retransmitted)
			dropped += s.RangesDropped
			if f.Transport != "UC" {
				rcGaps += s.Gaps
			}
		}
		n := f.NAKs
		naks.add(f.Key(), n.SeqErr+n.RNR+n.Other)
		seqErr, rnr, other = seqErr+n.SeqErr, rnr+n.RNR, other+n.Other
	}
	if gaps.total > 0 {
		p("%s in %s, %s missing (most in %s: %d)",
			count(gaps.total, "PSN gap", "PSN gaps"), flows(gaps.flows),
			count(missing.total, "PSN", "PSNs"), missing.worstKey, missing.worst)
	}
	if unrecovered.total > 0 {
		bound := ""
		if dropped > 0 {
			bound = "at least "
		}
		p("%s%s in %s never showed up later in the capture (most in %s: %d)",
			bound, count(unrecovered.total, "missing PSN", "missing PSNs"), flows(unrecovered.flows),
			unrecovered.worstKey, unrecovered.worst)
	}
	if retrans.total > 0 {
		p("%s retransmitted in %s (most in %s: %d)",
			count(retrans.total, "request", "requests"), flows(retrans.flows), retrans.worstKey, retrans.worst)
	}
	if naks.total > 0 {
		p("%s in %s: %d PSN sequence error, %d receiver not ready, %d other (most in %s: %d)",
			count(naks.total, "NAK", "NAKs"), flows(naks.flows), seqErr, rnr, other, naks.worstKey, naks.worst)
	}
	if rcGaps > 0 && retrans.total == 0 && naks.total == 0 {
		// A reliable connection answers a real loss with a NAK or a
		// resend; gaps with neither point at the capture itself.
		w("no flow shows a NAK or a retransmission, so the PSN gaps of reliable flows are most likely " +
			"packets the capture missed (a sampling mirror, a full capture buffer, or a capture point " +
			"that sees only part of the traffic)")
	}

	if r.ICRC.Unverifiable > 0 {
		w("%d packets were cut by the capture's snap length: their ICRC could not be checked", r.ICRC.Unverifiable)
	}
	if r.ECN.CE > 0 {
		w("%d packets carry ECN CE marks: a switch queue was congested", r.ECN.CE)
	}
	var unmatched, noCNP uint64
	for _, c := range r.Congestion {
		switch {
		case !c.CNPMatched:
			unmatched++
		case c.CNPsBack == 0:
			noCNP++
		}
	}
	if unmatched > 0 {
		w("%s with CE marks could not be tied to the sender's QP, so their CNPs could not be matched", flows(unmatched))
	}
	if noCNP > 0 {
		w("%s with CE marks got no CNP back to the sender's QP in the capture", flows(noCNP))
	}
	r.Warnings = append(r.Warnings, ecmpWarnings...)
}
