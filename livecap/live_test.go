//go:build linux

package livecap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"roce-inspect/capture"
	"roce-inspect/dissect"
	"roce-inspect/gen"
	lt "roce-inspect/livecap/livecaptest"
)

// deadline bounds every wait of these tests. It is generous: reaching it
// means something is stuck, not slow.
const deadline = 10 * time.Second

// jumboMTU is the MTU of the test links: a 9000-byte jumbo frame fits.
const jumboMTU = 9000

// openIn opens a source on the pair's link on side, inside its namespace,
// and closes it when the test ends.
func openIn(t *testing.T, p *lt.Pair, side int, opts Options) *Source {
	t.Helper()
	var s *Source
	err := p.Run(side, func() error {
		var err error
		s, err = Open(p.Link[side], opts)
		return err
	})
	if err != nil {
		t.Fatalf("Open %s: %v", p.Link[side], err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sentFrame is a frame the test sends, and what it expects of it.
type sentFrame struct {
	name    string
	data    []byte
	roce    bool // the filter must admit it
	badICRC bool // gen corrupted its ICRC
}

// scenarioFrames generates a scenario and labels its frames with gen's
// ground truth of bad ICRCs.
func scenarioFrames(t *testing.T, cfg gen.Config) []sentFrame {
	t.Helper()
	frames, st, _, err := lt.GenFrames(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st.BadICRCCount > len(st.BadICRC) {
		t.Fatalf("%s: %d bad ICRCs, only %d listed", cfg.Scenario, st.BadICRCCount, len(st.BadICRC))
	}
	out := make([]sentFrame, len(frames))
	for i, fr := range frames {
		out[i] = sentFrame{
			name:    fmt.Sprintf("%s frame %d", cfg.Scenario, i+1),
			data:    fr,
			roce:    true,
			badICRC: slices.Contains(st.BadICRC, i+1),
		}
	}
	return out
}

// sendAndCollect sends the frames from side 1 while reading side 0's
// source, until as many frames as were marked roce have arrived. The
// frames are copied out of the ring.
func sendAndCollect(t *testing.T, p *lt.Pair, src *Source, frames []sentFrame) []capture.Frame {
	t.Helper()
	snd, err := p.NewSender(1)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	data := make([][]byte, len(frames))
	counted := make([]bool, len(frames))
	want := 0
	for i, f := range frames {
		data[i], counted[i] = f.data, f.roce
		if f.roce {
			want++
		}
	}
	end := time.Now().Add(deadline)
	var seen atomic.Int64
	sendErr := make(chan error, 1)
	go func() {
		sendErr <- snd.SendAll(data, counted, 256, func() int { return int(seen.Load()) }, end)
	}()
	var got []capture.Frame
	var f capture.Frame
	for len(got) < want && time.Now().Before(end) {
		err := src.Next(&f)
		if errors.Is(err, ErrTimeout) {
			continue
		}
		if err != nil {
			t.Fatalf("Next after %d frames: %v", len(got), err)
		}
		c := f
		c.Data = bytes.Clone(f.Data)
		got = append(got, c)
		seen.Add(1)
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	if len(got) < want {
		t.Fatalf("%d of %d frames arrived by the deadline", len(got), want)
	}
	return got
}

// TestLiveCapture sends RoCE frames of several scenarios (IPv4 with ECN
// marks and CNPs, 8 KiB jumbo frames with bad ICRCs, RoCEv1, IPv6), some
// behind a VLAN tag or two, mixed with frames that are not RoCE, and checks
// that exactly the RoCE frames arrive, whole, in order, with gen's ICRC
// verdicts.
func TestLiveCapture(t *testing.T) {
	p := lt.NewPair(t, jumboMTU)
	src := openIn(t, p, 0, Options{})

	var roce []sentFrame
	for _, cfg := range []gen.Config{
		{Scenario: "mixed", Seed: 1, ECN: true},
		{Scenario: "bad-icrc", Seed: 2, Payload: 8192, ECN: true},
		{Scenario: "rc-write", Seed: 3, RoCEv1: true},
		{Scenario: "rc-send", Seed: 4, IPv6: true, ECN: true},
	} {
		roce = append(roce, scenarioFrames(t, cfg)...)
	}
	vlan := lt.Tag{TPID: lt.TPIDVLAN, TCI: 0x6064}
	sTag := lt.Tag{TPID: lt.TPIDQinQ, TCI: 0x00c8}
	var frames []sentFrame
	for i, f := range roce {
		switch {
		case i%7 == 3:
			f.data = lt.InsertTag(f.data, vlan)
			f.name += " (VLAN)"
		case i%11 == 5:
			f.data = lt.InsertTag(lt.InsertTag(f.data, vlan), sTag)
			f.name += " (QinQ)"
		}
		frames = append(frames, f)
		if i%40 == 0 {
			for _, n := range lt.NotRoCE() {
				frames = append(frames, sentFrame{name: n.Name, data: n.Frame})
				frames = append(frames, sentFrame{name: n.Name + " (VLAN)", data: lt.InsertTag(n.Frame, vlan)})
			}
		}
	}
	// The last RoCE frame follows non-RoCE ones: once it arrives, a
	// non-RoCE frame that slipped through would have arrived before it.
	frames = append(frames, roce[0])

	got := sendAndCollect(t, p, src, frames)
	var want []sentFrame
	for _, f := range frames {
		if f.roce {
			want = append(want, f)
		}
	}
	dec := dissect.NewDecoder()
	var pkt dissect.Packet
	bad := 0
	for i, g := range got {
		w := want[i]
		if !bytes.Equal(g.Data, w.data) {
			t.Fatalf("frame %d: got %d bytes, want %s (%d bytes)\n got % x\nwant % x", i+1, len(g.Data), w.name, len(w.data), head(g.Data), head(w.data))
		}
		if g.Len != len(w.data) || g.CapLen != len(w.data) || g.LinkType != 1 || g.Index != i+1 || g.Timestamp <= 0 {
			t.Errorf("frame %d (%s): Len %d CapLen %d LinkType %d Index %d Timestamp %d; want Len and CapLen %d, LinkType 1, Index %d, a timestamp",
				i+1, w.name, g.Len, g.CapLen, g.LinkType, g.Index, g.Timestamp, len(w.data), i+1)
		}
		if dec.Decode(&g, &pkt) != dissect.RoCE || pkt.Malformed != "" {
			t.Errorf("frame %d (%s): not decoded as well-formed RoCE (%q)", i+1, w.name, pkt.Malformed)
			continue
		}
		wantICRC := dissect.ICRCGood
		if w.badICRC {
			wantICRC = dissect.ICRCBad
			bad++
		}
		if pkt.ICRC != wantICRC {
			t.Errorf("frame %d (%s): ICRC verdict %d, want %d", i+1, w.name, pkt.ICRC, wantICRC)
		}
	}
	if bad == 0 {
		t.Error("no frame with a bad ICRC was sent: the ICRC check proved nothing")
	}
	st, err := src.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Dropped != 0 || st.Delivered != uint64(len(want)) || st.Received < st.Delivered {
		t.Errorf("stats %+v: want no drops, %d delivered, at least as many received", st, len(want))
	}
}

func head(b []byte) []byte { return b[:min(len(b), 64)] }

// TestFilterAttachRace floods the link with frames that are not RoCE while
// the source opens: those reaching the ring before the kernel filter is
// attached must be refused in user space.
func TestFilterAttachRace(t *testing.T) {
	p := lt.NewPair(t, jumboMTU)
	snd, err := p.NewSender(1)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	stop := make(chan struct{})
	flooded := make(chan int)
	junk := lt.NotRoCE()
	go func() {
		n := 0
		defer func() { flooded <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if snd.Send(junk[n%len(junk)].Frame) == nil {
				n++
			}
		}
	}()
	src := openIn(t, p, 0, Options{PollTimeout: 10 * time.Millisecond})
	close(stop)
	n := <-flooded
	t.Logf("%d frames flooded during Open", n)

	sentinel := lt.Ethernet(nil, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoUDP, nil, 0, lt.UDP(49152, lt.RoCEv2Port, lt.BTHSendOnly())))
	got := sendAndCollect(t, p, src, []sentFrame{{name: "sentinel", data: sentinel, roce: true}})
	if !bytes.Equal(got[0].Data, sentinel) {
		t.Errorf("first frame delivered is not the sentinel: % x", head(got[0].Data))
	}
}

// TestInterfaceDown captures frames, sets the link down before reading
// them, and checks that every frame the kernel took is still delivered,
// then ErrInterfaceDown, for good.
func TestInterfaceDown(t *testing.T) {
	p := lt.NewPair(t, jumboMTU)
	src := openIn(t, p, 0, Options{PollTimeout: 10 * time.Millisecond})
	frames := scenarioFrames(t, gen.Config{Scenario: "rc-write", Seed: 5, Packets: 20})
	snd, err := p.NewSender(1)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	data := make([][]byte, len(frames))
	counted := make([]bool, len(frames))
	for i, f := range frames {
		data[i] = f.data
	}
	end := time.Now().Add(deadline)
	if err := snd.SendAll(data, counted, 1, func() int { return 0 }, end); err != nil {
		t.Fatal(err)
	}
	// Wait until the kernel has put every frame in the ring.
	for {
		st, err := src.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Received >= uint64(len(frames)) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the kernel received %d of %d frames by the deadline", st.Received, len(frames))
		}
		time.Sleep(time.Millisecond)
	}
	if err := p.SetDown(0); err != nil {
		t.Fatal(err)
	}
	var f capture.Frame
	n := 0
	for {
		err := src.Next(&f)
		if err == nil {
			if !bytes.Equal(f.Data, frames[n].data) {
				t.Fatalf("frame %d differs from the one sent", n+1)
			}
			n++
			continue
		}
		if errors.Is(err, ErrTimeout) && time.Now().Before(end) {
			continue
		}
		if !errors.Is(err, ErrInterfaceDown) {
			t.Fatalf("after %d frames: err = %v, want ErrInterfaceDown", n, err)
		}
		if !strings.Contains(err.Error(), p.Link[0]) {
			t.Errorf("error %q does not name the interface", err)
		}
		break
	}
	if n != len(frames) {
		t.Errorf("%d of %d frames delivered before the error", n, len(frames))
	}
	if err := src.Next(&f); !errors.Is(err, ErrInterfaceDown) {
		t.Errorf("Next after the error: %v, want ErrInterfaceDown again", err)
	}
}

// TestNextAllocs proves that reading an untagged frame allocates nothing.
func TestNextAllocs(t *testing.T) {
	p := lt.NewPair(t, jumboMTU)
	src := openIn(t, p, 0, Options{PollTimeout: 10 * time.Millisecond})
	const runs = 200
	frames := make([][]byte, runs+2)
	counted := make([]bool, len(frames))
	for i := range frames {
		frames[i] = lt.Ethernet(nil, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoUDP, nil, 0, lt.UDP(49152, lt.RoCEv2Port, lt.BTHSendOnly())))
	}
	snd, err := p.NewSender(1)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	end := time.Now().Add(deadline)
	if err := snd.SendAll(frames, counted, 1, func() int { return 0 }, end); err != nil {
		t.Fatal(err)
	}
	var f capture.Frame
	var failed error
	read := func() {
		for {
			err := src.Next(&f)
			if err == nil || !errors.Is(err, ErrTimeout) || time.Now().After(end) {
				if err != nil && failed == nil {
					failed = err
				}
				return
			}
		}
	}
	read() // the first frame waits for the kernel to hand over its block
	allocs := testing.AllocsPerRun(runs, read)
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Errorf("Next allocates %.2f times per frame, want 0", allocs)
	}
}

// TestPromiscuous checks that promiscuous mode is on while the source is
// open, and off after Close.
func TestPromiscuous(t *testing.T) {
	p := lt.NewPair(t, jumboMTU)
	promiscuity := func() string {
		out, err := exec.Command("ip", "-d", "-n", p.NS[0], "link", "show", "dev", p.Link[0]).CombinedOutput()
		if err != nil {
			t.Fatalf("ip link show: %v: %s", err, out)
		}
		f := strings.Fields(string(out))
		i := slices.Index(f, "promiscuity")
		if i < 0 || i+1 == len(f) {
			t.Fatalf("no promiscuity in %s", out)
		}
		return f[i+1]
	}
	plain := openIn(t, p, 0, Options{})
	if got := promiscuity(); got != "0" {
		t.Errorf("without Promiscuous: promiscuity %s, want 0", got)
	}
	plain.Close()
	src := openIn(t, p, 0, Options{Promiscuous: true})
	if got := promiscuity(); got != "1" {
		t.Errorf("open with Promiscuous: promiscuity %s, want 1", got)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if got := promiscuity(); got != "0" {
		t.Errorf("after Close: promiscuity %s, want 0", got)
	}
	var f capture.Frame
	if err := src.Next(&f); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close: %v, want ErrClosed", err)
	}
	if _, err := src.Stats(); !errors.Is(err, ErrClosed) {
		t.Errorf("Stats after Close: %v, want ErrClosed", err)
	}
	if err := src.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}

// TestTimeout checks that Next returns ErrTimeout on a quiet link.
func TestTimeout(t *testing.T) {
	p := lt.NewPair(t, jumboMTU)
	src := openIn(t, p, 0, Options{PollTimeout: time.Millisecond})
	var f capture.Frame
	if err := src.Next(&f); !errors.Is(err, ErrTimeout) {
		t.Errorf("Next on a quiet link: %v, want ErrTimeout", err)
	}
}

func TestOpenNoSuchInterface(t *testing.T) {
	_, err := Open("roce-nosuch0", Options{})
	if !errors.Is(err, ErrNoSuchInterface) {
		t.Fatalf("err = %v, want ErrNoSuchInterface", err)
	}
	msg := err.Error()
	// Every network namespace has a loopback interface.
	if !strings.Contains(msg, `"roce-nosuch0"`) || !strings.Contains(msg, "lo") || strings.Contains(msg, "\n") {
		t.Errorf("message %q should name the interface and list lo, on one line", msg)
	}
}

// TestOpenPermission opens a capture without CAP_NET_RAW: as root, on a
// thread whose effective capability is dropped (capabilities are
// per-thread on Linux).
func TestOpenPermission(t *testing.T) {
	errc := make(chan error, 1)
	go func() {
		// The thread stays locked and ends with the goroutine: its
		// capabilities change.
		runtime.LockOSThread()
		if os.Geteuid() == 0 {
			if err := dropEffectiveCap(unix.CAP_NET_RAW); err != nil {
				errc <- fmt.Errorf("%w: %v", errSkip, err)
				return
			}
		}
		s, err := Open("lo", Options{})
		if err == nil {
			s.Close()
		}
		errc <- err
	}()
	err := <-errc
	if errors.Is(err, errSkip) {
		t.Skip(err)
	}
	if !errors.Is(err, ErrPermission) {
		t.Fatalf("err = %v, want ErrPermission", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "CAP_NET_RAW") || !strings.Contains(msg, "root") || !strings.Contains(msg, "lo") {
		t.Errorf("message %q should say that root or CAP_NET_RAW is needed on lo", msg)
	}
}

var errSkip = errors.New("cannot drop the capability")

// dropEffectiveCap removes a capability from the calling thread's
// effective set.
func dropEffectiveCap(c int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[c/32].Effective &^= 1 << (c % 32)
	return unix.Capset(&hdr, &data[0])
}

// TestOpenNotEthernet opens a capture on a TUN device, which carries bare
// IP packets.
func TestOpenNotEthernet(t *testing.T) {
	p := lt.NewPair(t, jumboMTU)
	tun := p.Link[0] + "t"
	if err := p.IP(0, "tuntap", "add", "dev", tun, "mode", "tun"); err != nil {
		t.Skipf("cannot create a TUN device: %v", err)
	}
	err := p.Run(0, func() error {
		s, err := Open(tun, Options{})
		if err == nil {
			s.Close()
		}
		return err
	})
	if !errors.Is(err, ErrNotEthernet) || !strings.Contains(err.Error(), tun) {
		t.Errorf("err = %v, want ErrNotEthernet naming %s", err, tun)
	}
}

// BenchmarkNext measures reading frames from the ring: with the timer
// stopped, the kernel is given a batch of 74-byte RoCE frames and time to
// hand over every block; then Next reads them.
func BenchmarkNext(b *testing.B) {
	p := lt.NewPair(b, jumboMTU)
	var src *Source
	if err := p.Run(0, func() error {
		var err error
		src, err = Open(p.Link[0], Options{PollTimeout: 10 * time.Millisecond})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	snd, err := p.NewSender(1)
	if err != nil {
		b.Fatal(err)
	}
	defer snd.Close()
	const batch = 20000
	frame := lt.Ethernet(nil, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoUDP, nil, 0, lt.UDP(49152, lt.RoCEv2Port, lt.BTHSendOnly())))
	frames := make([][]byte, batch)
	for i := range frames {
		frames[i] = frame
	}
	counted := make([]bool, batch)
	var f capture.Frame
	b.ReportAllocs()
	b.ResetTimer()
	for read := 0; read < b.N; {
		b.StopTimer()
		if err := snd.SendAll(frames, counted, 1, func() int { return 0 }, time.Now().Add(deadline)); err != nil {
			b.Fatal(err)
		}
		time.Sleep(3 * blockTimeout) // a benchmark may wait: the kernel retires the last block
		b.StartTimer()
		for n := 0; n < batch && read < b.N; {
			err := src.Next(&f)
			if errors.Is(err, ErrTimeout) {
				break // the kernel dropped some of the batch
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
			read++
		}
	}
	b.StopTimer()
	st, _ := src.Stats()
	b.ReportMetric(float64(st.Dropped), "drops")
}

// TestKernelDrops overflows a small ring that nobody reads: the kernel
// drops what does not fit and Stats says so; once the ring is read, every
// frame the kernel admitted was either delivered or counted as dropped.
func TestKernelDrops(t *testing.T) {
	p := lt.NewPair(t, jumboMTU)
	src := openIn(t, p, 0, Options{BufferSize: 1, PollTimeout: 10 * time.Millisecond})
	// 2 blocks of 1 MiB hold about 13 000 of these frames with their
	// 48-byte headers and padding; 40 000 cannot fit.
	frame := lt.Ethernet(nil, lt.EtherTypeIPv4, lt.IPv4(lt.ProtoUDP, nil, 0, lt.UDP(49152, lt.RoCEv2Port, lt.BTHSendOnly())))
	frames := make([][]byte, 40000)
	for i := range frames {
		frames[i] = frame
	}
	snd, err := p.NewSender(1)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	end := time.Now().Add(deadline)
	if err := snd.SendAll(frames, make([]bool, len(frames)), 1, func() int { return 0 }, end); err != nil {
		t.Fatal(err)
	}
	var f capture.Frame
	var st Stats
	for {
		if st, err = src.Stats(); err != nil {
			t.Fatal(err)
		}
		if st.Received >= uint64(len(frames)) && st.Delivered+st.Dropped == st.Received {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("stats %+v by the deadline: want %d received, each delivered or dropped", st, len(frames))
		}
		if err := src.Next(&f); err != nil && !errors.Is(err, ErrTimeout) {
			t.Fatal(err)
		}
	}
	if st.Dropped == 0 || st.QueueFreezes == 0 || st.Delivered == 0 {
		t.Errorf("stats %+v: want drops, queue freezes and deliveries", st)
	}
}
