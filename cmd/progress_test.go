package cmd

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"roce-inspect/capture"
	"roce-inspect/gen"
)

// TestProgressOnlyOnTerminal checks that no bar is made for a stderr that is
// not a terminal, whatever the file, nor with --quiet. A nil bar draws
// nothing: only a bar's own methods write, and they do nothing on nil.
func TestProgressOnlyOnTerminal(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	regular, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer regular.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, tc := range []struct {
		name string
		f    *os.File
	}{{"pipe", pw}, {"regular file", regular}, {"/dev/null", devNull}, {"no file", nil}} {
		for _, quiet := range []bool{false, true} {
			if p := progressOn(tc.f, quiet); p != nil {
				t.Errorf("%s, quiet %v: a progress bar was made", tc.name, quiet)
			}
		}
	}
}

// TestNilProgressIsSilent runs a nil bar through its whole life on a real
// reader: it must neither panic nor start anything.
func TestNilProgressIsSilent(t *testing.T) {
	path := benchCapture(t, 1000)
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var p *progress
	p.start(r)
	p.finish()
}

// TestNoProgressOnPipe runs whole analyze, check and decode commands with
// stderr a pipe and the bar's delay and interval shortened to nothing, so
// that a bar would be drawn many times during the run if it were drawn at
// all: nothing may reach the pipe.
func TestNoProgressOnPipe(t *testing.T) {
	path := benchCapture(t, 200000)
	defer func(d, e time.Duration) { progressDelay, progressEvery = d, e }(progressDelay, progressEvery)
	progressDelay, progressEvery = 0, time.Millisecond

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- b
	}()
	saved := os.Stderr
	os.Stderr = pw
	for _, args := range [][]string{
		{"analyze", "--format", "json", path},
		{"check", path},
		{"decode", "--count", "5", path},
	} {
		var stdout, stderr bytes.Buffer
		if status := run(args, &stdout, &stderr); status != 0 {
			os.Stderr = saved
			t.Fatalf("%v: status %d: %s", args, status, stderr.String())
		}
	}
	os.Stderr = saved
	pw.Close()
	if b := <-got; len(b) != 0 {
		t.Errorf("%d bytes reached a piped stderr: %q", len(b), firstBytes(b, 80))
	}
}

// TestProgressDraw checks one line of the bar: the name, the share read, the
// sizes, and a carriage return to draw over the previous line.
func TestProgressDraw(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf}
	p.draw("big.pcap", 250e6, 1e9, 2*time.Second)
	line := buf.String()
	for _, want := range []string{"\r", "big.pcap", " 25.0%", "250.0 MB/1.0 GB", "125.0 MB/s", "6s left"} {
		if !strings.Contains(line, want) {
			t.Errorf("bar %q lacks %q", line, want)
		}
	}
	// The reader reads ahead: it may report more than the size of a file
	// that grows while it is read.
	buf.Reset()
	p.draw("growing.pcap", 1100e6, 1e9, time.Second)
	for _, want := range []string{"100.0%", "0s left"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("bar %q lacks %q", buf.String(), want)
		}
	}
	buf.Reset()
	p.finish() // nothing started: nothing to clear
	if buf.Len() != 0 {
		t.Errorf("finish without start wrote %q", buf.String())
	}
}

// benchCapture writes a capture of small packets with the bench scenario.
func benchCapture(t *testing.T, frames int) string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Config{Scenario: "bench", Packets: frames, Seed: 1, ECN: true}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bench.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func firstBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
