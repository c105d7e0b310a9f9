package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"roce-inspect/analyze"
	"roce-inspect/capture"
	"roce-inspect/dissect"
)

// analyzeOptions are the flags of `roce-inspect analyze`.
type analyzeOptions struct {
	format    string
	top       int
	sort      string
	qps       []string
	hosts     []string
	pmtu      int
	ecmpPaths int
	color     string
}

func addAnalyzeFlags(c *cobra.Command, o *analyzeOptions) {
	c.Flags().StringVar(&o.format, "format", "table", "output format: table, json or csv")
	c.Flags().IntVar(&o.top, "top", 20, "flows shown in the flow table (0: all)")
	c.Flags().StringVar(&o.sort, "sort", "bytes", "flow order: bytes, packets, gaps, qp or src")
	c.Flags().StringSliceVar(&o.qps, "qp", nil, "keep only these destination QPs (decimal or 0x hex; repeat or comma-separate)")
	c.Flags().StringSliceVar(&o.hosts, "host", nil, "keep only packets from or to these addresses")
	c.Flags().IntVar(&o.pmtu, "pmtu", 0, "path MTU for counting RDMA READ PSNs (0: learn it from the traffic)")
	c.Flags().IntVar(&o.ecmpPaths, "ecmp-paths", analyze.DefaultECMPPaths, "equal-cost paths of the ECMP simulation")
	c.Flags().StringVar(&o.color, "color", "auto", "color problems in tables: auto, always or never")
}

func newAnalyzeCommand(g *globalOptions) *cobra.Command {
	o := &analyzeOptions{}
	c := &cobra.Command{
		Use:   "analyze FILE...",
		Short: "Per-QP flows, PSN gaps and retransmissions, NAKs, ECN and CNPs, ECMP entropy",
		Long: `Analyze the capture files, read in the order given as one capture: per-QP
flows, PSN gaps and retransmissions, NAKs, ECN congestion marks and CNPs, how
the UDP source ports spread flows over ECMP paths, and the ICRC verdicts.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runAnalyze(c.OutOrStdout(), c.ErrOrStderr(), args, g, o)
		},
	}
	addAnalyzeFlags(c, o)
	return c
}

// analyzerOptions turns the flags into analyzer options.
func (o *analyzeOptions) analyzerOptions() (analyze.Options, error) {
	opt := analyze.Options{PMTU: o.pmtu, ECMPPaths: o.ecmpPaths}
	if o.pmtu < 0 {
		return opt, usageErrorf("--pmtu %d is negative", o.pmtu)
	}
	if o.ecmpPaths < 1 || o.ecmpPaths > 1<<16 {
		return opt, usageErrorf("--ecmp-paths %d is out of range 1..65536", o.ecmpPaths)
	}
	for _, s := range o.qps {
		qp, err := parseQP(s)
		if err != nil {
			return opt, err
		}
		opt.QPs = append(opt.QPs, qp)
	}
	for _, s := range o.hosts {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return opt, usageErrorf("--host %q is not an IP address or GID", s)
		}
		opt.Hosts = append(opt.Hosts, a)
	}
	return opt, nil
}

// parseQP reads a 24-bit QP number in decimal or 0x hex.
func parseQP(s string) (uint32, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseUint(s, 0, 32)
	if err != nil || v > 0xffffff {
		return 0, usageErrorf("--qp %q is not a 24-bit QP number (decimal or 0x hex)", s)
	}
	return uint32(v), nil
}

// analyzeFiles runs the analysis over the files and returns the report and
// the scan result. A read error is returned with the report of what was
// read before it.
func analyzeFiles(files []string, g *globalOptions, opt analyze.Options) (*analyze.Report, scanResult, error) {
	a := analyze.New(opt)
	res, err := scanFiles(files, g.ports, newProgress(g.quiet), func(_ string, _ *capture.Frame, p *dissect.Packet, k dissect.Kind) bool {
		if k == dissect.RoCE {
			a.Add(p)
		} else {
			a.NotRoCE()
		}
		return true
	})
	r := a.Report()
	r.Warnings = append(res.Warnings, r.Warnings...)
	return r, res, err
}

func runAnalyze(stdout, stderr io.Writer, files []string, g *globalOptions, o *analyzeOptions) error {
	switch o.format {
	case "table", "json", "csv":
	default:
		return usageErrorf("unknown --format %q: use table, json or csv", o.format)
	}
	if err := checkSort(o.sort); err != nil {
		return err
	}
	opt, err := o.analyzerOptions()
	if err != nil {
		return err
	}
	r, res, err := analyzeFiles(files, g, opt)
	if err != nil && r.Packets.Total == 0 {
		return fileError{err}
	}
	switch o.format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if werr := enc.Encode(r); werr != nil {
			return werr
		}
	case "csv":
		if werr := writeFlowsCSV(stdout, r); werr != nil {
			return werr
		}
	default:
		v := newView(stdout, useColor(o.color, stdout))
		v.report(r, o.top, o.sort)
	}
	if err != nil {
		frames := "frames"
		if r.Packets.Total == 1 {
			frames = "frame"
		}
		err = fmt.Errorf("%w (the report covers the %d %s before it)", err, r.Packets.Total, frames)
	}
	return res.endStatus(stderr, err)
}
