"""gdb pretty-printers for the torch C++ API of the host tier (``ncop debug``).

``torch::Tensor`` and every class holding a ``torchneuron::TensorImpl *impl_`` (the TCM
and stream accessors) print as their dtype, shape and first elements:
``torch::Tensor Float [4, 32] = {0, 1, 2, 3, 4, 5, 6, 7, ...}``; an element accessor
(``torch::TensorAccessor<float, 2, false>``) as its shape and the first elements of its
first row. ``ncop debug`` sources this file before the kernel runs.
"""

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
    if kind.code != gdb.TYPE_CODE_STRUCT or not kind.tag:
        return None
    if kind.tag.startswith("torch::TensorAccessor<"):
        return _AccessorPrinter(value, int(kind.template_argument(1)))
    if not kind.tag.startswith("torch::Tensor"):
        return None
    fields = [field.name for field in kind.fields()]
    return _TensorPrinter(value) if "impl_" in fields else None


gdb.pretty_printers.append(_lookup)
