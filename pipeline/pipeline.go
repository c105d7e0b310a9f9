// Package pipeline reads a capture and hands every frame, decoded, to a
// single callback in capture order, on one goroutine or, for a pcap or pcapng
// file, on one goroutine per CPU. The analysis, which keeps state across
// packets, sees exactly the sequence the plain loop gives it, field for
// field, in either mode.
//
// In the parallel mode (chunked.go) the file is dealt out in pieces of half a
// megabyte: each worker reads its pieces with read calls of its own, finds
// their records and checks their ICRCs, the byte-heavy part of the work, in
// its own core's caches, and then, in file order, one worker at a time,
// decodes the headers and calls the callback. Only two small messages pass
// between the workers per piece, so no packet bytes move between cores.
// Memory stays bounded by the pieces in flight whatever the size of the
// capture, and nothing is allocated per frame.
package pipeline

import (
	"runtime"

	"roce-inspect/capture"
	"roce-inspect/dissect"
)

// Func receives a frame and its decoded packet; k says whether p holds a RoCE
// packet. f, p and the slices in them are valid only during the call. It
// returns false to stop reading. In the parallel mode it is called from
// several goroutines, but never from two at once, and each call happens
// after the previous one returned.
type Func func(f *capture.Frame, p *dissect.Packet, k dissect.Kind) bool

// Options configures Run.
type Options struct {
	// Parallel reads a pcap or pcapng file opened by capture.Open on one
	// worker per CPU (at most maxWorkers). Other inputs (gzip, a pipe or
	// standard input) are read serially whatever it says.
	Parallel bool
	// Ports are UDP destination ports that carry RoCEv2 besides 4791.
	Ports []uint16
}

// maxWorkers bounds the workers of the parallel mode: the file's reads
// share one memory system, so more cores soon stop paying.
const maxWorkers = 8

// Run reads r to its end and calls fn for every frame, decoded, in capture
// order. It returns whether fn asked to stop and the error of r.Next that
// ended the read: io.EOF at the clean end of the capture, nil when fn
// stopped. The frames before an error have all been handed to fn. Run
// returns only when no goroutine of its own uses r any more, so the caller
// may close r at once. The packets fn sees, and the error, are the same,
// field for field, whether Parallel is set or not.
func Run(r *capture.Reader, opt Options, fn Func) (stopped bool, err error) {
	if n := min(runtime.GOMAXPROCS(0), maxWorkers); opt.Parallel && n > 1 {
		if c, ok := r.Chunks(); ok {
			return chunked(r, c, n, pieceSizes{chunkSize, spillMax}, opt.Ports, fn)
		}
	}
	return serial(r, opt.Ports, fn)
}

// serial is the plain loop: read a frame, decode it, hand it on.
func serial(r *capture.Reader, ports []uint16, fn Func) (bool, error) {
	dec := dissect.NewDecoder(ports...)
	var f capture.Frame
	var p dissect.Packet
	for {
		if err := r.Next(&f); err != nil {
			return false, err
		}
		if !fn(&f, &p, dec.Decode(&f, &p)) {
			return true, nil
		}
	}
}
