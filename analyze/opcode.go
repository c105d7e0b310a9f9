package analyze

import "roce-inspect/layers"

// The analysis reads opcodes through the layers package's table; the rules
// below are the analysis's own reading of them.

// psnTracked reports whether requests of transport t get PSN analysis:
// RC, UC and XRC number their requests consecutively per QP; UD does not
// in a way a capture can check, and RD is not deployed on RoCE.
func psnTracked(t layers.Transport) bool {
	return t == layers.TransportRC || t == layers.TransportUC || t == layers.TransportXRC
}

// isResponse reports whether op travels from responder to requester and
// carries the PSN of the request it answers: ACKNOWLEDGE, ATOMIC
// ACKNOWLEDGE and the RDMA READ RESPONSEs.
func isResponse(op layers.Opcode) bool { return op.IsAck() || op.IsReadResponse() }

// isAcknowledge reports whether op is an ACKNOWLEDGE, the only packet whose
// AETH may be a NAK (an ATOMIC ACKNOWLEDGE or a READ RESPONSE is always a
// positive acknowledgement).
func isAcknowledge(op layers.Opcode) bool {
	return op.IsAck() && op.Operation() == layers.Operation(layers.OpRCAcknowledge)
}

// endsMessage reports whether op ends a message: a LAST or ONLY packet
// (single-packet requests such as READ REQUEST, atomics, FLUSH and ATOMIC
// WRITE are ONLY, and so is READ RESPONSE ONLY; ACKs and CNPs are neither).
func endsMessage(op layers.Opcode) bool {
	p := op.Position()
	return p == layers.PositionLast || p == layers.PositionOnly
}

// pmtuSized reports whether a packet of op carries exactly one path MTU of
// payload: the FIRST and MIDDLE packets of a multi-packet message.
func pmtuSized(op layers.Opcode) bool {
	p := op.Position()
	return p == layers.PositionFirst || p == layers.PositionMiddle
}
