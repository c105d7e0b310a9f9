// Package gen writes synthetic RoCE captures: RC, UD, atomic and congestion
// scenarios between two or four hosts, serialized through the project's
// InfiniBand layers with correct invariant CRCs (or deliberately wrong ones on
// request), deterministic under a seed.
//
// The captures serve tests, demos and benchmarks. Every scenario also reports
// its ground truth in Stats (lost PSNs, retransmissions, NAKs, CE marks,
// CNPs ...), which the generator knows by construction, so an analysis of the
// written file can be checked against something other than itself.
package gen

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"roce-inspect/layers"
)

// Sentinel errors returned (wrapped) by Write.
var (
	// ErrUnknownScenario means Config.Scenario names no scenario; the
	// message lists the valid names.
	ErrUnknownScenario = errors.New("unknown scenario")

	// ErrInvalidConfig means a Config field is out of range or two fields
	// contradict each other.
	ErrInvalidConfig = errors.New("invalid generator configuration")
)

// Limits and defaults of Config.
const (
	// DefaultPayload is the bytes per full data packet when Config.Payload
	// is 0: a path MTU of 1024 bytes, the common RoCE setting.
	DefaultPayload = 1024

	// MaxPayload is the largest Config.Payload: the biggest multiple of 4
	// that keeps every frame inside a 16-bit IP length and the 65535-byte
	// snap length.
	MaxPayload = 65400

	// MaxQPs is the largest Config.QPs.
	MaxQPs = 256

	// MaxRecorded bounds the lists in Stats (Lost, BadICRC), so that a very
	// large capture keeps memory bounded; the counts stay exact.
	MaxRecorded = 4096

	// SnapLen is the snap length written in the capture's header.
	SnapLen = 65535
)

// Source-port policies for Config.SrcPorts.
const (
	// SrcPortsSpread gives every connection its own UDP source port, as
	// NICs do to spread QPs over ECMP paths.
	SrcPortsSpread = "spread"
	// SrcPortsSingle makes every QP of a host pair use one UDP source port.
	SrcPortsSingle = "single"
)

// Config selects what Write generates. The zero value of every field except
// Scenario means "the scenario's default".
type Config struct {
	// Scenario is the name of one of Scenarios().
	Scenario string
	// Packets is an approximate frame budget for large files; 0 selects
	// the scenario's natural size. The bench scenario writes exactly this
	// many frames.
	Packets int
	// Seed makes the output deterministic: equal configurations write
	// identical bytes.
	Seed uint64
	// Payload is the bytes per full data packet, a multiple of 4 (0:
	// DefaultPayload; for bench, 0 selects small packets only).
	Payload int
	// QPs is the number of queue pairs (0: scenario-specific).
	QPs int
	// IPv6 carries RoCEv2 over IPv6 (fd00::1, fd00::2 ...) instead of IPv4.
	IPv6 bool
	// RoCEv1 writes RoCEv1 frames (Ethertype 0x8915, GRH, no UDP); it
	// excludes IPv6 and the ECN scenarios.
	RoCEv1 bool
	// BadICRC lists 1-based frame numbers whose ICRC is corrupted.
	BadICRC []int
	// BadEvery corrupts the ICRC of every Nth frame (0: none).
	BadEvery int
	// SrcPorts is SrcPortsSpread (the default) or SrcPortsSingle.
	SrcPorts string
	// Nanosecond writes nanosecond timestamps (pcap magic 0xa1b23c4d);
	// otherwise pcap timestamps are cut to microseconds.
	Nanosecond bool
	// Pcapng writes pcapng instead of pcap; its timestamps are always in
	// nanoseconds.
	Pcapng bool
	// ECN marks RoCEv2 data packets and ACKs ECT(0). The command line sets
	// it by default (see DefaultConfig). The ecn-cnp scenario and the
	// congested QP of mixed mark ECT(0) whatever it says, since a switch
	// only marks CE on ECN-capable packets.
	ECN bool
}

// DefaultConfig returns the configuration the command line starts from:
// the mixed scenario, seed 1, ECN on, one source port per QP.
func DefaultConfig() Config {
	return Config{Scenario: "mixed", Seed: 1, ECN: true, SrcPorts: SrcPortsSpread}
}

// ScenarioInfo describes one scenario.
type ScenarioInfo struct {
	// Name is what Config.Scenario takes.
	Name string
	// Description says in one line what the capture holds.
	Description string
	// Expected says in one line what an analysis of the capture should
	// report.
	Expected string
}

