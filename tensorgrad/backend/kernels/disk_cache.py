"""How a kernel's compiled code comes back from Numba's disk cache: with only what running it
needs. Numba's own load does more, for compiling later; each piece left out here is done when a
compilation needs it. A warm first step spends less on what it never uses (benchmarks/README.md:
cold_start, warm cache)."""
import llvmlite.binding as llvm
from numba.core import entrypoints
from numba.core.caching import FunctionCache
from numba.core.codegen import JITCodeLibrary
from numba.core.runtime import rtsys

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
        rtsys.initialize(target_context)
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
