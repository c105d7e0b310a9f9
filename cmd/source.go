package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"roce-inspect/capture"
	"roce-inspect/dissect"
	"roce-inspect/pipeline"
)

// frameFunc receives every frame of the capture files in order, decoded.
// file is the path as given; k says whether p holds a RoCE packet. It
// returns false to stop reading.
type frameFunc func(file string, f *capture.Frame, p *dissect.Packet, k dissect.Kind) bool

// scanResult is what reading the capture files found besides the frames.
type scanResult struct {
	// Warnings are one-line messages about damage that did not stop the
	// read, such as a file cut short in the middle of a record. They name
	// the file and carry no "warning: " prefix: the report's own warnings
	// have none, and each output adds it where it prints them.
	Warnings []string
	// Truncated counts the files that ended in the middle of a record.
	Truncated int
	// Stopped is true when the frame function asked to stop.
	Stopped bool
}

// scanFiles reads the capture files in the order given, as one capture, and
// hands every frame to fn. A file cut short mid-record adds a warning and
// reading goes on with the next file. Any other fault ends the scan with an
// error naming the file and the place; the frames before it have already
// been handed to fn, so callers still report them.
func scanFiles(files []string, ports []uint16, prog *progress, fn frameFunc) (scanResult, error) {
	var res scanResult
	for _, name := range files {
		r, err := capture.Open(name)
		if err != nil {
			return res, err
		}
		prog.start(r)
		res.Stopped, err = pipeline.Run(r, pipeline.Options{Parallel: parallelRead(), Ports: ports},
			func(f *capture.Frame, p *dissect.Packet, k dissect.Kind) bool { return fn(name, f, p, k) })
		prog.finish()
		r.Close()
		switch {
		case res.Stopped:
			return res, nil
		case err == nil || err == io.EOF:
		case errors.Is(err, capture.ErrTruncated):
			res.Truncated++
			res.Warnings = append(res.Warnings, fmt.Sprintf("%v; the results cover the frames before it", err))
		default:
			return res, err
		}
	}
	return res, nil
}

// parallelEnv, set to 0, reads every file with the serial loop of package
// pipeline instead of the parallel mode it uses for pcap and pcapng files
// when there is more than one CPU: for measuring one against the other, and
// a way out should the parallel mode misbehave somewhere. Both hand the
// analysis the same packets.
const parallelEnv = "ROCE_INSPECT_PARALLEL"

// parallelRead says whether to let package pipeline read in parallel. It
// does so only for a file opened by name, which it reads in pieces at their
// offsets; gzip, a pipe and standard input go through the serial loop
// whatever this says.
func parallelRead() bool {
	return os.Getenv(parallelEnv) != "0"
}

// endStatus turns what a scan found into the command's end: a read error
// ends it with status 2 (any warnings about earlier files printed first); so
// does a file cut short in the middle of a record, with one line per such
// file, after the results of the frames before the cut were printed.
func (r scanResult) endStatus(stderr io.Writer, err error) error {
	if err != nil {
		for _, w := range r.Warnings {
			fmt.Fprintln(stderr, "warning: "+w)
		}
		return fileError{err}
	}
	if r.Truncated > 0 {
		return exitStatusError{status: exitError, msg: strings.Join(r.Warnings, "\nroce-inspect: ")}
	}
	return nil
}