// Scenarios lists the scenarios Write knows, in a stable order.
func Scenarios() []ScenarioInfo {
	out := make([]ScenarioInfo, len(scenarioTable))
	for i, s := range scenarioTable {
		out[i] = s.info
	}
	return out
}

// ScenarioNames returns the names of Scenarios(), in the same order.
func ScenarioNames() []string {
	out := make([]string, len(scenarioTable))
	for i, s := range scenarioTable {
		out[i] = s.info.Name
	}
	return out
}

// Stats is what Write wrote, including the ground truth of the scenario.
// Frame numbers are 1-based, as in Wireshark.
type Stats struct {
	// Scenario is the scenario's name.
	Scenario string
	// Frames and Bytes count the frames written and their lengths
	// (Ethernet header to the last pad byte, no FCS).
	Frames int
	Bytes  int64
	// FirstTimestamp and LastTimestamp are the first and last frame
	// times, in nanoseconds since the Unix epoch.
	FirstTimestamp, LastTimestamp int64

	// Requests counts RC request packets (SEND, WRITE, READ request,
	// atomics), retransmissions included.
	Requests int
	// ReadResponses counts RDMA READ RESPONSE packets.
	ReadResponses int
	// ACKs counts ACKNOWLEDGE packets with an ACK syndrome.
	ACKs int
	// AtomicACKs counts ATOMIC ACKNOWLEDGE packets.
	AtomicACKs int
	// NAKs counts PSN sequence error NAKs (AETH syndrome 0x60).
	NAKs int
	// RNRNAKs counts receiver-not-ready NAKs (AETH syndrome 0x20 | timer).
	RNRNAKs int
	// UDSends counts UD SEND packets.
	UDSends int
	// Retransmitted counts request packets that repeat a PSN already sent
	// on their QP (go-back-N after a NAK, resends after an RNR NAK or a
	// timeout).
	Retransmitted int

	// Lost lists request packets the requester sent that are missing from
	// the capture at the point they were sent (at most MaxRecorded
	// entries); LostCount counts them all and Unrecovered those never
	// written later.
	Lost        []Loss
	LostCount   int
	Unrecovered int

	// CEMarked counts packets marked CE (ECN 11) by the simulated switch.
	CEMarked int
	// CNPs counts congestion notification packets (opcode 0x81).
	CNPs int

	// BadICRC lists the frames written with a corrupted ICRC (at most
	// MaxRecorded); BadICRCCount counts them all.
	BadICRC      []int
	BadICRCCount int

	// Flows holds one entry per direction of each QP: frames grouped by
	// (source address, destination address, destination QP), in the order
	// the flows first appear.
	Flows []Flow
}

// Loss is one request packet missing from the capture.
type Loss struct {
	// Src and Dst are the requester's and the responder's addresses
	// (GIDs for RoCEv1).
	Src, Dst netip.Addr
	// DestQP is the responder's QP, as in the lost packet's BTH.
	DestQP uint32
	// PSN is the lost packet's PSN.
	PSN uint32
	// Recovered says the requester sent the PSN again later and the
	// capture holds that copy, at frame RecoveredFrame.
	Recovered      bool
	RecoveredFrame int
}

// Flow is the ground truth of one direction of a QP.
type Flow struct {
	Src, Dst netip.Addr // IP addresses, or the GIDs of RoCEv1
	SrcPort  uint16     // UDP source port; 0 for RoCEv1
	DestQP   uint32
	// SrcQP is the QP that sends on this flow. RC does not carry it on the
	// wire; UD carries it in the DETH.
	SrcQP uint32
	// Transport is "RC" or "UD".
	Transport string
	// Frames and Bytes count the frames of the flow and their lengths.
	Frames int
	Bytes  int64
	// PayloadBytes sums the transport payloads (pad bytes excluded).
	PayloadBytes int64
	// Requests, ReadResponses, ACKs, AtomicACKs, NAKs, RNRNAKs, UDSends,
	// CNPs, CEMarked, Retransmitted and Lost split the frames as the Stats
	// totals do; Lost counts packets of the flow missing from the capture.
	Requests, ReadResponses, ACKs, AtomicACKs, NAKs, RNRNAKs int
	UDSends, CNPs, CEMarked, Retransmitted, Lost             int
	// FirstPSN and LastPSN are the PSNs of the first and last frames
	// written on the flow.
	FirstPSN, LastPSN uint32
	// Opcodes counts the frames by BTH opcode.
	Opcodes map[layers.Opcode]int
}

