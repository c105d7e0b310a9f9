package pipeline

import (
	"io"
	"sync"

	"roce-inspect/capture"
	"roce-inspect/dissect"
)

// The parallel mode splits a pcap or pcapng file into pieces of chunkSize
// bytes and deals them out to the N workers in turn: piece k to worker
// k mod N. Each worker reads its piece with a read call of its own, finds
// its records and checks their ICRCs, all in its own core's caches; no
// packet bytes move between cores. Two small messages pass from each worker
// to the worker of the next piece:
//
//   - where the next piece's first record starts, which only the walk over
//     this piece's records tells (a record may run over a piece's end); it
//     is sent as soon as the walk is done, before the CRCs;
//   - the turn: the callback, which keeps state across packets, runs piece
//     by piece in file order, so a worker decodes its piece's headers and
//     calls the callback only after the worker of the previous piece is
//     done with it.
//
// While one worker has the turn, the others read and check their pieces. A
// record the walk cannot take (longer than the limit, cut by the end of the
// file, behind a failed read, running further past its piece than spillMax,
// or a pcapng block other than a packet block) ends the parallel mode there: Run resumes the capture.Reader at
// that record and reads on serially, so that the error, if any, is the one
// the serial loop gives, after the same frames.

// chunkSize is the size of a piece: large enough that the messages between
// workers are rare, small enough that a piece stays in its core's caches
// from its read to its callbacks. Half a megabyte measured fastest on the
// project's 2-CPU machine (1 MiB and 256 KiB were 5-10% slower).
const chunkSize = 512 << 10

// spillMax bounds how far the last record of a piece may run past the
// piece's end. Only records over 256 KiB, larger than any link's frames,
// can run further (64 bytes are room for the record's header or pcapng
// block fields); the serial loop takes them.
const spillMax = 256<<10 + 64

// pieceSizes are chunkSize and spillMax, which tests make small to put
// many piece boundaries into small files. spill must be below piece, so
// that the next record always starts in the next piece.
type pieceSizes struct {
	piece, spill int
}

// Start offsets that say there is no next record to read.
const (
	endOfFile = -1 // the file ends after this piece's records
	stopHere  = -2 // the parallel mode ends in this piece
)

// turn is the message that hands the callback to the next piece.
type turn struct {
	frames int // frames handed out before the piece
}

// ending is how the parallel mode ended.
type ending struct {
	stopped bool  // the callback asked to stop
	eof     bool  // every record was read
	resume  int64 // otherwise the offset where serial reading takes over
	frames  int   // frames handed out
}

// chunkWorker is one worker's state.
type chunkWorker struct {
	id     int
	dec    *dissect.Decoder
	buf    []byte // the piece, and room for its last record's spill
	frames []capture.Frame
	checks []dissect.ICRCCheck
	p      dissect.Packet
	// start and turns receive the messages for this worker's next piece.
	start chan int64
	turns chan turn
}

// chunkRun is the state the workers share.
type chunkRun struct {
	c       *capture.Chunks
	sizes   pieceSizes
	fn      Func
	workers []*chunkWorker
	quit    chan struct{}
	once    sync.Once
	end     ending
}

// chunked runs the parallel mode with n workers and then, if it ended at a
// record it could not take, the serial loop from there.
func chunked(r *capture.Reader, c *capture.Chunks, n int, sizes pieceSizes, ports []uint16, fn Func) (bool, error) {
	cr := &chunkRun{c: c, sizes: sizes, fn: fn, quit: make(chan struct{})}
	for i := range n {
		cr.workers = append(cr.workers, &chunkWorker{
			id:    i,
			dec:   dissect.NewDecoder(ports...),
			buf:   make([]byte, sizes.piece+sizes.spill),
			start: make(chan int64, 1),
			turns: make(chan turn, 1),
		})
	}
	cr.workers[0].start <- c.DataStart()
	cr.workers[0].turns <- turn{}
	var wg sync.WaitGroup
	for _, w := range cr.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cr.work(w)
		}()
	}
	wg.Wait()
	switch e := cr.end; {
	case e.stopped:
		return true, nil
	case e.eof:
		return false, io.EOF
	default:
		if err := c.Resume(e.resume, e.frames); err != nil {
			return false, err
		}
		return serial(r, ports, fn)
	}
}

