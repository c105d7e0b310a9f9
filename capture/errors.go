package capture

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors. The Reader's errors, apart from io.EOF at the clean end of
// a capture and the errors of os.Open, are *Error values. Those caused by the
// contents of the input wrap one or more of these sentinels, so callers can
// test with errors.Is; those caused by a failing read wrap the read error.
var (
	// ErrNotCapture means the input is not a capture file the package
	// reads: it is empty, too short, a directory, starts with an unknown
	// magic number or carries an unsupported format version.
	ErrNotCapture = errors.New("not a capture file")

	// ErrTruncated means the stream ends inside a file header, a record
	// header, a record or a block. The frames before the damaged one were
	// delivered; a caller typically warns and still reports them.
	ErrTruncated = errors.New("capture file is truncated")

	// ErrBadRecord means a pcap record header holds an absurd length.
	ErrBadRecord = errors.New("bad pcap record")

	// ErrBadBlock means a pcapng block has a broken length or structure
	// (length field, trailing length copy, option list, packet length or
	// interface ID).
	ErrBadBlock = errors.New("bad pcapng block")

	// ErrGzip means the gzip compression around the capture is corrupt.
	// The gzip package's own error is wrapped too. A compressed stream that
	// simply stops early matches both ErrGzip and ErrTruncated.
	ErrGzip = errors.New("corrupt gzip stream")

	// ErrInvalidFrame means a writer was asked to write something the
	// file format cannot represent, such as a negative timestamp or an
	// interface that was not declared.
	ErrInvalidFrame = errors.New("frame cannot be written")
)

// Error describes a failure at a known place in a capture file. Its message
// is one line: "FILE: offset N (frame F): detail", where the parts that are
// not known are left out.
type Error struct {
	// File is the name of the input as given to Open or NewReader.
	File string
	// Offset is the byte offset, in the decompressed stream, of the file
	// header, record or block that is damaged; negative when not known.
	Offset int64
	// Frame is the 1-based index the damaged packet record would have
	// had among all packet records; 0 when the damage is not in a packet
	// record.
	Frame int
	// Err is the detailed cause; it wraps the sentinel errors.
	Err error
}

// Error formats the failure as a single line.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	switch {
	case e.Offset >= 0:
		b.WriteString("offset ")
		b.WriteString(strconv.FormatInt(e.Offset, 10))
		if e.Frame > 0 {
			b.WriteString(" (frame ")
			b.WriteString(strconv.Itoa(e.Frame))
			b.WriteString(")")
		}
		b.WriteString(": ")
	case e.Frame > 0:
		b.WriteString("frame ")
		b.WriteString(strconv.Itoa(e.Frame))
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("unknown error")
	}
	return b.String()
}

// Unwrap returns the detailed cause, so that errors.Is finds the sentinels.
func (e *Error) Unwrap() error { return e.Err }

// detailError is a message that belongs to one or more sentinel kinds and
// may carry an underlying cause (a gzip error, say). Its text is only the
// message, so that Error reads naturally without the sentinel's own words.
type detailError struct {
	kinds []error
	cause error
	msg   string
}

func (d *detailError) Error() string {
	if d.cause != nil {
		return d.msg + ": " + d.cause.Error()
	}
	return d.msg
}

func (d *detailError) Unwrap() []error {
	errs := make([]error, 0, len(d.kinds)+1)
	errs = append(errs, d.kinds...)
	if d.cause != nil {
		errs = append(errs, d.cause)
	}
	return errs
}
