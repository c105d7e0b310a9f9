package cmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/net/bpf"
	"golang.org/x/term"

	"roce-inspect/analyze"
	"roce-inspect/capture"
	"roce-inspect/dissect"
	"roce-inspect/livecap"
)

// liveOptions are the flags of `roce-inspect live`.
type liveOptions struct {
	iface    string
	promisc  bool
	interval time.Duration
	duration time.Duration
	count    uint64
	write    string
	bpf      string
	bufferMB int
	ao       analyzeOptions
}

func newLiveCommand(g *globalOptions) *cobra.Command {
	o := &liveOptions{}
	c := &cobra.Command{
		Use:   "live -i IFACE",
		Short: "Capture RoCE on a network interface and analyze it as it arrives",
		Long: `Capture RoCE on a Linux network interface (AF_PACKET, a kernel filter that
admits only RoCE frames) and analyze it as it arrives. On a terminal the
summary and the flows, with their rates over the last interval, are redrawn
every interval; otherwise one line per interval goes to standard error. The
capture stops after --duration, after --count RoCE packets, or on Ctrl-C
(SIGINT) or SIGTERM, and then prints the same report as analyze. Capturing
needs root or the CAP_NET_RAW capability.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runLive(c.OutOrStdout(), c.ErrOrStderr(), c.InOrStdin(), g, o)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.iface, "interface", "i", "", "network interface `IFACE` to capture on (required)")
	f.BoolVar(&o.promisc, "promisc", false, "put the interface in promiscuous mode while capturing")
	f.DurationVar(&o.interval, "interval", time.Second, "how often to redraw the tables or print a progress line")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	f.Uint64Var(&o.count, "count", 0, "stop after this many RoCE packets (0: no limit)")
	f.StringVarP(&o.write, "write", "w", "", "also write the captured frames to the pcapng file `FILE`")
	f.StringVar(&o.bpf, "bpf", "", "replace the RoCE filter with the classic BPF program in `FILE`, as tcpdump -dd prints it (\"-\": standard input)")
	f.IntVar(&o.bufferMB, "buffer", livecap.DefaultBufferSize>>20, "kernel capture buffer in `MiB`; a larger one drops fewer packets in bursts")
	addAnalyzeFlags(c, &o.ao)
	return c
}

// liveStop says why a capture ended.
type liveStop int32

const (
	stopNone liveStop = iota
	stopCount
	stopDuration
	stopSignal
	stopError
)

func (s liveStop) String() string {
	switch s {
	case stopCount:
		return "count reached"
	case stopDuration:
		return "duration elapsed"
	case stopSignal:
		return "interrupted"
	case stopError:
		return "error"
	}
	return "running"
}

// liveCapture is what the final report says about the capture itself.
type liveCapture struct {
	Interface string  `json:"interface"`
	Seconds   float64 `json:"seconds"`
	Stopped   string  `json:"stopped"`
	// KernelReceived counts the frames the kernel filter admitted,
	// KernelDropped those the kernel then dropped for want of buffer
	// space, QueueFreezes the times the buffer filled up.
	KernelReceived uint64 `json:"kernel_received"`
	KernelDropped  uint64 `json:"kernel_dropped"`
	QueueFreezes   uint64 `json:"queue_freezes"`
	// Written is the pcapng file the frames went to, if any.
	Written string `json:"written,omitempty"`
}

// liveReport is the JSON of a live capture: the analysis report, field for
// field as analyze prints it, and the capture's own counters.
type liveReport struct {
	*analyze.Report
	Capture liveCapture `json:"capture"`
}

// liveSession holds the state of one live capture.
type liveSession struct {
	o      *liveOptions
	g      *globalOptions
	src    *livecap.Source
	a      *analyze.Analyzer
	stdout io.Writer
	stderr io.Writer
	tty    bool // redraw tables on stdout

	out     *os.File
	pw      *capture.PcapngWriter
	began   time.Time
	prev    *analyze.Report
	prevAt  time.Time
	roce    uint64
	stats   livecap.Stats
	statErr error
}

func runLive(stdout, stderr io.Writer, stdin io.Reader, g *globalOptions, o *liveOptions) error {
	if o.iface == "" {
		return usageErrorf("live needs -i IFACE, the network interface to capture on")
	}
	switch o.ao.format {
	case "table", "json", "csv":
	default:
		return usageErrorf("unknown --format %q: use table, json or csv", o.ao.format)
	}
	if err := checkSort(o.ao.sort); err != nil {
		return err
	}
	opt, err := o.ao.analyzerOptions()
	if err != nil {
		return err
	}
	if o.interval <= 0 {
		return usageErrorf("--interval %v is not positive", o.interval)
	}
	if o.duration < 0 {
		return usageErrorf("--duration %v is negative", o.duration)
	}
	if o.bufferMB < 1 || o.bufferMB > 1<<14 {
		return usageErrorf("--buffer %d MiB is out of range 1..16384", o.bufferMB)
	}
	lopt := livecap.Options{Promiscuous: o.promisc, Ports: g.ports, BufferSize: o.bufferMB << 20}
	if o.bpf != "" {
		prog, err := readBPF(o.bpf, stdin)
		if err != nil {
			return err
		}
		lopt.Filter = prog
	}

	src, err := livecap.Open(o.iface, lopt)
	if err != nil {
		return err
	}
	defer src.Close()
	s := &liveSession{o: o, g: g, src: src, a: analyze.New(opt), stdout: stdout, stderr: stderr}
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) && !g.quiet {
		s.tty = true
	}
	if o.write != "" {
		if err := s.openOutput(); err != nil {
			return err
		}
	}
	// Signals are caught from before the start line on, so that whoever
	// waits for it may stop the capture at once.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	if !g.quiet {
		fmt.Fprintf(stderr, "roce-inspect: capturing on %s (%s); Ctrl-C stops\n", o.iface, s.filterText())
	}
	stop, capErr := s.loop(sig)
	return s.finish(stop, capErr)
}

// readBPF reads and parses a --bpf file.
func readBPF(name string, stdin io.Reader) ([]bpf.RawInstruction, error) {
	var text []byte
	var err error
	if name == "-" {
		text, err = io.ReadAll(stdin)
	} else {
		text, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fileError{fmt.Errorf("--bpf: %w", err)}
	}
	prog, err := livecap.ParseTcpdumpDD(string(text))
	if err != nil {
		return nil, usageErrorf("--bpf %s: %v", name, err)
	}
	return prog, nil
}

// filterText describes the kernel filter for the start line.
func (s *liveSession) filterText() string {
	if s.o.bpf != "" {
		return "filter from " + s.o.bpf
	}
	ports := []string{strconv.Itoa(dissect.RoCEv2Port)}
	for _, p := range s.g.ports {
		ports = append(ports, strconv.Itoa(int(p)))
	}
	return "RoCEv1 and RoCEv2 on UDP port " + strings.Join(ports, ", ")
}

// openOutput creates the -w file: one interface, named after the capture
// interface, with no snap length since frames are whole.
func (s *liveSession) openOutput() error {
	f, err := os.Create(s.o.write)
	if err != nil {
		return fileError{err}
	}
	pw, err := capture.NewPcapngWriter(f, []capture.Interface{{Name: s.o.iface, LinkType: dissect.LinkTypeEthernet}})
	if err != nil {
		f.Close()
		return fileError{fmt.Errorf("%s: %w", s.o.write, err)}
	}
	s.out, s.pw = f, pw
	return nil
}

// loop reads frames until a stop condition: the count, the duration or a
// signal on sig. The clock goroutine only sets flags, so the analyzer and the source stay on this goroutine; reading
// returns at least every poll timeout, which bounds how late a flag is seen.
func (s *liveSession) loop(sig <-chan os.Signal) (liveStop, error) {
	var tick atomic.Bool
	var stop atomic.Int32
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(s.o.interval)
		defer t.Stop()
		var deadline <-chan time.Time
		if s.o.duration > 0 {
			d := time.NewTimer(s.o.duration)
			defer d.Stop()
			deadline = d.C
		}
		for {
			select {
			case <-done:
				return
			case <-t.C:
				tick.Store(true)
			case <-deadline:
				stop.CompareAndSwap(0, int32(stopDuration))
				return
			case <-sig:
				stop.CompareAndSwap(0, int32(stopSignal))
				return
			}
		}
	}()

	s.began = time.Now()
	s.prev, s.prevAt = s.a.Report(), s.began
	dec := dissect.NewDecoder(s.g.ports...)
	var f capture.Frame
	var p dissect.Packet
	for {
		if r := liveStop(stop.Load()); r != stopNone {
			return r, nil
		}
		if tick.Swap(false) {
			s.showInterval()
		}
		err := s.src.Next(&f)
		if errors.Is(err, livecap.ErrTimeout) {
			continue
		}
		if err != nil {
			return stopError, err
		}
		if err := s.handle(dec, &f, &p); err != nil {
			return stopError, err
		}
		if s.o.count > 0 && s.roce >= s.o.count {
			return stopCount, nil
		}
	}
}

// handle analyzes one frame and writes it to the -w file. It allocates
// nothing once the frame's flow is known.
func (s *liveSession) handle(dec *dissect.Decoder, f *capture.Frame, p *dissect.Packet) error {
	if dec.Decode(f, p) == dissect.RoCE {
		s.a.Add(p)
		s.roce++
	} else {
		s.a.NotRoCE()
	}
	if s.pw != nil {
		if err := s.pw.WriteFrame(0, f.Timestamp, f.Data, f.Len); err != nil {
			return fmt.Errorf("writing %s: %w", s.o.write, err)
		}
	}
	return nil
}

// readStats refreshes the kernel counters, keeping the last good ones when
// the socket cannot answer.
func (s *liveSession) readStats() {
	st, err := s.src.Stats()
	if err != nil {
		s.statErr = err
		return
	}
	s.stats = st
}

// showInterval redraws the tables on a terminal, or prints one line on
// standard error, with the rates since the previous interval.
func (s *liveSession) showInterval() {
	now := time.Now()
	s.readStats()
	r := s.a.Report()
	dt := now.Sub(s.prevAt).Seconds()
	switch {
	case s.tty:
		s.drawScreen(r, now, dt)
	case !s.g.quiet:
		s.intervalLine(r, now, dt)
	}
	s.prev, s.prevAt = r, now
}

// rate returns per-second packet and Gbit/s rates of a counter pair.
func rate(packets, bytes uint64, dt float64) (pps, gbps float64) {
	if dt <= 0 {
		return 0, 0
	}
	return float64(packets) / dt, float64(bytes) * 8 / dt / 1e9
}

// intervalLine prints the one-line progress of a capture that is not shown
// on a terminal.
func (s *liveSession) intervalLine(r *analyze.Report, now time.Time, dt float64) {
	pps, gbps := rate(r.Packets.RoCE-s.prev.Packets.RoCE, r.Bytes-s.prev.Bytes, dt)
	fmt.Fprintf(s.stderr, "%s: %.1fs, %d packets, %d RoCE, %.0f pps, %.3f Gbit/s, %d bad ICRC, %d CE, %d CNP, %d kernel drops\n",
		s.o.iface, now.Sub(s.began).Seconds(), r.Packets.Total, r.Packets.RoCE, pps, gbps,
		r.ICRC.Bad, r.ECN.CE, r.CNP, s.stats.Dropped)
}

// drawScreen clears the terminal and draws the summary and the flows with
// their rates over the last interval.
func (s *liveSession) drawScreen(r *analyze.Report, now time.Time, dt float64) {
	var b strings.Builder
	b.WriteString("\033[H\033[2J")
	v := newView(&b, useColor(s.o.ao.color, s.stdout))
	fmt.Fprintf(&b, "roce-inspect live on %s: %.0f s, kernel: %d received, %d dropped (Ctrl-C stops)\n",
		s.o.iface, now.Sub(s.began).Seconds(), s.stats.Received, s.stats.Dropped)
	v.summary(r)
	s.liveFlows(v, r, dt)
	if n := len(r.Problems); n > 0 {
		fmt.Fprintf(&b, "\n%s\n", v.paint("1;31", fmt.Sprintf("%d problems so far; the final report lists them", n)))
	}
	io.WriteString(s.stdout, b.String())
}

// liveFlows draws the flow table with each flow's rates since the previous
// report, found by key in it.
func (s *liveSession) liveFlows(v *view, r *analyze.Report, dt float64) {
	flows := append([]analyze.FlowReport(nil), r.Flows...)
	sortFlows(flows, s.o.ao.sort)
	if len(flows) == 0 {
		v.title("Flows: none yet")
		return
	}
	shown := len(flows)
	if top := s.o.ao.top; top > 0 && shown > top {
		shown = top
	}
	v.title(fmt.Sprintf("Flows (%d of %d, by %s; rates over the last %.1f s)", shown, len(flows), s.o.ao.sort, dt))
	t := v.table([]string{"SOURCE", "DESTINATION", "QP", "SVC", "PACKETS", "BYTES", "PPS", "GBIT/S", "GAPS", "RETX", "CE", "CNP", "BAD ICRC"}, 4)
	for i := 0; i < shown; i++ {
		f := &flows[i]
		dp, db := f.Packets, f.Bytes
		if old, ok := s.prev.Flow(f.Key()); ok {
			dp, db = f.Packets-old.Packets, f.Bytes-old.Bytes
		}
		pps, gbps := rate(dp, db, dt)
		gaps, retx := "-", "-"
		if f.PSN != nil {
			gaps, retx = u(f.PSN.Gaps), u(f.PSN.Retransmitted)
		}
		t.Append([]string{
			f.SrcIP.String(), f.DstIP.String(), fmt.Sprintf("0x%06x", f.DestQP), fmt.Sprintf("%s v%d", f.Transport, f.Version),
			u(f.Packets), u(f.Bytes), fmt.Sprintf("%.0f", pps), fmt.Sprintf("%.3f", gbps),
			gaps, retx, u(f.ECNCE), u(f.CNP), u(f.ICRC.Bad),
		})
	}
	t.Render()
}

// finish closes the -w file with the kernel's counters, prints the final
// report and returns the capture error, if any, to end with status 2.
func (s *liveSession) finish(stop liveStop, capErr error) error {
	end := time.Now()
	s.readStats()
	var werr error
	if s.pw != nil {
		// pcapng's isb_ifrecv and isb_ifdrop: what the kernel admitted
		// and what it dropped, as libpcap reports them.
		werr = s.pw.WriteStats(0, end.UnixNano(), s.stats.Received, s.stats.Dropped)
		if err := s.pw.Flush(); werr == nil {
			werr = err
		}
		if err := s.out.Close(); werr == nil {
			werr = err
		}
	}
	r := s.a.Report()
	noteCaptureLoss(r, s.stats)
	if s.statErr != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the kernel's capture counters could not be read: %v", s.statErr))
	}
	info := liveCapture{
		Interface: s.o.iface, Seconds: end.Sub(s.began).Seconds(), Stopped: stop.String(),
		KernelReceived: s.stats.Received, KernelDropped: s.stats.Dropped, QueueFreezes: s.stats.QueueFreezes,
		Written: s.o.write,
	}

	if s.tty {
		io.WriteString(s.stdout, "\033[H\033[2J")
	}
	var oerr error
	switch s.o.ao.format {
	case "json":
		enc := json.NewEncoder(s.stdout)
		enc.SetIndent("", "  ")
		oerr = enc.Encode(liveReport{Report: r, Capture: info})
	case "csv":
		oerr = writeFlowsCSV(s.stdout, r)
		fmt.Fprintln(s.stderr, captureLine(info))
	default:
		bw := bufio.NewWriter(s.stdout)
		v := newView(bw, useColor(s.o.ao.color, s.stdout))
		v.title("Live capture on " + s.o.iface)
		t := v.table([]string{"", ""}, 2)
		t.Append([]string{"Duration", fmt.Sprintf("%.3f s (%s)", info.Seconds, info.Stopped)})
		t.Append([]string{"Kernel", fmt.Sprintf("%d received, %d dropped, %d queue freezes", info.KernelReceived, info.KernelDropped, info.QueueFreezes)})
		if info.Written != "" {
			t.Append([]string{"Written to", info.Written})
		}
		t.Render()
		v.report(r, s.o.ao.top, s.o.ao.sort)
		oerr = bw.Flush()
	}
	switch {
	case capErr != nil:
		return fileError{fmt.Errorf("%w; the report covers the %d frames captured before it", capErr, r.Packets.Total)}
	case werr != nil:
		return fileError{fmt.Errorf("writing %s: %w", s.o.write, werr)}
	}
	return oerr
}

// captureLine is the capture's counters in one line, for CSV output.
func captureLine(c liveCapture) string {
	return fmt.Sprintf("capture on %s: %.3f s (%s), kernel: %d received, %d dropped, %d queue freezes",
		c.Interface, c.Seconds, c.Stopped, c.KernelReceived, c.KernelDropped, c.QueueFreezes)
}

// noteCaptureLoss adds a warning when the kernel dropped frames, and marks
// the PSN gap problems as possibly caused by the capture: a packet the
// capture missed looks exactly like one the network lost.
func noteCaptureLoss(r *analyze.Report, st livecap.Stats) {
	if st.Dropped == 0 {
		return
	}
	w := fmt.Sprintf("the kernel dropped %d packets during capture: PSN gaps may be caused by the capture, not the network", st.Dropped)
	r.Warnings = append([]string{w}, r.Warnings...)
	// Retransmissions and NAKs are left alone: the network really carried
	// them, while a gap may be a packet the capture missed.
	for i, p := range r.Problems {
		if strings.Contains(p, "PSN gap") || strings.Contains(p, "missing PSN") {
			r.Problems[i] = p + " (possibly caused by the capture: the kernel dropped packets)"
		}
	}
}
