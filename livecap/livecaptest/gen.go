package livecaptest

import (
	"bytes"
	"fmt"
	"io"

	"roce-inspect/capture"
	"roce-inspect/gen"
)

// GenFrames writes the capture cfg describes with gen.Write and reads it
// back with capture.NewReader. It returns every frame (whole: gen never
// cuts one), gen's account of what it wrote, and the pcap file itself.
func GenFrames(cfg gen.Config) (frames [][]byte, st gen.Stats, file []byte, err error) {
	var buf bytes.Buffer
	st, err = gen.Write(&buf, cfg)
	if err != nil {
		return nil, st, nil, fmt.Errorf("gen %s: %w", cfg.Scenario, err)
	}
	file = buf.Bytes()
	r, err := capture.NewReader(bytes.NewReader(file), cfg.Scenario)
	if err != nil {
		return nil, st, nil, err
	}
	var f capture.Frame
	for {
		err = r.Next(&f)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, st, nil, err
		}
		if f.CapLen != f.Len {
			return nil, st, nil, fmt.Errorf("gen %s: frame %d cut to %d of %d bytes", cfg.Scenario, f.Index, f.CapLen, f.Len)
		}
		frames = append(frames, bytes.Clone(f.Data))
	}
	if len(frames) != st.Frames {
		return nil, st, nil, fmt.Errorf("gen %s: read %d frames back, gen wrote %d", cfg.Scenario, len(frames), st.Frames)
	}
	return frames, st, file, nil
}
