package cmd

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"golang.org/x/term"

	"roce-inspect/analyze"
)

// view renders an analysis report as terminal tables.
type view struct {
	w     io.Writer
	color bool
}

func newView(w io.Writer, color bool) *view { return &view{w: w, color: color} }

// useColor decides whether to color problems: "auto" colors a terminal.
func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == ""
}

func (v *view) paint(code, s string) string {
	if !v.color {
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}

func (v *view) title(s string) { fmt.Fprintf(v.w, "\n%s\n", v.paint("1", s)) }

// table starts a table whose columns after the first nLeft are numbers,
// aligned right.
func (v *view) table(header []string, nLeft int) *tablewriter.Table {
	align := make(tw.Alignment, len(header))
	for i := range align {
		if i < nLeft {
			align[i] = tw.AlignLeft
		} else {
			align[i] = tw.AlignRight
		}
	}
	t := tablewriter.NewTable(v.w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithAlignment(align),
	)
	for _, h := range header {
		if h != "" {
			t.Header(toAny(header)...)
			break
		}
	}
	return t
}

func toAny(s []string) []any {
	a := make([]any, len(s))
	for i := range s {
		a[i] = s[i]
	}
	return a
}

// report prints every section of the report.
func (v *view) report(r *analyze.Report, top int, order string) {
	v.summary(r)
	v.flows(r, top, order)
	v.psnProblems(r)
	v.congestion(r)
	v.ecmp(r)
	v.verdict(r)
}

func u(n uint64) string { return strconv.FormatUint(n, 10) }

func (v *view) summary(r *analyze.Report) {
	v.title("Summary")
	t := v.table([]string{"", ""}, 2)
	add := func(k, val string) { t.Append([]string{k, val}) }
	p := r.Packets
	add("Frames", fmt.Sprintf("%d (%d RoCE: %d v1, %d v2; %d not RoCE)", p.Total, p.RoCE, p.RoCEv1, p.RoCEv2, p.NotRoCE))
	if p.Filtered > 0 {
		add("Filtered out", u(p.Filtered))
	}
	if p.Malformed > 0 {
		var parts []string
		for reason, n := range r.MalformedReasons {
			parts = append(parts, fmt.Sprintf("%s: %d", reason, n))
		}
		sort.Strings(parts)
		add("Malformed", fmt.Sprintf("%d (%s)", p.Malformed, strings.Join(parts, "; ")))
	}
	add("ICRC", fmt.Sprintf("%d good, %d bad, %d unverifiable", r.ICRC.Good, r.ICRC.Bad, r.ICRC.Unverifiable))
	add("ECN", fmt.Sprintf("%d not-ECT, %d ECT(0), %d ECT(1), %d CE", r.ECN.NotECT, r.ECN.ECT0, r.ECN.ECT1, r.ECN.CE))
	add("CNPs", fmt.Sprintf("%d (FECN %d, BECN %d)", r.CNP, r.FECN, r.BECN))
	if r.FirstTS != "" {
		add("Span", fmt.Sprintf("%.6f s from %s", r.SpanSeconds, r.FirstTS))
	}
	add("Throughput", fmt.Sprintf("%s in %s bytes", gbpsText(r.Gbps), u(r.Bytes)))
	add("Flows", strconv.Itoa(r.FlowCount))
	if r.PMTU > 0 {
		add("PMTU", strconv.Itoa(r.PMTU))
	}
	t.Render()
}

func gbpsText(g float64) string { return fmt.Sprintf("%.3f Gbit/s", g) }

// sortFlows orders flows for the table.
func sortFlows(flows []analyze.FlowReport, order string) {
	gaps := func(f *analyze.FlowReport) uint64 {
		if f.PSN == nil {
			return 0
		}
		return f.PSN.Gaps + f.PSN.Retransmitted + f.PSN.Unrecovered + f.NAKs.SeqErr + f.NAKs.RNR + f.NAKs.Other
	}
	sort.SliceStable(flows, func(i, j int) bool {
		a, b := &flows[i], &flows[j]
		switch order {
		case "packets":
			return a.Packets > b.Packets
		case "gaps":
			return gaps(a) > gaps(b)
		case "qp":
			return a.DestQP < b.DestQP
		case "src":
			if c := a.SrcIP.Compare(b.SrcIP); c != 0 {
				return c < 0
			}
			return a.DstIP.Less(b.DstIP)
		}
		return false // bytes: the report's own order
	})
}

// checkSort rejects an unknown --sort.
func checkSort(order string) error {
	switch order {
	case "bytes", "packets", "gaps", "qp", "src":
		return nil
	}
	return usageErrorf("unknown --sort %q: use bytes, packets, gaps, qp or src", order)
}

func (v *view) flows(r *analyze.Report, top int, order string) {
	flows := append([]analyze.FlowReport(nil), r.Flows...)
	sortFlows(flows, order)
	shown := len(flows)
	if top > 0 && shown > top {
		shown = top
	}
	if len(flows) == 0 {
		v.title("Flows: none")
		return
	}
	v.title(fmt.Sprintf("Flows (%d of %d, by %s)", shown, len(flows), order))
	t := v.table([]string{"SOURCE", "DESTINATION", "QP", "SVC", "PACKETS", "BYTES", "MSGS", "GBIT/S", "SPORTS", "GAPS", "RETX", "NAKS", "CE", "CNP", "BAD ICRC"}, 4)
	for i := 0; i < shown; i++ {
		f := &flows[i]
		gaps, retx := "-", "-"
		if f.PSN != nil {
			gaps, retx = u(f.PSN.Gaps), u(f.PSN.Retransmitted)
		}
		t.Append([]string{
			f.SrcIP.String(), f.DstIP.String(), fmt.Sprintf("0x%06x", f.DestQP),
			fmt.Sprintf("%s v%d", f.Transport, f.Version),
			u(f.Packets), u(f.Bytes), u(f.Messages), fmt.Sprintf("%.3f", f.Gbps),
			portsText(f), gaps, retx, u(f.NAKs.SeqErr + f.NAKs.RNR + f.NAKs.Other),
			u(f.ECNCE), u(f.CNP), u(f.ICRC.Bad),
		})
	}
	t.Render()
}

// portsText lists a flow's UDP source ports compactly.
func portsText(f *analyze.FlowReport) string {
	if f.Version == 1 || len(f.SrcPorts) == 0 {
		return "-"
	}
	if len(f.SrcPorts) == 1 {
		return strconv.Itoa(int(f.SrcPorts[0]))
	}
	return fmt.Sprintf("%d ports", len(f.SrcPorts)+f.SrcPortsMore)
}

func (v *view) psnProblems(r *analyze.Report) {
	var rows [][]string
	for i := range r.Flows {
		f := &r.Flows[i]
		n := f.NAKs
		var gaps, missing, retx, unrec, first, last string = "-", "-", "-", "-", "-", "-"
		bad := n.SeqErr+n.RNR+n.Other > 0
		if s := f.PSN; s != nil {
			gaps, missing, retx, unrec = u(s.Gaps), u(s.Missing), u(s.Retransmitted), u(s.Unrecovered)
			if s.RangesDropped > 0 {
				unrec = "≥" + unrec
			}
			if s.First != nil {
				first, last = u(uint64(*s.First)), u(uint64(*s.Last))
			}
			bad = bad || s.Gaps+s.Retransmitted+s.Unrecovered > 0
		}
		if !bad {
			continue
		}
		rows = append(rows, []string{f.Key(), gaps, missing, retx, unrec, first, last, u(n.SeqErr), u(n.RNR), u(n.Other)})
	}
	if len(rows) == 0 {
		v.title("PSN and NAK problems: none")
		return
	}
	v.title(v.paint("31", fmt.Sprintf("PSN and NAK problems (%s)", count(len(rows), "flow"))))
	t := v.table([]string{"FLOW", "GAPS", "MISSING", "RETX", "UNRECOVERED", "FIRST PSN", "LAST PSN", "NAK SEQ", "NAK RNR", "NAK OTHER"}, 1)
	for _, row := range rows {
		t.Append(row)
	}
	t.Render()
}

func (v *view) congestion(r *analyze.Report) {
	if len(r.Congestion) == 0 {
		if r.CNP > 0 {
			v.title(fmt.Sprintf("Congestion: no CE marks, %d CNPs", r.CNP))
		} else {
			v.title("Congestion: no CE marks, no CNPs")
		}
		return
	}
	v.title(fmt.Sprintf("Congestion (%s)", count(len(r.Congestion), "CE-marked flow")))
	t := v.table([]string{"CE-MARKED FLOW", "CE", "SENDER QP", "CNPS BACK", "CNPS TO HOST", "FIRST CE → CNP"}, 1)
	for _, c := range r.Congestion {
		qp, delay := "unmatched", "-"
		if c.SenderQP != nil {
			qp = fmt.Sprintf("0x%06x", *c.SenderQP)
		}
		if c.FirstCEToCNPMicros != nil {
			delay = fmt.Sprintf("%.1f µs", *c.FirstCEToCNPMicros)
		}
		t.Append([]string{c.Flow, u(c.CE), qp, u(c.CNPsBack), u(c.CNPsToSenderHost), delay})
	}
	t.Render()
}

func (v *view) ecmp(r *analyze.Report) {
	e := r.ECMP
	if e.Flows == 0 {
		v.title("ECMP: no RoCEv2 flows")
		return
	}
	v.title("ECMP entropy (UDP source ports)")
	t := v.table([]string{"", ""}, 2)
	t.Append([]string{"Flows", strconv.Itoa(e.Flows)})
	t.Append([]string{"Distinct source ports", strconv.Itoa(e.DistinctSrcPorts)})
	t.Append([]string{"Flow entropy", fmt.Sprintf("%.2f of %.2f bits", e.FlowEntropyBits, e.MaxEntropyBits)})
	t.Append([]string{"Colliding flows", strconv.Itoa(e.CollidingFlows)})
	t.Append([]string{fmt.Sprintf("Flows on %d paths", e.Paths), intsText(e.PathFlows)})
	t.Append([]string{"Busiest path / mean", fmt.Sprintf("%.2f", e.PathImbalance)})
	t.Render()
	if len(e.HostPairs) > 1 {
		t = v.table([]string{"SOURCE", "DESTINATION", "FLOWS", "PORTS", "ENTROPY", "MAX", "COLLIDING", "BUSIEST/MEAN"}, 2)
		for _, h := range e.HostPairs {
			t.Append([]string{h.SrcIP.String(), h.DstIP.String(), strconv.Itoa(h.Flows), strconv.Itoa(h.DistinctSrcPorts),
				fmt.Sprintf("%.2f", h.FlowEntropyBits), fmt.Sprintf("%.2f", h.MaxEntropyBits),
				strconv.Itoa(h.CollidingFlows), fmt.Sprintf("%.2f", h.PathImbalance)})
		}
		t.Render()
	}
}

func intsText(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " ")
}

