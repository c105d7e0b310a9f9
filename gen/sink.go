package gen

import (
	"io"

	"roce-inspect/capture"
)

// linkTypeEthernet is LINKTYPE_ETHERNET: the frames start with an Ethernet
// header and carry no FCS.
const linkTypeEthernet = 1

// frameSink is where the engine writes frames: a pcap or pcapng writer.
type frameSink interface {
	// WriteFrame writes one frame; ts is in nanoseconds since the epoch.
	WriteFrame(ts int64, data []byte, origLen int) error
	Flush() error
}

// pcapngSink adapts a pcapng writer, whose frames name their interface, to
// frameSink: every frame is on interface 0.
type pcapngSink struct{ w *capture.PcapngWriter }

func (s pcapngSink) WriteFrame(ts int64, data []byte, origLen int) error {
	return s.w.WriteFrame(0, ts, data, origLen)
}

func (s pcapngSink) Flush() error { return s.w.Flush() }

// newSink writes the file header cfg asks for and returns the frame writer.
func newSink(w io.Writer, cfg Config) (frameSink, error) {
	if cfg.Pcapng {
		pw, err := capture.NewPcapngWriter(w, []capture.Interface{{
			Name: "roce-inspect-gen", LinkType: linkTypeEthernet, SnapLen: SnapLen,
		}})
		if err != nil {
			return nil, err
		}
		return pcapngSink{pw}, nil
	}
	return capture.NewPcapWriter(w, linkTypeEthernet, SnapLen, cfg.Nanosecond)
}
