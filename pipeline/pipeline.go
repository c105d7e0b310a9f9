// Package pipeline reads a capture and hands every frame, decoded, to a
// single callback in capture order, optionally on two goroutines: one reads
// the file and checks the invariant CRC of every packet, the byte-heavy half
// of the work, while the calling goroutine decodes the headers and runs the
// callback. The analysis, which keeps state across packets, sees exactly the
// sequence the plain loop gives it, field for field.
//
// In the parallel mode the reading goroutine asks the capture.Reader to keep
// its frames valid (capture.Reader.KeepFrames), so that frames are never
// copied, checks the ICRC of each frame as it reads it
// (dissect.Decoder.CheckICRC), while the frame is still in that core's
// caches, and hands batches of frames and twelve-byte ICRC outcomes to the
// caller, which decodes the rest of each frame (dissect.Decoder.DecodeChecked)
// and calls the callback. The payloads stay with the reading core; only the
// headers, the frame descriptions and the outcomes move to the caller's.
// Batches and the reader's windows are recycled, so memory
// stays bounded by the batches in flight whatever the size of the capture,
// and nothing is allocated per frame.
//
// Whether the parallel mode pays depends on the machine: it saves the CRC
// and the reading from the caller's core, and costs the cache misses of the
// headers moving between cores and the hand-offs of the batches.
package pipeline

import (
	"sync"

	"roce-inspect/capture"
	"roce-inspect/dissect"
)

// Func receives a frame and its decoded packet; k says whether p holds a RoCE
// packet. f, p and the slices in them are valid only during the call. It
// returns false to stop reading.
type Func func(f *capture.Frame, p *dissect.Packet, k dissect.Kind) bool

// Options configures Run.
type Options struct {
	// Parallel reads the capture and checks the ICRCs on a goroutine of
	// its own, a batch of frames ahead of the caller. Leave it false for
	// a pipe or a live capture, where a batch would hold back packets
	// that arrive slowly.
	Parallel bool
	// Ports are UDP destination ports that carry RoCEv2 besides 4791.
	Ports []uint16
}

// Sizes of the parallel mode.
const (
	// A batch ends at batchFrames frames or once it holds batchBytes of
	// frame data, whichever comes first: large, because every hand-off
	// between goroutines costs a wake-up and, on a busy machine, a wait
	// for the scheduler.
	batchFrames = 4096
	batchBytes  = 1 << 20
	// batches is how many batches are in flight: one being filled, one
	// being handed to the callback, and two to absorb jitter.
	batches = 4
	// windowSize is the size of the reader windows recycled; the reader
	// asks for no more than its own window size, 1 MiB.
	windowSize = 1 << 20
	// spareWindows bounds the windows kept for reuse.
	spareWindows = batches + 2
)

// batch is a group of consecutive frames and the outcome of their ICRC
// checks.
type batch struct {
	n      int
	frames [batchFrames]capture.Frame
	checks [batchFrames]dissect.ICRCCheck
	// release are reader windows that are free once the frames of this
	// batch have been handed to the callback.
	release [][]byte
	// err is the error that ended reading after the frames of this batch
	// (io.EOF at the clean end).
	err error
}

// Run reads r to its end and calls fn for every frame, decoded, in capture
// order. It returns whether fn asked to stop and the error of r.Next that
// ended the read: io.EOF at the clean end of the capture, nil when fn
// stopped. The frames before an error have all been handed to fn. Run
// returns only when no goroutine of its own uses r any more, so the caller
// may close r at once. The packets fn sees are the same, field for field,
// whether Parallel is set or not.
func Run(r *capture.Reader, opt Options, fn Func) (stopped bool, err error) {
	if !opt.Parallel {
		return serial(r, opt.Ports, fn)
	}
	return parallel(r, opt.Ports, fn)
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

// reader is the reading goroutine's state.
type reader struct {
	r   *capture.Reader
	dec *dissect.Decoder
	// filling is the batch being filled, on which a window the reader
	// leaves is tagged for release; window is the one it reads into.
	filling *batch
	window  []byte
	// spare holds windows free for reuse; the caller puts them back.
	spare chan []byte
}

// fill reads frames into b and checks their ICRCs until b is full or the
// reader fails.
func (rd *reader) fill(b *batch) {
	b.n, b.err = 0, nil
	rd.filling = b
	size := 0
	for b.n < batchFrames && size < batchBytes {
		f := &b.frames[b.n]
		if err := rd.r.Next(f); err != nil {
			b.err = err
			return
		}
		b.checks[b.n] = rd.dec.CheckICRC(f)
		size += len(f.Data)
		b.n++
	}
}

// alloc gives the capture reader a new window and tags the one it leaves for
// release after the batch being filled, which holds the last frames read
// from it.
func (rd *reader) alloc(size int) []byte {
	if rd.window != nil {
		rd.filling.release = append(rd.filling.release, rd.window)
	}
	var w []byte
	if size <= windowSize {
		select {
		case w = <-rd.spare:
		default:
			w = make([]byte, windowSize)
		}
	} else {
		w = make([]byte, size)
	}
	rd.window = w
	return w
}

// recycle makes the windows tagged on b free for reuse.
func (rd *reader) recycle(b *batch) {
	for _, w := range b.release {
		if len(w) == windowSize {
			select {
			case rd.spare <- w:
			default:
			}
		}
	}
	clear(b.release)
	b.release = b.release[:0]
}

func parallel(r *capture.Reader, ports []uint16, fn Func) (stopped bool, err error) {
	rd := &reader{r: r, dec: dissect.NewDecoder(ports...), spare: make(chan []byte, spareWindows)}
	r.KeepFrames(rd.alloc)
	free := make(chan *batch, batches)
	filled := make(chan *batch, batches)
	quit := make(chan struct{})
	for range batches {
		free <- &batch{}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(filled)
		for {
			var b *batch
			select {
			case <-quit:
				return
			case b = <-free:
			}
			select {
			case <-quit: // both were ready: do not read on
				return
			default:
			}
			rd.fill(b)
			filled <- b
			if b.err != nil {
				return
			}
		}
	}()

	dec := dissect.NewDecoder(ports...)
	var p dissect.Packet
	for b := range filled {
		if !stopped {
			for i := range b.n {
				f := &b.frames[i]
				if !fn(f, &p, dec.DecodeChecked(f, &p, b.checks[i])) {
					stopped = true
					close(quit)
					break
				}
			}
			if !stopped && b.err != nil {
				err = b.err
			}
		}
		rd.recycle(b)
		free <- b
	}
	// filled is closed: the reading goroutine is returning.
	wg.Wait()
	return stopped, err
}
