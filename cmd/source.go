package cmd

import (
	"errors"
	"fmt"
	"io"

	"roce-inspect/capture"
	"roce-inspect/dissect"
)

// frameFunc receives every frame of the capture files in order, decoded.
// file is the path as given; k says whether p holds a RoCE packet. It
// returns false to stop reading.
type frameFunc func(file string, f *capture.Frame, p *dissect.Packet, k dissect.Kind) bool

// scanResult is what reading the capture files found besides the frames.
type scanResult struct {
	// Warnings are one-line messages about damage that did not stop the
	// read, such as a file cut short in the middle of a record.
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
	dec := dissect.NewDecoder(ports...)
	var f capture.Frame
	var p dissect.Packet
	for _, name := range files {
		r, err := capture.Open(name)
		if err != nil {
			return res, err
		}
		prog.start(r)
		for {
			err = r.Next(&f)
			if err != nil {
				break
			}
			k := dec.Decode(&f, &p)
			if !fn(name, &f, &p, k) {
				res.Stopped = true
				break
			}
		}
		prog.finish()
		r.Close()
		switch {
		case res.Stopped:
			return res, nil
		case err == nil || err == io.EOF:
		case errors.Is(err, capture.ErrTruncated):
			res.Truncated++
			res.Warnings = append(res.Warnings, fmt.Sprintf("warning: %v; the results cover the frames before it", err))
		default:
			return res, err
		}
	}
	return res, nil
}
