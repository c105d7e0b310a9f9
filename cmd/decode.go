package cmd

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/spf13/cobra"

	"roce-inspect/capture"
	"roce-inspect/dissect"
)

// decodeOptions are the flags of `roce-inspect decode`.
type decodeOptions struct {
	verbose bool
	count   int
	format  string
}

func newDecodeCommand(g *globalOptions) *cobra.Command {
	var o decodeOptions
	c := &cobra.Command{
		Use:   "decode FILE...",
		Short: "Print every RoCE packet, one line each (-V: every field), with its ICRC verdict",
		Long: `Print every RoCE packet of the capture files, one line each: frame number,
time since the first frame, source and destination (IP, or GID for RoCEv1),
UDP source port, RoCE version, opcode, destination QP, PSN, flags, the AETH
verdict where present and the ICRC verdict. -V prints every field of every
header. --format json writes one JSON object per packet (JSON lines).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runDecode(c.OutOrStdout(), c.ErrOrStderr(), args, g, &o)
		},
	}
	c.Flags().BoolVarP(&o.verbose, "verbose", "V", false, "print every field of every header")
	c.Flags().IntVarP(&o.count, "count", "c", 0, "stop after this many RoCE packets (0: all)")
	c.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	return c
}

func runDecode(stdout, stderr io.Writer, files []string, g *globalOptions, o *decodeOptions) error {
	var write func(buf []byte, p *dissect.Packet, rel int64) []byte
	switch o.format {
	case "text":
		write = appendPacketLine
		if o.verbose {
			write = appendPacketVerbose
		}
	case "json":
		write = func(buf []byte, p *dissect.Packet, _ int64) []byte { return appendPacketJSON(buf, p) }
	default:
		return usageErrorf("unknown --format %q: use text or json", o.format)
	}
	out := bufio.NewWriterSize(stdout, 256<<10)
	defer out.Flush()
	var (
		buf            []byte
		first          int64
		seenFirst      bool
		frames, roce   int
		malformed      = map[string]int{}
		malformedTotal int
	)
	res, err := scanFiles(files, g.ports, newProgress(g.quiet), func(_ string, f *capture.Frame, p *dissect.Packet, k dissect.Kind) bool {
		frames++
		if !seenFirst {
			first, seenFirst = f.Timestamp, true
		}
		if k != dissect.RoCE {
			return true
		}
		roce++
		if p.Malformed != "" {
			malformed[p.Malformed]++
			malformedTotal++
		}
		buf = write(buf[:0], p, f.Timestamp-first)
		out.Write(buf)
		return o.count <= 0 || roce < o.count
	})
	out.Flush()
	if malformedTotal > 0 {
		fmt.Fprintf(stderr, "%d of %d RoCE packets malformed: %s\n", malformedTotal, roce, reasonCounts(malformed))
	}
	if err == nil && res.Truncated == 0 && roce == 0 && o.format == "text" {
		fmt.Fprintf(stderr, "no RoCE packets in %d frames\n", frames)
	}
	return res.endStatus(stderr, err)
}

// reasonCounts lists counts per reason, most frequent first.
func reasonCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var b []byte
	for i, k := range keys {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, k...)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, int64(m[k]), 10)
	}
	return string(b)
}
