package cmd

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"roce-inspect/gen"
)

// newGenCommand returns the `gen` command, which writes synthetic RoCE
// captures.
func newGenCommand() *cobra.Command {
	def := gen.DefaultConfig()
	cfg := def
	var badICRC string
	var list bool
	c := &cobra.Command{
		Use:   "gen [flags] FILE",
		Short: "Write a synthetic RoCE capture",
		Long: "Write a synthetic RoCE capture of one scenario (see --list) to FILE, or to\n" +
			"standard output when FILE is \"-\". Equal flags and seed write identical bytes.",
		Args: func(cmd *cobra.Command, args []string) error {
			if list {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				return listScenarios(cmd.OutOrStdout())
			}
			frames, err := parseFrameList(badICRC)
			if err != nil {
				return err
			}
			cfg.BadICRC = frames
			return runGen(cmd, args[0], cfg)
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.Scenario, "scenario", def.Scenario, "scenario to generate (see --list)")
	f.IntVar(&cfg.Packets, "packets", 0, "approximate number of frames (0: the scenario's natural size; exact for bench)")
	f.Uint64Var(&cfg.Seed, "seed", def.Seed, "seed of the random choices")
	f.IntVar(&cfg.Payload, "payload", 0, "bytes per full data packet, a multiple of 4 (0: 1024; for bench, small packets only)")
	f.IntVar(&cfg.QPs, "qps", 0, "queue pairs (0: the scenario's default)")
	f.BoolVar(&cfg.IPv6, "ipv6", false, "RoCEv2 over IPv6")
	f.BoolVar(&cfg.RoCEv1, "rocev1", false, "RoCEv1 (Ethertype 0x8915, GRH) instead of RoCEv2")
	f.StringVar(&badICRC, "bad-icrc", "", "comma-separated 1-based frame numbers whose ICRC is corrupted")
	f.IntVar(&cfg.BadEvery, "bad-every", 0, "corrupt the ICRC of every Nth frame")
	f.StringVar(&cfg.SrcPorts, "src-ports", def.SrcPorts, "UDP source ports: spread (one per QP) or single (one per host pair)")
	f.BoolVar(&cfg.Pcapng, "pcapng", false, "write pcapng instead of pcap")
	f.BoolVar(&cfg.Nanosecond, "nanosecond", false, "pcap with nanosecond timestamps (pcapng always has them)")
	f.BoolVar(&cfg.ECN, "ecn", def.ECN, "mark RoCEv2 data packets and ACKs ECT(0)")
	f.BoolVar(&list, "list", false, "list the scenarios and what an analysis of each should show")
	return c
}

// runGen writes the capture to path ("-": standard output). A capture that
// fails half-way is removed rather than left truncated.
func runGen(cmd *cobra.Command, path string, cfg gen.Config) (err error) {
	if err := gen.Validate(cfg); err != nil {
		return err // before creating the file
	}
	w := cmd.OutOrStdout()
	if path != "-" {
		fh, cerr := os.Create(path)
		if cerr != nil {
			return cerr
		}
		defer func() {
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(path)
			}
		}()
		w = fh
	}
	st, err := gen.Write(w, cfg)
	if err != nil {
		return err
	}
	if path != "-" {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d frames, %d bytes (scenario %s, seed %d)\n",
			path, st.Frames, st.Bytes, st.Scenario, cfg.Seed)
	}
	return nil
}

// listScenarios prints each scenario with its description and the expected
// analysis.
func listScenarios(out io.Writer) error {
	bw := bufio.NewWriter(out)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	for _, s := range gen.Scenarios() {
		fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Description)
		fmt.Fprintf(tw, "\texpect: %s\n", s.Expected)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

// parseFrameList parses "3,17,40" into frame numbers.
func parseFrameList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--bad-icrc: %q is not a frame number (1, 2, ...)", part)
		}
		out = append(out, n)
	}
	return out, nil
}
