"""The BLAS's GEMM called from compiled code by its address (mkl_blas.gemm_address).

Numba can call a ctypes function handed to a kernel, but it converts the function object at
every call (generate_nocache: its Linear layers and attention calls), and a kernel that holds
one as a global cannot be kept in the disk cache (the address is the process's own).
An address is a plain integer argument: `gemm` turns it into a function pointer in the compiled
code itself, with CBLAS's prototype.
"""
from llvmlite import ir
from numba import types
from numba.core import errors
from numba.extending import intrinsic

_ROW_MAJOR = 101  # CBLAS's enum value: every caller passes row-major matrices


@intrinsic
def gemm(typingctx, address, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """cblas_?gemm(row-major, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    at `address`, for float32 or float64 arrays a, b and c (their data pointers are passed):
    c = alpha * op(a) @ op(b) + beta * c, where op transposes when its flag is CBLAS's 112."""
    arrays = (a, b, c)
    if not all(isinstance(t, types.Array) for t in arrays):
        raise errors.TypingError("blas.gemm: a, b and c must be arrays")
    real = c.dtype
    if real not in (types.float32, types.float64) or a.dtype != real or b.dtype != real:
        raise errors.TypingError(f"blas.gemm: a, b and c must be float32 or float64 arrays of "
                                 f"one dtype, got {a.dtype}, {b.dtype} and {c.dtype}")
    signature = types.void(address, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                           ldc)

    def codegen(context, builder, sig, args):
        i32, pointer = ir.IntType(32), ir.IntType(8).as_pointer()
        real_ir = context.get_value_type(real)
        prototype = ir.FunctionType(ir.VoidType(), [i32] * 6 + [real_ir, pointer, i32, pointer,
                                                                 i32, real_ir, pointer, i32])

        def cast(i, to):
            return context.cast(builder, args[i], sig.args[i], to)

        def data(i):
            array = context.make_array(sig.args[i])(context, builder, args[i])
            return builder.bitcast(array.data, pointer)

        function = builder.inttoptr(cast(0, types.intp), prototype.as_pointer())
        ints = [ir.Constant(i32, _ROW_MAJOR)] + [cast(i, types.int32) for i in range(1, 6)]
        builder.call(function, ints + [cast(6, real), data(7), cast(8, types.int32), data(9),
                                       cast(10, types.int32), cast(11, real), data(12),
                                       cast(13, types.int32)])
        return context.get_dummy_value()

    return signature, codegen
