package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"roce-inspect/analyze"
	"roce-inspect/capture"
	"roce-inspect/dissect"
)

// checkOptions are the flags of `roce-inspect check`. A limit of -1 means
// no limit.
type checkOptions struct {
	maxBadICRC      int64
	maxUnverifiable int64
	maxPSNGaps      int64
	maxUnrecovered  int64
	maxNAKs         int64
	maxCNPs         int64
	maxMalformed    int64
	allowEmpty      bool
	allowTruncated  bool
	show            int
	format          string
	junit           string
	pmtu            int
}

// rule is one health rule checked on one file.
type rule struct {
	Name   string `json:"rule"`
	Limit  int64  `json:"limit"` // -1: no limit, the value is only reported
	Value  uint64 `json:"value"`
	Passed bool   `json:"passed"`
	Note   string `json:"note,omitempty"`
}

// offender is a packet that broke a rule.
type offender struct {
	File         string `json:"file"`
	Frame        int    `json:"frame"`
	Flow         string `json:"flow"`
	Opcode       string `json:"opcode"`
	PSN          uint32 `json:"psn"`
	Problem      string `json:"problem"`
	ICRCFound    string `json:"icrc_found,omitempty"`
	ICRCExpected string `json:"icrc_expected,omitempty"`
}

// fileVerdict is the outcome of checking one capture file.
type fileVerdict struct {
	File      string     `json:"file"`
	Frames    uint64     `json:"frames"`
	RoCE      uint64     `json:"roce"`
	Passed    bool       `json:"passed"`
	Error     string     `json:"error,omitempty"`
	Truncated bool       `json:"truncated"`
	Rules     []rule     `json:"rules"`
	Offenders []offender `json:"offenders"`
	// offendersMore counts offenders beyond --show.
	OffendersMore int `json:"offenders_more"`
	unreadable    bool
}

// checkReport is the JSON output of check.
type checkReport struct {
	SchemaVersion int           `json:"schema_version"`
	Passed        bool          `json:"passed"`
	Files         []fileVerdict `json:"files"`
}

