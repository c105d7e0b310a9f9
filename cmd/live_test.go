//go:build linux

package cmd

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"roce-inspect/analyze"
	"roce-inspect/capture"
	"roce-inspect/dissect"
	"roce-inspect/gen"
	"roce-inspect/livecap"
	lt "roce-inspect/livecap/livecaptest"
)

// liveDeadline bounds every wait of the live tests; reaching it means
// something is stuck, not slow.
const liveDeadline = 10 * time.Second

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// liveRun is `roce-inspect live` running inside a namespace of a pair.
type liveRun struct {
	stdout, stderr syncBuffer
	status         int
	done           <-chan error
}

// startLive runs the command line args (after "live -i LINK") on side 0
// of the pair and waits until the capture has started.
func startLive(t *testing.T, p *lt.Pair, args ...string) *liveRun {
	t.Helper()
	l := &liveRun{}
	full := append([]string{"live", "-i", p.Link[0]}, args...)
	l.done = p.Go(0, func() error {
		l.status = run(full, &l.stdout, &l.stderr)
		return nil
	})
	end := time.Now().Add(liveDeadline)
	for !strings.Contains(l.stderr.String(), "capturing on "+p.Link[0]) {
		select {
		case err := <-l.done:
			t.Fatalf("live ended before capturing (status %d, %v): %s", l.status, err, l.stderr.String())
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("live did not start by the deadline: %s", l.stderr.String())
		}
		time.Sleep(time.Millisecond)
	}
	return l
}

var roceCount = regexp.MustCompile(`, (\d+) RoCE,`)

// roceSeen returns the RoCE packets the last interval line counted.
func (l *liveRun) roceSeen() int {
	m := roceCount.FindAllStringSubmatch(l.stderr.String(), -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

// wait waits for the command to end and returns its exit status.
func (l *liveRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-l.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * liveDeadline):
		t.Fatalf("live did not end: %s", l.stderr.String())
	}
	return l.status
}

// sendAllRoCE sends frames that are all RoCE and waits until live has
// counted every one of them.
func (l *liveRun) sendAllRoCE(t *testing.T, p *lt.Pair, frames [][]byte) {
	t.Helper()
	roce := make([]bool, len(frames))
	for i := range roce {
		roce[i] = true
	}
	l.send(t, p, frames, roce)
	end := time.Now().Add(liveDeadline)
	for l.roceSeen() < len(frames) {
		if time.Now().After(end) {
			t.Fatalf("live saw %d of %d frames by the deadline", l.roceSeen(), len(frames))
		}
		time.Sleep(time.Millisecond)
	}
}

// send sends the frames from side 1, paced by what the live command
// reports having seen; roce marks the frames its filter must admit.
func (l *liveRun) send(t *testing.T, p *lt.Pair, frames [][]byte, roce []bool) {
	t.Helper()
	snd, err := p.NewSender(1)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	if err := snd.SendAll(frames, roce, 200, l.roceSeen, time.Now().Add(liveDeadline)); err != nil {
		t.Fatal(err)
	}
}

// volatileKeys are the report fields that legitimately differ between a
// live capture and the analysis of the same frames in a file: times and
// what is derived from them.
var volatileKeys = map[string][]string{
	"":           {"first_ts", "last_ts", "span_seconds", "gbps", "capture"},
	"flows":      {"first_ts", "last_ts", "duration_seconds", "gbps"},
	"congestion": {"first_ce_ts", "first_ce_to_cnp_us"},
}

// stableJSON decodes a report and removes its volatile fields.
func stableJSON(t *testing.T, name, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, text)
	}
	for _, k := range volatileKeys[""] {
		delete(m, k)
	}
	for list, keys := range volatileKeys {
		if list == "" {
			continue
		}
		items, _ := m[list].([]any)
		for _, it := range items {
			for _, k := range keys {
				delete(it.(map[string]any), k)
			}
		}
	}
	return m
}