// finish records how the run ended, once, and stops every worker.
func (cr *chunkRun) finish(e ending) {
	cr.once.Do(func() {
		cr.end = e
		close(cr.quit)
	})
}

// work processes pieces w.id, w.id+N, w.id+2N, ... until the run ends.
func (cr *chunkRun) work(w *chunkWorker) {
	n := len(cr.workers)
	next := cr.workers[(w.id+1)%n]
	for k := w.id; ; k += n {
		pieceOff := cr.c.DataStart() + int64(k)*int64(cr.sizes.piece)
		// The read goes first, while the previous piece is still being
		// walked: it does not depend on where the records start.
		got, rerr := cr.c.ReadChunk(w.buf[:cr.sizes.piece], pieceOff)
		var start int64
		select {
		case start = <-w.start:
		case <-cr.quit:
			return
		}
		nextStart, resume := cr.walk(w, pieceOff, got, rerr, start)
		// The channel has room: its worker took the message before this
		// one, or this worker did, being the only one.
		next.start <- nextStart
		for i := range w.frames {
			w.checks[i] = w.dec.CheckICRC(&w.frames[i])
		}
		var t turn
		select {
		case t = <-w.turns:
		case <-cr.quit:
			return
		}
		for i := range w.frames {
			f := &w.frames[i]
			f.Index = t.frames + i + 1
			if !cr.fn(f, &w.p, w.dec.DecodeChecked(f, &w.p, w.checks[i])) {
				cr.finish(ending{stopped: true})
				return
			}
		}
		frames := t.frames + len(w.frames)
		switch {
		case resume >= 0:
			cr.finish(ending{resume: resume, frames: frames})
			return
		case nextStart == endOfFile:
			cr.finish(ending{eof: true, frames: frames})
			return
		}
		next.turns <- turn{frames: frames}
	}
}

// walk makes w.frames the records of the piece at file offset pieceOff, of
// which got bytes are in w.buf (rerr the read's error), from the record at
// file offset start on. It returns the offset of the next piece's first
// record, or endOfFile; or, when it meets a record it cannot take, stopHere
// and resume, that record's offset. resume is -1 otherwise. A start below
// zero, which ends the run before this piece, yields no frames.
func (cr *chunkRun) walk(w *chunkWorker, pieceOff int64, got int, rerr error, start int64) (nextStart, resume int64) {
	w.frames = w.frames[:0]
	if start < 0 {
		return stopHere, -1
	}
	hdr := cr.c.HeaderLen()
	piece, buf := cr.sizes.piece, w.buf
	end := got // bytes of buf holding file data
	// more makes buf[:need] hold file data, reading on past the piece's
	// end for a record that runs over it; false when the file ends or
	// fails first, or the record would not fit.
	more := func(need int) bool {
		if need <= end {
			return true
		}
		if need > len(buf) || rerr != nil {
			return false
		}
		m, err := cr.c.ReadAt(buf[end:need], pieceOff+int64(end))
		end += m
		rerr = err
		return end >= need
	}
	pos := int(start - pieceOff)
	for {
		switch {
		case pos >= piece:
			// In the next piece, since spill < piece.
			return pieceOff + int64(pos), -1
		case pos == end && rerr == io.EOF:
			return endOfFile, -1
		case !more(pos + hdr):
			return stopHere, pieceOff + int64(pos)
		}
		n, ok := cr.c.RecordLen(buf[pos : pos+hdr])
		if !ok || !more(pos+n) {
			return stopHere, pieceOff + int64(pos)
		}
		var f capture.Frame
		if !cr.c.Record(buf[pos:pos+n], pieceOff+int64(pos), &f) {
			return stopHere, pieceOff + int64(pos)
		}
		w.frames = append(w.frames, f)
		if len(w.checks) < len(w.frames) {
			w.checks = append(w.checks, dissect.ICRCCheck{})
		}
		pos += n
	}
}