func newCheckCommand(g *globalOptions) *cobra.Command {
	o := &checkOptions{}
	c := &cobra.Command{
		Use:   "check FILE...",
		Short: "CI gate: fail when any packet's ICRC is wrong (and other RoCE health rules)",
		Long: `Check every RoCE packet of each capture file against health rules. Exit
status 0 when every rule holds in every file, 1 when a rule is broken, 2 for
usage errors and unreadable or malformed files. A file with no RoCE packet
fails unless --allow-empty. A limit of -1 turns a rule into a report only.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runCheck(c.OutOrStdout(), c.ErrOrStderr(), args, g, o)
		},
	}
	f := c.Flags()
	f.Int64Var(&o.maxBadICRC, "max-bad-icrc", 0, "packets with a wrong ICRC allowed per file")
	f.Int64Var(&o.maxUnverifiable, "max-unverifiable", -1, "packets whose ICRC cannot be checked (cut by the snap length) allowed per file")
	f.Int64Var(&o.maxPSNGaps, "max-psn-gaps", -1, "PSN gaps allowed per file")
	f.Int64Var(&o.maxUnrecovered, "max-unrecovered", -1, "missing PSNs never retransmitted allowed per file")
	f.Int64Var(&o.maxNAKs, "max-naks", -1, "NAKs (sequence error, RNR, other) allowed per file")
	f.Int64Var(&o.maxCNPs, "max-cnps", -1, "CNPs allowed per file")
	f.Int64Var(&o.maxMalformed, "max-malformed", -1, "malformed RoCE packets allowed per file")
	f.BoolVar(&o.allowEmpty, "allow-empty", false, "pass a file with no RoCE packet")
	f.BoolVar(&o.allowTruncated, "allow-truncated", false, "pass a file cut short in the middle of a record (its frames are still checked)")
	f.IntVar(&o.show, "show", 10, "offending packets listed per file")
	f.StringVar(&o.format, "format", "text", "output format: text or json")
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report to this file")
	f.IntVar(&o.pmtu, "pmtu", 0, "path MTU for counting RDMA READ PSNs (0: learn it)")
	return c
}

func runCheck(stdout, stderr io.Writer, files []string, g *globalOptions, o *checkOptions) error {
	if o.format != "text" && o.format != "json" {
		return usageErrorf("unknown --format %q: use text or json", o.format)
	}
	if o.show < 0 {
		return usageErrorf("--show %d is negative", o.show)
	}
	for _, l := range []int64{o.maxBadICRC, o.maxUnverifiable, o.maxPSNGaps, o.maxUnrecovered, o.maxNAKs, o.maxCNPs, o.maxMalformed} {
		if l < -1 {
			return usageErrorf("a --max limit is %d: use -1 for no limit or a count", l)
		}
	}
	rep := checkReport{SchemaVersion: 1, Passed: true}
	status := exitOK
	for _, name := range files {
		v := checkFile(name, g, o)
		rep.Files = append(rep.Files, v)
		switch {
		case v.unreadable || (v.Truncated && !o.allowTruncated):
			status = exitError
			rep.Passed = false
		case !v.Passed:
			if status == exitOK {
				status = exitProblem
			}
			rep.Passed = false
		}
	}
	if o.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		for i := range rep.Files {
			printVerdict(stdout, &rep.Files[i])
		}
	}
	if o.junit != "" {
		if err := writeJUnitFile(o.junit, &rep); err != nil {
			return fileError{err}
		}
	}
	for _, v := range rep.Files {
		if v.Error != "" {
			fmt.Fprintln(stderr, "roce-inspect: "+v.Error)
		}
	}
	if status != exitOK {
		return exitStatusError{status: status}
	}
	return nil
}

// checkFile analyzes one file and applies the rules to it.
func checkFile(name string, g *globalOptions, o *checkOptions) fileVerdict {
	v := fileVerdict{File: name, Offenders: []offender{}}
	a := analyze.New(analyze.Options{PMTU: o.pmtu})
	res, err := scanFiles([]string{name}, g.ports, newProgress(g.quiet), func(_ string, _ *capture.Frame, p *dissect.Packet, k dissect.Kind) bool {
		if k != dissect.RoCE {
			a.NotRoCE()
			return true
		}
		a.Add(p)
		if problem := packetProblem(p); problem != "" {
			if len(v.Offenders) < o.show {
				v.Offenders = append(v.Offenders, newOffender(name, p, problem))
			} else {
				v.OffendersMore++
			}
		}
		return true
	})
	r := a.Report()
	v.Frames, v.RoCE = r.Packets.Total, r.Packets.RoCE
	if err != nil {
		v.Error = err.Error()
		v.unreadable = true
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) || r.Packets.Total == 0 {
			return v
		}
	}
	if res.Truncated > 0 {
		v.Truncated = true
		if !o.allowTruncated {
			v.Error = res.Warnings[0]
		}
	}
	var gaps, unrecovered, naks uint64
	for i := range r.Flows {
		f := &r.Flows[i]
		if f.PSN != nil {
			gaps += f.PSN.Gaps
			unrecovered += f.PSN.Unrecovered
		}
		naks += f.NAKs.SeqErr + f.NAKs.RNR + f.NAKs.Other
	}
	add := func(name string, limit int64, value uint64, note string) {
		v.Rules = append(v.Rules, rule{Name: name, Limit: limit, Value: value, Passed: limit < 0 || value <= uint64(limit), Note: note})
	}
	empty := uint64(0)
	if r.Packets.RoCE == 0 && !o.allowEmpty {
		empty = 1
	}
	emptyNote := ""
	if r.Packets.RoCE == 0 {
		emptyNote = fmt.Sprintf("no RoCE packets in %s", name)
	}
	add("roce-present", 0, empty, emptyNote)
	add("bad-icrc", o.maxBadICRC, r.ICRC.Bad, "")
	unverNote := ""
	if r.ICRC.Unverifiable > 0 {
		unverNote = "cut by the capture's snap length, so the ICRC cannot be checked: capture whole frames (tcpdump -s 0, or a snap length above the MTU plus headers)"
	}
	add("unverifiable-icrc", o.maxUnverifiable, r.ICRC.Unverifiable, unverNote)
	add("malformed", o.maxMalformed, r.Packets.Malformed, "")
	add("psn-gaps", o.maxPSNGaps, gaps, "")
	add("unrecovered-psns", o.maxUnrecovered, unrecovered, "")
	add("naks", o.maxNAKs, naks, "")
	add("cnps", o.maxCNPs, r.CNP, "")
	v.Passed = !v.unreadable && !(v.Truncated && !o.allowTruncated)
	for _, ru := range v.Rules {
		v.Passed = v.Passed && ru.Passed
	}
	return v
}

// packetProblem says what is wrong with one packet for the offender list.
func packetProblem(p *dissect.Packet) string {
	switch {
	case p.ICRC == dissect.ICRCBad:
		return "bad ICRC"
	case p.Malformed != "":
		return "malformed: " + p.Malformed
	}
	return ""
}

func newOffender(file string, p *dissect.Packet, problem string) offender {
	o := offender{
		File:    file,
		Frame:   p.Frame,
		Flow:    fmt.Sprintf("%s > %s QP 0x%06x", p.SrcIP, p.DstIP, p.BTH.DestQP),
		Opcode:  p.BTH.Opcode.String(),
		PSN:     p.BTH.PSN,
		Problem: problem,
	}
	if p.ICRC != dissect.ICRCUnverifiable {
		o.ICRCFound = fmt.Sprintf("0x%08x", wireICRC(p.ICRCFound))
		o.ICRCExpected = fmt.Sprintf("0x%08x", wireICRC(p.ICRCComputed))
	}
	return o
}

// printVerdict writes the text report of one file.
func printVerdict(w io.Writer, v *fileVerdict) {
	state := "PASS"
	if !v.Passed {
		state = "FAIL"
	}
	fmt.Fprintf(w, "%s: %s (%s, %d RoCE)\n", v.File, state, count(int(v.Frames), "frame"), v.RoCE)
	if v.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", v.Error)
	}
	for _, r := range v.Rules {
		mark, limit := "ok  ", "no limit"
		if !r.Passed {
			mark = "FAIL"
		}
		if r.Limit >= 0 {
			limit = "max " + strconv.FormatInt(r.Limit, 10)
		}
		line := fmt.Sprintf("  %s %-18s %8d  (%s)", mark, r.Name, r.Value, limit)
		if r.Note != "" {
			line += ": " + r.Note
		}
		fmt.Fprintln(w, line)
	}
	if len(v.Offenders) > 0 {
		fmt.Fprintln(w, "  first offending packets:")
		for _, o := range v.Offenders {
			line := fmt.Sprintf("    %s frame %d: %s, %s PSN %d, %s", o.File, o.Frame, o.Flow, o.Opcode, o.PSN, o.Problem)
			if o.ICRCFound != "" && o.Problem == "bad ICRC" {
				line += fmt.Sprintf(" (found %s, expected %s)", o.ICRCFound, o.ICRCExpected)
			}
			fmt.Fprintln(w, line)
		}
		if v.OffendersMore > 0 {
			fmt.Fprintf(w, "    ... and %d more (--show)\n", v.OffendersMore)
		}
	}
}