// verdict ends the report: the problems in red, the warnings in yellow, or
// a plain statement that the capture is clean.
func (v *view) verdict(r *analyze.Report) {
	fmt.Fprintln(v.w)
	for _, w := range r.Warnings {
		fmt.Fprintln(v.w, v.paint("33", "warning: ")+w)
	}
	const maxProblems = 12
	for i, p := range r.Problems {
		if i == maxProblems {
			fmt.Fprintf(v.w, "%s... and %d more (the tables above list every flow; --format json has them all)\n",
				v.paint("1;31", "PROBLEM: "), len(r.Problems)-maxProblems)
			break
		}
		fmt.Fprintln(v.w, v.paint("1;31", "PROBLEM: ")+p)
	}
	if r.Clean() {
		fmt.Fprintln(v.w, v.paint("32", fmt.Sprintf("Clean: %d RoCE packets, no PSN gaps, retransmissions, NAKs, malformed packets or bad ICRCs.", r.Packets.RoCE)))
	}
}

// writeFlowsCSV writes one row per flow with a header line.
func writeFlowsCSV(w io.Writer, r *analyze.Report) error {
	cw := newCSV(w)
	cw.row("src_ip", "dst_ip", "dest_qp", "version", "transport", "packets", "bytes", "payload_bytes", "messages",
		"src_ports", "first_ts", "last_ts", "duration_seconds", "gbps", "icrc_good", "icrc_bad", "icrc_unverifiable",
		"ecn_not_ect", "ecn_ect0", "ecn_ect1", "ecn_ce", "cnp", "fecn", "becn",
		"psn_gaps", "psn_missing", "psn_retransmitted", "psn_unrecovered", "psn_first", "psn_last",
		"nak_seq_err", "nak_rnr", "nak_other")
	for i := range r.Flows {
		f := &r.Flows[i]
		ports := make([]string, len(f.SrcPorts))
		for i, p := range f.SrcPorts {
			ports[i] = strconv.Itoa(int(p))
		}
		psn := []string{"", "", "", "", "", ""}
		if s := f.PSN; s != nil {
			psn = []string{u(s.Gaps), u(s.Missing), u(s.Retransmitted), u(s.Unrecovered), "", ""}
			if s.First != nil {
				psn[4], psn[5] = u(uint64(*s.First)), u(uint64(*s.Last))
			}
		}
		row := []string{f.SrcIP.String(), f.DstIP.String(), u(uint64(f.DestQP)), strconv.Itoa(f.Version), f.Transport,
			u(f.Packets), u(f.Bytes), u(f.PayloadBytes), u(f.Messages), strings.Join(ports, " "),
			f.FirstTS, f.LastTS, strconv.FormatFloat(f.DurationSeconds, 'f', 9, 64), strconv.FormatFloat(f.Gbps, 'f', 6, 64),
			u(f.ICRC.Good), u(f.ICRC.Bad), u(f.ICRC.Unverifiable),
			u(f.ECN.NotECT), u(f.ECN.ECT0), u(f.ECN.ECT1), u(f.ECN.CE), u(f.CNP), u(f.FECN), u(f.BECN)}
		row = append(row, psn...)
		row = append(row, u(f.NAKs.SeqErr), u(f.NAKs.RNR), u(f.NAKs.Other))
		cw.row(row...)
	}
	return cw.flush()
}

// csvWriter keeps the first write error of an encoding/csv writer.
type csvWriter struct {
	w   *csv.Writer
	err error
}

func newCSV(w io.Writer) *csvWriter { return &csvWriter{w: csv.NewWriter(w)} }

func (c *csvWriter) row(fields ...string) {
	if c.err == nil {
		c.err = c.w.Write(fields)
	}
}

func (c *csvWriter) flush() error {
	c.w.Flush()
	if c.err != nil {
		return c.err
	}
	return c.w.Error()
}

// count writes n and a noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
