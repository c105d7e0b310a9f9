// Package cmd holds the roce-inspect command-line interface.
package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// Exit statuses shared by every command.
const (
	exitOK      = 0
	exitProblem = 1 // a check rule was broken
	exitError   = 2 // usage error, or an unreadable or malformed file
)

// globalOptions are the flags every command takes.
type globalOptions struct {
	ports []uint16
	quiet bool
}

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// fileError is a capture file that could not be read; its message already
// names the file.
type fileError struct{ err error }

func (e fileError) Error() string { return e.err.Error() }
func (e fileError) Unwrap() error { return e.err }

// exitStatusError ends the command with a given status after its output was
// written; its message, if any, is printed.
type exitStatusError struct {
	status int
	msg    string
}

func (e exitStatusError) Error() string { return e.msg }

// Execute runs the command line and returns the process exit status.
func Execute() int {
	return run(os.Args[1:], os.Stdout, os.Stderr)
}

// run runs the command line args with the given output streams and returns
// the exit status; tests call it directly.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err == nil {
		return exitOK
	}
	var es exitStatusError
	if errors.As(err, &es) {
		if es.msg != "" {
			fmt.Fprintln(stderr, "roce-inspect: "+es.msg)
		}
		return es.status
	}
	fmt.Fprintln(stderr, "roce-inspect: "+err.Error())
	return exitError
}

// cpuProfile is the hidden --cpuprofile flag, for measuring where the time
// of a run goes.
var cpuProfile string

func newRootCommand() *cobra.Command {
	g := &globalOptions{}
	var ports []uint
	ao := &analyzeOptions{}
	root := &cobra.Command{
		Use:   "roce-inspect [FILE...]",
		Short: "Dissect and analyze RoCE captures: per-QP flows, PSN gaps, NAKs, ECN, CNPs, ECMP, ICRC",
		Long: `roce-inspect reads RoCEv2 (UDP port 4791) and RoCEv1 (Ethertype 0x8915)
captures and tells what happened on every queue pair: traffic, PSN gaps and
retransmissions, NAKs, ECN congestion marks and CNPs, how well the UDP source
ports spread flows over ECMP paths, and whether every packet's invariant CRC
is right. With files and no command it runs "analyze".`,
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
			}
			for _, p := range ports {
				if p == 0 || p > 65535 {
					return usageErrorf("--port %d is not a UDP port", p)
				}
				g.ports = append(g.ports, uint16(p))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return runAnalyze(c.OutOrStdout(), c.ErrOrStderr(), args, g, ao)
		},
	}
	root.PersistentFlags().UintSliceVar(&ports, "port", nil, "more UDP destination ports that carry RoCEv2 (4791 always does)")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "no progress bar")
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (for go tool pprof)")
	root.PersistentFlags().MarkHidden("cpuprofile")
	addAnalyzeFlags(root, ao)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	root.AddCommand(newAnalyzeCommand(g), newDecodeCommand(g), newCheckCommand(g), newGenCommand(), newLiveCommand(g))
	return root
}
