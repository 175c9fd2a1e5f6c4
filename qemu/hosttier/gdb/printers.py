"""gdb pretty-printers for the torch C++ API of the host tier (``ncop debug``).

``torch::Tensor`` and every class holding a ``torchneuron::TensorImpl *impl_`` (the TCM
and stream accessors) print as their dtype, shape and first elements:
``torch::Tensor Float [4, 32] = {0, 1, 2, 3, 4, 5, 6, 7, ...}``; an element accessor
(``torch::TensorAccessor<float, 2, false>``) as its shape and the first elements of its
first row. An op's argument descriptor (C's ``NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR``,
Rust's ``ArgTensor``, or a pointer to one) prints as its dtype, shape, storage address,
the device address it translates to and its first elements:
``descriptor float32 [4, 32] hbm 0x7f0000000000 -> 0x62000000 = {0, 1, 2, ...}``.
``ncop debug`` sources this file before the kernel runs, and appends the call's
translate windows to ``_WINDOWS``.
"""

import re
import struct

import gdb
import gdb.printing

# c10::ScalarType: the C type of one element, by the enumerator's value.
_ELEMENTS = {0: "unsigned char", 1: "signed char", 2: "short", 3: "int", 4: "long", 6: "float"}
_NAMES = {0: "Byte", 1: "Char", 2: "Short", 3: "Int", 4: "Long", 5: "Half", 6: "Float", 15: "BFloat16"}
# Elements shown after the shape.
_SHOWN = 8


def _describe(impl):
    """The dtype, shape and first elements of a TensorImpl pointer, in words."""
    if int(impl) == 0:
        return "(no tensor)"
    impl = impl.dereference()
    dtype = int(impl["dtype"])
    dim = int(impl["dim"])
    shape = [int(impl["sizes"][i]) for i in range(dim)]
    text = "%s %s" % (_NAMES.get(dtype, "dtype %d" % dtype), shape)
    element = _ELEMENTS.get(dtype)
    data = impl["data"]
    if element is None or int(data) == 0:
        return text
    numel = int(impl["numel"])
    pointer = data.cast(gdb.lookup_type(element).pointer())
    values = [str(pointer[i]) for i in range(min(numel, _SHOWN))]
    more = ", ..." if numel > _SHOWN else ""
    return "%s = {%s%s}" % (text, ", ".join(values), more)


# The call's translate windows (runtime/translate.rs): (ptr, mask, device_base, per
# core, core_stride); a framework address a with (a & mask) == ptr is at device_base +
# (a - ptr), plus core * core_stride when per core. Filled by ``ncop debug``.
_WINDOWS = []
# A descriptor's layout (runtime/wrapper_api/descriptor.rs, docs/abi): dtype at 0,
# num_dim at 3, storage_kind at 4, shape (u16 x 8) at 8, the storage at 24 (TPB: u32
# address; HBM: u64 address).
_DESCRIPTOR_BYTES = 40
# Dtype: its name and struct format (bfloat16 read as its 16 bits).
_DTYPES = {1: ("float32", "f"), 2: ("bfloat16", "H"), 3: ("float16", "e"), 4: ("int32", "i"),
           5: ("int8", "b"), 6: ("int64", "q"), 7: ("int16", "h"), 8: ("uint8", "B")}
_DESCRIPTOR_TYPES = ("NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR", "neuroncustomop::wrapper_api::descriptor::ArgTensor")


def _core():
    """The core of the selected thread (``core <i>``), 0 if not a core's."""
    thread = gdb.selected_thread()
    found = re.fullmatch(r"core (\d+)", (thread.name or "") if thread else "")
    return int(found.group(1)) if found else 0


def _device(address):
    """The device address of framework address ``address``, or None outside every window."""
    for ptr, mask, base, per_core, stride in _WINDOWS:
        if address & mask == ptr:
            return base + (address - ptr) + (_core() * stride if per_core else 0)
    return None


def _describe_descriptor(address):
    """A descriptor at ``address``, in words."""
    inferior = gdb.selected_inferior()
    raw = bytes(inferior.read_memory(address, _DESCRIPTOR_BYTES))
    dtype, rank, kind = raw[0], min(raw[3], 8), raw[4]
    shape = list(struct.unpack_from("<8H", raw, 8))[:rank]
    name, element = _DTYPES.get(dtype, ("dtype %d" % dtype, None))
    storage = struct.unpack_from("<Q" if kind == 1 else "<I", raw, 24)[0]
    text = "descriptor %s %s %s %#x" % (name, shape, "hbm" if kind == 1 else "tpb", storage)
    device = _device(storage) if kind == 1 else storage
    if device is None or element is None:
        return text
    numel = 1
    for size in shape:
        numel *= size
    shown = min(numel, _SHOWN)
    values = list(struct.unpack("<%d%s" % (shown, element),
                                bytes(inferior.read_memory(device, shown * struct.calcsize(element)))))
    if dtype == 2:
        values = [struct.unpack("<f", struct.pack("<I", v << 16))[0] for v in values]
    more = ", ..." if numel > _SHOWN else ""
    return "%s -> %#x = {%s%s}" % (text, device, ", ".join("%g" % v for v in values), more)


class _DescriptorPrinter:
    """An op's argument descriptor, or a pointer to one."""

    def __init__(self, value):
        self.value = value

    def to_string(self):
        value = self.value
        if value.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
            if int(value) == 0:
                return "(no descriptor)"
            return _describe_descriptor(int(value))
        return _describe_descriptor(int(value.address))


def _is_descriptor(kind):
    """Whether ``kind`` (typedefs stripped) is a descriptor type."""
    kind = kind.unqualified().strip_typedefs()
    return kind.code == gdb.TYPE_CODE_STRUCT and (kind.tag or kind.name) in _DESCRIPTOR_TYPES


class _TensorPrinter:
    """A value whose ``impl_`` is a ``torchneuron::TensorImpl *``."""

    def __init__(self, value):
        self.value = value

    def to_string(self):
        return "%s %s" % (self.value.type.strip_typedefs().tag, _describe(self.value["impl_"]))


class _AccessorPrinter:
    """A ``torch::TensorAccessor<T, N, ReadOnly>``: ``data_``, ``sizes_``, ``strides_``."""

    def __init__(self, value, rank):
        self.value = value
        self.rank = rank

    def to_string(self):
        sizes = [int(self.value["sizes_"][i]) for i in range(self.rank)]
        data, step = self.value["data_"], int(self.value["strides_"][self.rank - 1])
        count = min(sizes[-1], _SHOWN) if sizes else 0
        values = [str(data[k * step]) for k in range(count)]
        more = ", ..." if sizes and sizes[-1] > _SHOWN else ""
        return "%s %s = {%s%s}" % (self.value.type.strip_typedefs().tag, sizes, ", ".join(values), more)


def _lookup(value):
    kind = value.type.strip_typedefs()
    if kind.code == gdb.TYPE_CODE_PTR and _is_descriptor(kind.target()):
        return _DescriptorPrinter(value)
    if _is_descriptor(kind):
        return _DescriptorPrinter(value)
    if kind.code != gdb.TYPE_CODE_STRUCT or not kind.tag:
        return None
    if kind.tag.startswith("torch::TensorAccessor<"):
        return _AccessorPrinter(value, int(kind.template_argument(1)))
    if not kind.tag.startswith("torch::Tensor"):
        return None
    fields = [field.name for field in kind.fields()]
    return _TensorPrinter(value) if "impl_" in fields else None


gdb.pretty_printers.append(_lookup)
