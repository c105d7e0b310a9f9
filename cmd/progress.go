package cmd

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"roce-inspect/capture"
)

// progress draws a progress bar on a terminal's stderr while a capture file
// is read: bytes read of the file's size, rate and time left. It stays
// silent for files that take less than a moment, on pipes, for standard
// input (no size) and when disabled. A nil *progress does nothing.
type progress struct {
	w     io.Writer
	delay time.Duration // how long a file must take before the bar shows
	every time.Duration
	mu    sync.Mutex
	stop  chan struct{}
	done  chan struct{}
	drawn bool
}

// Timing of the bar: it appears once a file has taken progressDelay, and is
// redrawn every progressEvery. Variables so that tests can shorten them.
var (
	progressDelay = 700 * time.Millisecond
	progressEvery = 200 * time.Millisecond
)

// newProgress returns a progress bar for stderr, or nil when stderr is not a
// terminal or quiet is set.
func newProgress(quiet bool) *progress { return progressOn(os.Stderr, quiet) }

// progressOn returns a progress bar drawn on f, or nil when f is not a
// terminal (a pipe, a file, /dev/null) or quiet is set: a bar's carriage
// returns would only garble a log.
func progressOn(f *os.File, quiet bool) *progress {
	if quiet || f == nil || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progress{w: f, delay: progressDelay, every: progressEvery}
}

// start begins watching r until finish is called.
func (pr *progress) start(r *capture.Reader) {
	if pr == nil || r.Size() <= 0 {
		return
	}
	pr.stop = make(chan struct{})
	pr.done = make(chan struct{})
	go pr.run(r, time.Now())
}

func (pr *progress) run(r *capture.Reader, began time.Time) {
	defer close(pr.done)
	t := time.NewTicker(pr.every)
	defer t.Stop()
	for {
		select {
		case <-pr.stop:
			return
		case now := <-t.C:
			if now.Sub(began) < pr.delay {
				continue
			}
			pr.draw(r.Name(), r.Consumed(), r.Size(), now.Sub(began))
		}
	}
}

// draw prints one line of the bar, overwriting the previous one.
func (pr *progress) draw(name string, done, size int64, elapsed time.Duration) {
	const width = 30
	frac := float64(done) / float64(size)
	if frac > 1 {
		frac = 1
	}
	rate := float64(done) / elapsed.Seconds()
	left := "?"
	if rate > 0 {
		left = time.Duration(float64(max(size-done, 0)) / rate * float64(time.Second)).Round(time.Second).String()
	}
	filled := int(frac * width)
	bar := make([]byte, width)
	for i := range bar {
		if i < filled {
			bar[i] = '='
		} else {
			bar[i] = ' '
		}
	}
	pr.mu.Lock()
	fmt.Fprintf(pr.w, "\r%s [%s] %5.1f%% %s/%s %s/s, %s left ", name, bar, frac*100,
		humanBytes(float64(done)), humanBytes(float64(size)), humanBytes(rate), left)
	pr.drawn = true
	pr.mu.Unlock()
}

// finish stops the bar and clears its line.
func (pr *progress) finish() {
	if pr == nil || pr.stop == nil {
		return
	}
	close(pr.stop)
	<-pr.done
	pr.stop = nil
	pr.mu.Lock()
	if pr.drawn {
		fmt.Fprint(pr.w, "\r\033[K")
		pr.drawn = false
	}
	pr.mu.Unlock()
}

// humanBytes formats a byte count with a binary-free SI unit, as disks and
// links are sold.
func humanBytes(b float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB"}
	i := 0
	for b >= 1000 && i < len(units)-1 {
		b /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
