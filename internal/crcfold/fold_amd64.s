#include "textflag.h"

// FOLD folds the 16-byte lanes of acc forward by the distance whose
// multipliers k holds and XORs them into next: next ^= lo(acc)·lo(k) ^
// hi(acc)·hi(k), lane by lane. t1 and t2 are scratch.
#define FOLD(k, acc, next, t1, t2) \
	VPCLMULQDQ $0x00, k, acc, t1 \
	VPCLMULQDQ $0x11, k, acc, t2 \
	VPTERNLOGD $0x96, t1, t2, next

// func fold(r uint32, head *[128]byte, p []byte, k *[3][2]uint64) (lo, hi uint64)
//
// Folds the message head || p (p alone when head is nil) into 16 bytes.
// Requires AVX-512F and VPCLMULQDQ; len(p)%16 == 0, and len(p) >= 64, or
// >= 128 with a head. k holds the multiplier pairs for fold distances of
// 256, 64 and 16 bytes.
//
// Registers: SI data, CX bytes left, DX constants, DI head.
// Z0-Z3 the four 64-byte accumulators, Z4-Z7 next data, Z8 the 256-byte
// multipliers in all four lanes, Z9 the 64-byte ones, X10 the 16-byte ones,
// Z12-Z19 products.
TEXT ·fold(SB), NOSPLIT, $0-64
	MOVL r+0(FP), AX
	MOVQ head+8(FP), DI
	MOVQ p_base+16(FP), SI
	MOVQ p_len+24(FP), CX
	MOVQ k+40(FP), DX

	VBROADCASTI32X4 0(DX), Z8
	VBROADCASTI32X4 16(DX), Z9
	VMOVDQU 32(DX), X10

	TESTQ DI, DI
	JZ    nohead
	VMOVDQU64 0(DI), Z0
	VMOVDQU64 64(DI), Z1
	VMOVDQU64 0(SI), Z2
	VMOVDQU64 64(SI), Z3
	ADDQ      $128, SI
	SUBQ      $128, CX
	JMP       start

nohead:
	CMPQ CX, $256
	JB   short
	VMOVDQU64 0(SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	VMOVDQU64 192(SI), Z3
	ADDQ      $256, SI
	SUBQ      $256, CX

start:
	// The starting register goes into the first four bytes.
	VMOVD     AX, X4
	VPXORQ    Z4, Z0, Z0

loop256:
	CMPQ CX, $256
	JB   done256
	VMOVDQU64  0(SI), Z4
	VMOVDQU64  64(SI), Z5
	VMOVDQU64  128(SI), Z6
	VMOVDQU64  192(SI), Z7
	FOLD(Z8, Z0, Z4, Z12, Z13)
	FOLD(Z8, Z1, Z5, Z14, Z15)
	FOLD(Z8, Z2, Z6, Z16, Z17)
	FOLD(Z8, Z3, Z7, Z18, Z19)
	VMOVDQA64  Z4, Z0
	VMOVDQA64  Z5, Z1
	VMOVDQA64  Z6, Z2
	VMOVDQA64  Z7, Z3
	ADDQ       $256, SI
	SUBQ       $256, CX
	JMP        loop256

done256:
	// Fold the four accumulators into Z3, 64 bytes at a time.
	FOLD(Z9, Z0, Z1, Z12, Z13)
	FOLD(Z9, Z1, Z2, Z12, Z13)
	FOLD(Z9, Z2, Z3, Z12, Z13)

	JMP loop64

short:
	// Fewer than 256 bytes: one accumulator from the start.
	VMOVDQU64 0(SI), Z3
	VMOVD     AX, X4
	VPXORQ    Z4, Z3, Z3
	ADDQ      $64, SI
	SUBQ      $64, CX

loop64:
	CMPQ CX, $64
	JB   done64
	VMOVDQU64  0(SI), Z4
	FOLD(Z9, Z3, Z4, Z12, Z13)
	VMOVDQA64  Z4, Z3
	ADDQ       $64, SI
	SUBQ       $64, CX
	JMP        loop64

done64:
	// Fold the four 16-byte lanes of Z3 into X0.
	VEXTRACTI32X4 $1, Z3, X1
	VEXTRACTI32X4 $2, Z3, X2
	VEXTRACTI32X4 $3, Z3, X4
	VMOVDQA       X3, X0
	FOLD(X10, X0, X1, X12, X13)
	FOLD(X10, X1, X2, X12, X13)
	FOLD(X10, X2, X4, X12, X13)
	VMOVDQA       X4, X0

loop16:
	CMPQ CX, $16
	JB   done16
	VMOVDQU    0(SI), X4
	FOLD(X10, X0, X4, X12, X13)
	VMOVDQA    X4, X0
	ADDQ       $16, SI
	SUBQ       $16, CX
	JMP        loop16

done16:
	VMOVQ   X0, AX
	VPEXTRQ $1, X0, BX
	MOVQ    AX, lo+48(FP)
	MOVQ    BX, hi+56(FP)
	VZEROUPPER
	RET
