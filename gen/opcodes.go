package gen

import "roce-inspect/layers"

// Short names for the opcodes the generator writes (IBTA Vol. 1, 9.2.1).
const (
	opSendFirst         = layers.OpRCSendFirst
	opSendMiddle        = layers.OpRCSendMiddle
	opSendLast          = layers.OpRCSendLast
	opSendLastImm       = layers.OpRCSendLastWithImmediate
	opSendOnly          = layers.OpRCSendOnly
	opSendOnlyImm       = layers.OpRCSendOnlyWithImmediate
	opWriteFirst        = layers.OpRCRDMAWriteFirst
	opWriteMiddle       = layers.OpRCRDMAWriteMiddle
	opWriteLast         = layers.OpRCRDMAWriteLast
	opWriteLastImm      = layers.OpRCRDMAWriteLastWithImmediate
	opWriteOnly         = layers.OpRCRDMAWriteOnly
	opWriteOnlyImm      = layers.OpRCRDMAWriteOnlyWithImmediate
	opReadRequest       = layers.OpRCRDMAReadRequest
	opReadRespFirst     = layers.OpRCRDMAReadResponseFirst
	opReadRespMiddle    = layers.OpRCRDMAReadResponseMiddle
	opReadRespLast      = layers.OpRCRDMAReadResponseLast
	opReadRespOnly      = layers.OpRCRDMAReadResponseOnly
	opAcknowledge       = layers.OpRCAcknowledge
	opAtomicAcknowledge = layers.OpRCAtomicAcknowledge
	opCompareSwap       = layers.OpRCCompareSwap
	opFetchAdd          = layers.OpRCFetchAdd
	opUDSendOnly        = layers.OpUDSendOnly
	opUDSendOnlyImm     = layers.OpUDSendOnlyWithImmediate
	opCNP               = layers.OpCNP
)

// AETH syndromes (IBTA Vol. 1, 9.7.5.1.1): bits 6-5 the kind, bits 4-0 the
// credit count, RNR timer or NAK code.
const (
	// synACK is an ACK with credit count 31, "invalid": ConnectX
	// responders send it when they do not advertise credits.
	synACK = 0x1f
	// synRNRNAK is the RNR NAK; the low five bits are the timer code.
	synRNRNAK = 0x20
	// synNAKPSNSeq is the NAK for a PSN sequence error.
	synNAKPSNSeq = 0x60
)