// Write generates the capture cfg describes and writes it to w, streaming:
// memory stays bounded whatever Config.Packets is. It returns what it wrote.
func Write(w io.Writer, cfg Config) (Stats, error) {
	return write(w, cfg, nil)
}

// write is Write with an optional per-frame hook for the package's tests.
func write(w io.Writer, cfg Config, trace func(*frameRecord)) (Stats, error) {
	sc, err := lookupScenario(cfg.Scenario)
	if err != nil {
		return Stats{}, err
	}
	cfg, err = normalize(cfg, sc)
	if err != nil {
		return Stats{}, err
	}
	sink, err := newSink(w, cfg)
	if err != nil {
		return Stats{}, err
	}
	e := newEngine(cfg, sink, trace)
	if err := sc.run(e); err != nil {
		return e.finishStats(), err
	}
	if err := e.finish(); err != nil {
		return e.finishStats(), err
	}
	if err := sink.Flush(); err != nil {
		return e.finishStats(), err
	}
	return e.finishStats(), nil
}

// Validate reports whether Write would accept cfg, with the error Write
// would return (wrapping ErrUnknownScenario or ErrInvalidConfig).
func Validate(cfg Config) error {
	sc, err := lookupScenario(cfg.Scenario)
	if err != nil {
		return err
	}
	_, err = normalize(cfg, sc)
	return err
}

func lookupScenario(name string) (*scenario, error) {
	for i := range scenarioTable {
		if scenarioTable[i].info.Name == name {
			return &scenarioTable[i], nil
		}
	}
	return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknownScenario, name, strings.Join(ScenarioNames(), ", "))
}

// normalize checks cfg and fills in the scenario's defaults.
func normalize(cfg Config, sc *scenario) (Config, error) {
	bad := func(format string, a ...any) (Config, error) {
		return cfg, fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case cfg.Packets < 0:
		return bad("packets %d is negative", cfg.Packets)
	case cfg.Payload < 0 || cfg.Payload > MaxPayload:
		return bad("payload %d is outside 0..%d", cfg.Payload, MaxPayload)
	case cfg.Payload%4 != 0:
		return bad("payload %d is not a multiple of 4 (only the last packet of a message carries pad bytes)", cfg.Payload)
	case cfg.QPs < 0 || cfg.QPs > MaxQPs:
		return bad("qps %d is outside 0..%d", cfg.QPs, MaxQPs)
	case cfg.BadEvery < 0:
		return bad("bad-every %d is negative", cfg.BadEvery)
	case cfg.IPv6 && cfg.RoCEv1:
		return bad("IPv6 and RoCEv1 exclude each other (RoCEv1 carries a GRH, not an IP header)")
	case cfg.RoCEv1 && sc.needsV2:
		return bad("scenario %s needs RoCEv2 (RoCEv1 has no ECN marking and no CNPs)", sc.info.Name)
	}
	for _, f := range cfg.BadICRC {
		if f < 1 {
			return bad("bad-icrc frame %d is not a 1-based frame number", f)
		}
	}
	switch cfg.SrcPorts {
	case "":
		cfg.SrcPorts = SrcPortsSpread
	case SrcPortsSpread, SrcPortsSingle:
	default:
		return bad("src-ports %q is neither %q nor %q", cfg.SrcPorts, SrcPortsSpread, SrcPortsSingle)
	}
	if cfg.Payload == 0 && sc.info.Name != "bench" {
		cfg.Payload = DefaultPayload
	}
	if cfg.Payload != 0 && cfg.Payload < sc.minPayload {
		return bad("scenario %s needs a payload of at least %d bytes", sc.info.Name, sc.minPayload)
	}
	if cfg.QPs == 0 {
		cfg.QPs = sc.defaultQPs
	}
	if sc.info.Name == "bad-icrc" && len(cfg.BadICRC) == 0 && cfg.BadEvery == 0 {
		cfg.BadEvery = 10
	}
	cfg.BadICRC = slices.Clone(cfg.BadICRC)
	slices.Sort(cfg.BadICRC)
	cfg.BadICRC = slices.Compact(cfg.BadICRC)
	return cfg, nil
}