// sameReport fails the test when two reports differ beyond their volatile
// fields, showing the first differing line.
func sameReport(t *testing.T, gotName, got, wantName, want string) {
	t.Helper()
	g, w := stableJSON(t, gotName, got), stableJSON(t, wantName, want)
	if reflect.DeepEqual(g, w) {
		return
	}
	gb, _ := json.MarshalIndent(g, "", "  ")
	wb, _ := json.MarshalIndent(w, "", "  ")
	gl, wl := strings.Split(string(gb), "\n"), strings.Split(string(wb), "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var a, b string
		if i < len(gl) {
			a = gl[i]
		}
		if i < len(wl) {
			b = wl[i]
		}
		if a != b {
			lo := max(0, i-8)
			t.Fatalf("%s differs from %s at line %d:\n%s\n  got:  %s\n  want: %s",
				gotName, wantName, i+1, strings.Join(wl[lo:i], "\n"), a, b)
		}
	}
}

// writePcapng writes frames to a pcapng file with made-up, increasing
// timestamps.
func writePcapng(t *testing.T, path string, frames [][]byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := capture.NewPcapngWriter(f, []capture.Interface{{Name: "sent", LinkType: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for i, fr := range frames {
		if err := w.WriteFrame(0, 1_700_000_000e9+int64(i)*1000, fr, len(fr)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// analyzeJSON runs `analyze --format json` on files.
func analyzeJSON(t *testing.T, files ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if status := run(append([]string{"analyze", "-q", "--format", "json"}, files...), &stdout, &stderr); status != 0 {
		t.Fatalf("analyze %v: status %d: %s", files, status, stderr.String())
	}
	return stdout.String()
}

// liveTraffic generates the frames of the live tests: the mixed scenario
// and 8 KiB jumbo frames with bad ICRCs, some behind a VLAN tag or two,
// interleaved with frames the filter must refuse. It returns all frames,
// which of them are RoCE, the RoCE frames alone, and gen's count of bad
// ICRCs.
func liveTraffic(t *testing.T) (all [][]byte, roce []bool, roceOnly [][]byte, badICRC int) {
	t.Helper()
	vlan := lt.Tag{TPID: lt.TPIDVLAN, TCI: 0x6064}
	sTag := lt.Tag{TPID: lt.TPIDQinQ, TCI: 0x00c8}
	i := 0
	for _, cfg := range []gen.Config{
		{Scenario: "mixed", Seed: 1, ECN: true},
		{Scenario: "bad-icrc", Seed: 2, Payload: 8192, ECN: true},
	} {
		frames, st, _, err := lt.GenFrames(cfg)
		if err != nil {
			t.Fatal(err)
		}
		badICRC += st.BadICRCCount
		for _, fr := range frames {
			switch {
			case i%9 == 4:
				fr = lt.InsertTag(fr, vlan)
			case i%13 == 6:
				fr = lt.InsertTag(lt.InsertTag(fr, vlan), sTag)
			}
			all, roce, roceOnly = append(all, fr), append(roce, true), append(roceOnly, fr)
			if i%50 == 0 {
				for _, n := range lt.NotRoCE() {
					all, roce = append(all, n.Frame), append(roce, false)
				}
			}
			i++
		}
	}
	return all, roce, roceOnly, badICRC
}

// TestLiveMatchesAnalyze captures traffic with `live`, and checks that
// every RoCE frame arrived and nothing else, that the live report equals
// the analysis of the frames sent, that the -w file holds the same frames
// (its analysis is the same report again), one interface named after the
// link and the kernel's counters at the end, and the ICRC verdicts are
// gen's.
func TestLiveMatchesAnalyze(t *testing.T) {
	p := lt.NewPair(t, 9000)
	all, roce, roceOnly, badICRC := liveTraffic(t)
	dir := t.TempDir()
	sent := filepath.Join(dir, "sent.pcapng")
	written := filepath.Join(dir, "live.pcapng")
	writePcapng(t, sent, roceOnly)

	l := startLive(t, p, "--count", strconv.Itoa(len(roceOnly)), "--format", "json", "-w", written,
		"--interval", "20ms", "--duration", "30s")
	l.send(t, p, all, roce)
	if status := l.wait(t); status != 0 {
		t.Fatalf("live: status %d: %s", status, l.stderr.String())
	}
	liveOut := l.stdout.String()

	var lr struct {
		analyze.Report
		Capture liveCapture `json:"capture"`
	}
	if err := json.Unmarshal([]byte(liveOut), &lr); err != nil {
		t.Fatal(err)
	}
	r := &lr.Report
	n := uint64(len(roceOnly))
	if r.Packets.Total != n || r.Packets.RoCE != n || r.Packets.NotRoCE != 0 || r.Packets.Malformed != 0 {
		t.Errorf("packets %+v: want %d RoCE frames and nothing else", r.Packets, n)
	}
	if r.ICRC.Bad != uint64(badICRC) || r.ICRC.Good != n-uint64(badICRC) || r.ICRC.Unverifiable != 0 {
		t.Errorf("ICRC %+v: want %d bad (gen's count) and every other good", r.ICRC, badICRC)
	}
	if r.ECN.CE == 0 || r.CNP == 0 || len(r.Problems) == 0 {
		t.Errorf("CE %d, CNP %d, %d problems: the mixed scenario has all three", r.ECN.CE, r.CNP, len(r.Problems))
	}
	c := lr.Capture
	if c.Interface != p.Link[0] || c.Stopped != stopCount.String() || c.KernelDropped != 0 || c.KernelReceived < n || c.Written != written {
		t.Errorf("capture %+v: want interface %s, stopped by count, no drops, at least %d received", c, p.Link[0], n)
	}

	sameReport(t, "live report", liveOut, "analyze of the frames sent", analyzeJSON(t, sent))
	sameReport(t, "live report", liveOut, "analyze of the -w file", analyzeJSON(t, written))

	data, err := os.ReadFile(written)
	if err != nil {
		t.Fatal(err)
	}
	checkLivePcapng(t, data, p.Link[0], n)
	checkWithTshark(t, written, p.Link[0], len(roceOnly))
	// The file holds the frames as sent, tags included.
	rd, err := capture.Open(written)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var f capture.Frame
	for i := range roceOnly {
		if err := rd.Next(&f); err != nil {
			t.Fatalf("-w frame %d: %v", i+1, err)
		}
		if !bytes.Equal(f.Data, roceOnly[i]) || f.Len != len(roceOnly[i]) {
			t.Fatalf("-w frame %d differs from the frame sent", i+1)
		}
	}
}

// checkLivePcapng walks the blocks of a -w file: a section header, one
// interface description naming the link, the packets, and last an
// interface statistics block with the kernel's counters.
func checkLivePcapng(t *testing.T, data []byte, link string, frames uint64) {
	t.Helper()
	le := binary.LittleEndian
	var types []uint32
	var idbName string
	var recv, drop uint64 = 0, ^uint64(0)
	for off := 0; off < len(data); {
		if off+12 > len(data) {
			t.Fatalf("block at %d cut short", off)
		}
		typ, blen := le.Uint32(data[off:]), int(le.Uint32(data[off+4:]))
		if blen < 12 || off+blen > len(data) {
			t.Fatalf("block at %d: bad length %d", off, blen)
		}
		body := data[off+8 : off+blen-4]
		types = append(types, typ)
		opts := func(skip int, fn func(code int, v []byte)) {
			for o := skip; o+4 <= len(body); {
				code, l := int(le.Uint16(body[o:])), int(le.Uint16(body[o+2:]))
				if code == 0 || o+4+l > len(body) {
					return
				}
				fn(code, body[o+4:o+4+l])
				o += 4 + (l+3)&^3
			}
		}
		switch typ {
		case 1: // interface description: link type, reserved, snap length, options
			opts(8, func(code int, v []byte) {
				if code == 2 {
					idbName = string(v)
				}
			})
		case 5: // interface statistics: interface, timestamp, options
			opts(12, func(code int, v []byte) {
				switch code {
				case 4:
					recv = le.Uint64(v)
				case 5:
					drop = le.Uint64(v)
				}
			})
		}
		off += blen
	}
	if len(types) < 3 || types[0] != 0x0a0d0d0a || types[1] != 1 || types[len(types)-1] != 5 {
		t.Fatalf("block types %x: want a section header, an interface, packets, statistics last", types)
	}
	idbs := 0
	for _, typ := range types {
		if typ == 1 {
			idbs++
		}
	}
	if idbs != 1 {
		t.Errorf("%d interface descriptions, want 1", idbs)
	}
	if idbName != link {
		t.Errorf("interface named %q, want %q", idbName, link)
	}
	if recv < frames || drop != 0 {
		t.Errorf("statistics: %d received, %d dropped; want at least %d received, none dropped", recv, drop, frames)
	}
}

// checkWithTshark has tshark, an independent reader, list the frames of a
// pcapng file by interface name; it skips nothing when tshark is absent.
func checkWithTshark(t *testing.T, path, link string, frames int) {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Log("tshark not found: the -w file is not checked by an independent reader")
		return
	}
	out, err := exec.Command(tshark, "-n", "-r", path, "-T", "fields", "-e", "frame.interface_name").Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v", path, err)
	}
	names := strings.Fields(string(out))
	if len(names) != frames {
		t.Errorf("tshark reads %d frames, want %d", len(names), frames)
	}
	for i, n := range names {
		if n != link {
			t.Errorf("tshark: frame %d on interface %q, want %q", i+1, n, link)
			break
		}
	}
}

// TestLiveInterfaceDown sets the link down during a capture: live prints
// the report of what it captured, then the error, and ends with status 2.
func TestLiveInterfaceDown(t *testing.T) {
	p := lt.NewPair(t, 9000)
	frames, _, _, err := lt.GenFrames(gen.Config{Scenario: "rc-write", Seed: 7, Packets: 30})
	if err != nil {
		t.Fatal(err)
	}
	l := startLive(t, p, "--format", "json", "--interval", "20ms", "--duration", "30s")
	l.sendAllRoCE(t, p, frames)
	if err := p.SetDown(0); err != nil {
		t.Fatal(err)
	}
	if status := l.wait(t); status != exitError {
		t.Fatalf("status %d, want %d: %s", status, exitError, l.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(l.stderr.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "roce-inspect: ") || !strings.Contains(last, p.Link[0]) || !strings.Contains(last, "went down") ||
		!strings.Contains(last, fmt.Sprintf("covers the %d frames", len(frames))) {
		t.Errorf("last line of stderr %q: want the error naming %s, saying it went down and what the report covers", last, p.Link[0])
	}
	var lr liveReport
	lr.Report = &analyze.Report{}
	if err := json.Unmarshal([]byte(l.stdout.String()), &lr); err != nil {
		t.Fatalf("no report before the error: %v\n%s", err, l.stdout.String())
	}
	if lr.Packets.RoCE != uint64(len(frames)) || lr.Capture.Stopped != stopError.String() {
		t.Errorf("report: %d RoCE packets, stopped %q; want %d, %q", lr.Packets.RoCE, lr.Capture.Stopped, len(frames), stopError)
	}
}

// TestLiveBPF replaces the RoCE filter with `tcpdump -dd udp dst port
// 4791`, which refuses RoCEv1: only the RoCEv2 frames must be captured.
func TestLiveBPF(t *testing.T) {
	p := lt.NewPair(t, 9000)
	dir := t.TempDir()
	prog := filepath.Join(dir, "filter.dd")
	if err := os.WriteFile(prog, []byte(lt.TcpdumpUDPDst4791), 0o644); err != nil {
		t.Fatal(err)
	}
	v1, _, _, err := lt.GenFrames(gen.Config{Scenario: "rc-write", Seed: 8, RoCEv1: true, Packets: 20})
	if err != nil {
		t.Fatal(err)
	}
	v2, _, _, err := lt.GenFrames(gen.Config{Scenario: "rc-write", Seed: 9, Packets: 20})
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(v1), v2...)
	admitted := make([]bool, len(all))
	for i := len(v1); i < len(all); i++ {
		admitted[i] = true
	}
	l := startLive(t, p, "--bpf", prog, "--count", strconv.Itoa(len(v2)), "--format", "json", "--interval", "20ms", "--duration", "30s")
	if !strings.Contains(l.stderr.String(), "filter from "+prog) {
		t.Errorf("start line does not name the filter: %s", l.stderr.String())
	}
	l.send(t, p, all, admitted)
	if status := l.wait(t); status != 0 {
		t.Fatalf("status %d: %s", status, l.stderr.String())
	}
	var r analyze.Report
	if err := json.Unmarshal([]byte(l.stdout.String()), &r); err != nil {
		t.Fatal(err)
	}
	if r.Packets.RoCEv1 != 0 || r.Packets.RoCEv2 != uint64(len(v2)) || r.Packets.Total != uint64(len(v2)) {
		t.Errorf("packets %+v: want the %d RoCEv2 frames only", r.Packets, len(v2))
	}
}

// TestLiveUsageErrors checks the errors found before capturing: each is
// one plain line and status 2.
func TestLiveUsageErrors(t *testing.T) {
	dir := t.TempDir()
	badProg := filepath.Join(dir, "bad.dd")
	if err := os.WriteFile(badProg, []byte("(000) ldh [12]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no interface flag", []string{"live"}, []string{"-i IFACE"}},
		{"no such interface", []string{"live", "-i", "roce-nosuch0"}, []string{`no such network interface "roce-nosuch0"`, "interfaces: ", "lo"}},
		{"bad format", []string{"live", "-i", "lo", "--format", "xml"}, []string{`unknown --format "xml"`}},
		{"bad interval", []string{"live", "-i", "lo", "--interval", "0s"}, []string{"--interval"}},
		{"bad buffer", []string{"live", "-i", "lo", "--buffer", "0"}, []string{"--buffer"}},
		{"bad qp", []string{"live", "-i", "lo", "--qp", "zz"}, []string{"--qp"}},
		{"bpf not parsed", []string{"live", "-i", "lo", "--bpf", badProg}, []string{"--bpf", "line 1", "tcpdump -dd"}},
		{"bpf missing", []string{"live", "-i", "lo", "--bpf", filepath.Join(dir, "none.dd")}, []string{"--bpf", "no such file"}},
		{"arguments", []string{"live", "-i", "lo", "extra"}, []string{"unknown command"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := run(tc.args, &stdout, &stderr)
			if status != exitError {
				t.Errorf("status %d, want %d", status, exitError)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "roce-inspect: ") {
				t.Errorf("stderr %q: want one line starting with roce-inspect:", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q does not mention %q", msg, w)
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

// TestLivePermission runs live without CAP_NET_RAW: as root, on a thread
// whose effective capability is dropped (capabilities are per thread on
// Linux, and the command runs on the calling goroutine).
func TestLivePermission(t *testing.T) {
	type result struct {
		status         int
		stderr, reason string
	}
	ch := make(chan result, 1)
	go func() {
		// Left locked: the thread's capabilities change, so it must end
		// with this goroutine.
		runtime.LockOSThread()
		if os.Geteuid() == 0 {
			hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
			var data [2]unix.CapUserData
			err := unix.Capget(&hdr, &data[0])
			if err == nil {
				data[0].Effective &^= 1 << unix.CAP_NET_RAW
				err = unix.Capset(&hdr, &data[0])
			}
			if err != nil {
				ch <- result{reason: err.Error()}
				return
			}
		}
		var stdout, stderr bytes.Buffer
		status := run([]string{"live", "-i", "lo", "--duration", "1ms"}, &stdout, &stderr)
		ch <- result{status: status, stderr: stderr.String()}
	}()
	res := <-ch
	if res.reason != "" {
		t.Skipf("cannot drop CAP_NET_RAW: %s", res.reason)
	}
	if res.status != exitError || strings.Count(res.stderr, "\n") != 1 ||
		!strings.Contains(res.stderr, "CAP_NET_RAW") || !strings.Contains(res.stderr, "root") {
		t.Errorf("status %d, stderr %q: want status 2 and one line saying root or CAP_NET_RAW is needed", res.status, res.stderr)
	}
}

// TestNoteCaptureLoss checks the warning and the notes added to PSN gap
// problems when the kernel dropped packets, on a real analysis of a capture
// with losses and retransmissions.
func TestNoteCaptureLoss(t *testing.T) {
	frames, _, _, err := lt.GenFrames(gen.Config{Scenario: "loss-gbn", Seed: 1, ECN: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "loss.pcapng")
	writePcapng(t, path, frames)
	base := analyzeJSON(t, path)
	decode := func() *analyze.Report {
		var r analyze.Report
		if err := json.Unmarshal([]byte(base), &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}

	clean := decode()
	noteCaptureLoss(clean, livecap.Stats{Received: 100})
	if !reflect.DeepEqual(clean, decode()) {
		t.Error("without drops the report changed")
	}

	r := decode()
	orig := slices.Clone(r.Problems)
	noteCaptureLoss(r, livecap.Stats{Received: 100, Dropped: 3})
	if len(r.Warnings) == 0 || r.Warnings[0] != "the kernel dropped 3 packets during capture: PSN gaps may be caused by the capture, not the network" {
		t.Errorf("warnings %q: want the drop warning first", r.Warnings)
	}
	noted := 0
	for i, p := range r.Problems {
		isGap := strings.Contains(orig[i], "PSN gap") || strings.Contains(orig[i], "missing PSN")
		if got := p != orig[i]; got != isGap {
			t.Errorf("problem %q became %q: a note is due on PSN gap lines only", orig[i], p)
		}
		if p != orig[i] {
			noted++
			if !strings.HasPrefix(p, orig[i]) || !strings.Contains(p, "possibly caused by the capture") {
				t.Errorf("problem %q became %q", orig[i], p)
			}
		}
	}
	if noted == 0 || noted == len(orig) {
		t.Errorf("%d of %d problems noted: loss-gbn has PSN gaps and retransmissions, so some but not all", noted, len(orig))
	}
}

// TestLiveHandleAllocs proves that analyzing and writing a frame of a known
// flow allocates nothing: with Next, the whole per-frame path of live.
func TestLiveHandleAllocs(t *testing.T) {
	frames, _, _, err := lt.GenFrames(gen.Config{Scenario: "mixed", Seed: 1, ECN: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "out.pcapng")
	s := &liveSession{o: &liveOptions{iface: "test0", write: path}, a: analyze.New(analyze.Options{ECMPPaths: analyze.DefaultECMPPaths})}
	if err := s.openOutput(); err != nil {
		t.Fatal(err)
	}
	defer s.out.Close()
	dec := dissect.NewDecoder()
	var p dissect.Packet
	var f capture.Frame
	i := 0
	var failed error
	step := func() {
		fr := frames[i%len(frames)]
		i++
		f = capture.Frame{Data: fr, CapLen: len(fr), Len: len(fr), LinkType: 1, Index: i, Timestamp: 1_700_000_000e9 + int64(i)}
		if err := s.handle(dec, &f, &p); err != nil && failed == nil {
			failed = err
		}
	}
	// A first pass meets every flow; the analyzer allocates for new ones.
	for range 2 * len(frames) {
		step()
	}
	allocs := testing.AllocsPerRun(2000, step)
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Errorf("%.2f allocations per frame, want 0", allocs)
	}
	if s.roce != uint64(i) {
		t.Errorf("%d RoCE frames counted of %d", s.roce, i)
	}
}

// BenchmarkLiveHandle measures the per-frame work of live after Next:
// decoding, analysis and writing to a -w file, over the mixed scenario.
func BenchmarkLiveHandle(b *testing.B) {
	frames, _, _, err := lt.GenFrames(gen.Config{Scenario: "mixed", Seed: 1, ECN: true})
	if err != nil {
		b.Fatal(err)
	}
	s := &liveSession{o: &liveOptions{iface: "test0", write: filepath.Join(b.TempDir(), "out.pcapng")},
		a: analyze.New(analyze.Options{ECMPPaths: analyze.DefaultECMPPaths})}
	if err := s.openOutput(); err != nil {
		b.Fatal(err)
	}
	defer s.out.Close()
	dec := dissect.NewDecoder()
	var p dissect.Packet
	var f capture.Frame
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		fr := frames[i%len(frames)]
		f = capture.Frame{Data: fr, CapLen: len(fr), Len: len(fr), LinkType: 1, Index: i + 1, Timestamp: 1_700_000_000e9 + int64(i)}
		if err := s.handle(dec, &f, &p); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLiveSignal interrupts a capture with SIGINT, as Ctrl-C does: live
// prints the report of what it captured and ends with status 0.
func TestLiveSignal(t *testing.T) {
	p := lt.NewPair(t, 9000)
	frames, _, _, err := lt.GenFrames(gen.Config{Scenario: "rc-send", Seed: 10, Packets: 25})
	if err != nil {
		t.Fatal(err)
	}
	// live catches SIGINT from before its start line, which startLive
	// waits for, until it returns.
	l := startLive(t, p, "--format", "json", "--interval", "20ms", "--duration", "30s")
	l.sendAllRoCE(t, p, frames)
	if err := unix.Kill(os.Getpid(), unix.SIGINT); err != nil {
		t.Fatal(err)
	}
	if status := l.wait(t); status != 0 {
		t.Fatalf("status %d: %s", status, l.stderr.String())
	}
	var lr liveReport
	lr.Report = &analyze.Report{}
	if err := json.Unmarshal([]byte(l.stdout.String()), &lr); err != nil {
		t.Fatal(err)
	}
	if lr.Packets.RoCE != uint64(len(frames)) || lr.Capture.Stopped != stopSignal.String() {
		t.Errorf("report: %d RoCE packets, stopped %q; want %d, %q", lr.Packets.RoCE, lr.Capture.Stopped, len(frames), stopSignal)
	}
}
