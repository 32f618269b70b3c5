"""How a kernel's compiled code comes back from Numba's disk cache: with only what running it
needs, and Numba's runtime, compiled once, from beside it. Numba's own load does more, for
compiling later; each piece left out here is done when a compilation needs it. A warm first
step spends less on what it never uses (benchmarks/README.md: cold_start, warm cache)."""
import hashlib
import os

import llvmlite
import llvmlite.binding as llvm
import numba
from numba.core import config, entrypoints
from numba.core.caching import FunctionCache
from numba.core.codegen import JITCodeLibrary
from numba.core.runtime import _nrt_python, nrtdynmod, rtsys

from ... import serialization
from .. import kernel_loading


class CachedLibrary(JITCodeLibrary):
    """A kernel's machine code loaded from the cache. Numba's load also parses the kernel's LLVM
    bitcode and lists every symbol it defines, both for a later compilation of a function that
    calls the kernel, which links that bitcode in: here that compilation does it."""
    _bitcode = None  # the kernel's bitcode, until a caller's compilation asks for it

    @classmethod
    def _unserialize(cls, codegen, state):
        name, kind, data = state
        if kind != "object":
            return super()._unserialize(codegen, state)
        library = cls(codegen, name)
        object_code, library._bitcode = data
        library.enable_object_caching()
        library._set_compiled_object(object_code)
        library._finalize_final_module()  # links the machine code into Numba's JIT engine
        return library

    def _get_module_for_linking(self):
        if self._bitcode is not None:
            self._shared_module = llvm.parse_bitcode(self._bitcode)
            self._bitcode = None
            self._codegen._engine._load_defined_symbols(self._shared_module)
        return super()._get_module_for_linking()

    def get_pointer_to_function(self, name):
        """The address of the symbol `name` (0 where nothing defines it). Before its symbols are
        listed, the JIT engine, which holds the machine code already, answers."""
        self._ensure_finalized()
        if self._bitcode is not None:
            address = self._codegen._engine.get_function_address(name)
            if address:
                return address
            self._get_module_for_linking()  # not in the engine: Numba's own answer
        return super().get_pointer_to_function(name)


class DiskCache(FunctionCache):
    """Numba's disk cache for one kernel, loading its code as a CachedLibrary and without first
    importing and installing every typing and lowering registry, as Numba's own does at each
    load: they serve compilation, which refreshes them itself. What compiled code calls at run
    time is there already (the runtime it allocates through, started here; parallel loops'
    threads, started by the cached code's own reload step)."""

    def load_overload(self, sig, target_context):
        start_runtime(target_context, self._cache_path)
        codegen = target_context.codegen()
        # the one library made meanwhile is this load's: Numba holds its compiler lock (a
        # dispatcher's compile takes it) over every load and every compilation
        codegen._library_class = CachedLibrary
        try:
            with self._guard_against_spurious_io_errors(), kernel_loading.collector_paused():
                loaded = self._load_overload(sig, target_context)
        finally:
            del codegen._library_class
        if loaded is None:  # Numba compiles it next: Numba's extensions first, as it would
            entrypoints.init_all()
        return loaded


def start_runtime(context, directory):
    """rtsys.initialize(context): Numba's runtime, whose reference counts and allocations compiled
    code calls. Numba compiles the runtime's own functions from LLVM IR in each process; here their
    machine code is kept in `directory`, beside the kernels', for one Numba, LLVM and CPU."""
    if rtsys._init:
        return
    if not _RUNTIME_PIECES:
        rtsys.initialize(context)
        return
    if config.NRT_STATS:
        _nrt_python.memsys_enable_stats()
    for name, address in _nrt_python.c_helpers.items():  # the runtime's C half, which it calls
        llvm.add_symbol(name if name.startswith("_") else "NRT_" + name, address)
    codegen = context.codegen()
    key = repr((numba.__version__, llvmlite.__version__, codegen.magic_tuple())).encode()
    path = os.path.join(directory, f"numba-runtime-{hashlib.sha256(key).hexdigest()[:16]}.bin")
    rtsys._library = _load_runtime(codegen, path) or _compile_runtime(context, path)
    rtsys._init = True


def _load_runtime(codegen, path):
    """The runtime's library from `path`: a SHA-256 digest of what follows, the machine code's
    length (8 bytes), the machine code and the bitcode. None when it is missing or damaged."""
    try:
        with open(path, "rb") as file:
            digest, payload = file.read(32), file.read()
    except OSError:
        return None
    if hashlib.sha256(payload).digest() != digest or len(payload) < 8:
        return None  # torn or corrupted: compiled again, and rewritten
    split = 8 + int.from_bytes(payload[:8], "little")
    return CachedLibrary._unserialize(codegen, ("nrt", "object", (payload[8:split],
                                                                  payload[split:])))


def _compile_runtime(context, path):
    """What Numba's nrtdynmod.compile_nrt_functions does, keeping the machine code, which is
    then written to `path` (whole or not at all: serialization.atomic_write)."""
    ir_module, library = nrtdynmod.create_nrt_module(context)
    library.enable_object_caching()
    library.add_ir_module(ir_module)
    library.finalize()
    _, _, (object_code, bitcode) = library.serialize_using_object_code()
    payload = len(object_code).to_bytes(8, "little") + object_code + bitcode
    data = hashlib.sha256(payload).digest() + payload
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        serialization.atomic_write(path, lambda file: file.write(data))
    except OSError:  # a cache that cannot be written to: compiled in each process, as by Numba
        pass
    return library


def find_extensions_when_compiling():
    """A kernel dispatcher's `_compilation_chain_init_hook`. Numba's looks for Numba extensions
    (installed packages' entry points, through importlib.metadata) before a dispatcher's first
    call; a kernel's first call loads it from the cache, and DiskCache looks for them if it has
    to compile instead."""


# the pieces of Numba's own load that DiskCache keeps (without them, as in a Numba that renamed
# them, Numba's own cache serves)
USABLE = (all(hasattr(FunctionCache, name) for name in (
    "_load_overload", "_guard_against_spurious_io_errors"))
    and all(hasattr(JITCodeLibrary, name) for name in (
        "_unserialize", "_get_module_for_linking", "_finalize_final_module",
        "enable_object_caching", "_set_compiled_object")))
# the pieces of Numba's runtime start that start_runtime replaces (else Numba's own start runs)
_RUNTIME_PIECES = (hasattr(rtsys, "_init")
                   and isinstance(getattr(_nrt_python, "c_helpers", None), dict)
                   and hasattr(nrtdynmod, "create_nrt_module")
                   and hasattr(JITCodeLibrary, "serialize_using_object_code"))
