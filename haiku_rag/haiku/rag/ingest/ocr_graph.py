"""Cheaper arithmetic for the OCR models, rewritten in memory when they are loaded.

PP-OCRv4's networks (PP-LCNetV3 blocks) were exported from Paddle with every hard-swish
spelled out as four element-wise ops, ``x * Clip(x + 3, 0, 6) / 6``, and wrapped in two
"learnable affine" scalings, ``Conv -> *s1 +b1 -> hard-swish -> *s2 +b2``. onnxruntime fuses
none of it, so each block reads and writes its whole activation map eight times after the
convolution: on a line image the element-wise ops were ~40 % of the recogniser's time.

The rewrite computes the same function with fewer passes (exact algebra, float rounding
aside):

* ``s1``, ``b1`` and ``s2`` are folded into the convolution's weights and bias
  (``s2 * hswish(x) = y * HardSigmoid(y / s2)`` with ``y = s2 * x``), and the hard-swish
  becomes ``y * HardSigmoid(y)`` (two ops, with alpha = 1 / (6 s2));
* ``+ b2`` is folded into the next convolution's bias when that one is 1 x 1 (no padding,
  so every input it reads carries the ``b2``); otherwise it stays an Add.

The model file is the one shipped in rapidocr's wheel; the derived graph lives only in
memory (it takes ~0.1 s to compute) and nothing is written or downloaded. The ONNX
protobuf is read with a minimal schema of the few fields touched, declared here with
``google.protobuf`` (already required by onnxruntime) instead of depending on the ``onnx``
package: ONNX's field numbers are part of its frozen file format, and every field not
declared here is carried through unchanged as an unknown field.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

# ONNX TensorProto.DataType.FLOAT and AttributeProto.AttributeType.FLOAT
_FLOAT = 1
_FLOAT_ATTRIBUTE = 1
_schema: dict[str, Any] = {}
_schema_lock = threading.Lock()


def _message_classes() -> dict[str, Any]:
    """ModelProto, GraphProto, NodeProto, AttributeProto and TensorProto, with only the
    fields this module reads or writes (numbers from onnx/onnx.proto)."""
    with _schema_lock:
        if _schema:
            return _schema
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # type: ignore[import-untyped]  # no stubs installed

        field = descriptor_pb2.FieldDescriptorProto
        optional, repeated = field.LABEL_OPTIONAL, field.LABEL_REPEATED
        types = {
            "string": field.TYPE_STRING,
            "bytes": field.TYPE_BYTES,
            "int64": field.TYPE_INT64,
            "int32": field.TYPE_INT32,
            "float": field.TYPE_FLOAT,
        }
        layout: dict[str, list[tuple[str, int, int, str]]] = {
            "TensorProto": [
                ("dims", 1, repeated, "int64"),
                ("data_type", 2, optional, "int32"),
                ("float_data", 4, repeated, "float"),
                ("name", 8, optional, "string"),
                ("raw_data", 9, optional, "bytes"),
            ],
            "AttributeProto": [
                ("name", 1, optional, "string"),
                ("f", 2, optional, "float"),
                ("i", 3, optional, "int64"),
                ("s", 4, optional, "bytes"),
                ("t", 5, optional, ".haiku_onnx.TensorProto"),
                ("ints", 8, repeated, "int64"),
                ("type", 20, optional, "int32"),
            ],
            "NodeProto": [
                ("input", 1, repeated, "string"),
                ("output", 2, repeated, "string"),
                ("name", 3, optional, "string"),
                ("op_type", 4, optional, "string"),
                ("attribute", 5, repeated, ".haiku_onnx.AttributeProto"),
                ("domain", 7, optional, "string"),
            ],
            "ValueInfoProto": [("name", 1, optional, "string")],
            "GraphProto": [
                ("node", 1, repeated, ".haiku_onnx.NodeProto"),
                ("initializer", 5, repeated, ".haiku_onnx.TensorProto"),
                ("output", 12, repeated, ".haiku_onnx.ValueInfoProto"),
            ],
            "ModelProto": [("graph", 7, optional, ".haiku_onnx.GraphProto")],
        }
        file = descriptor_pb2.FileDescriptorProto(
            name="haiku_onnx_subset.proto", package="haiku_onnx", syntax="proto2"
        )
        for message_name, fields in layout.items():
            message = file.message_type.add(name=message_name)
            for name, number, label, kind in fields:
                entry = message.field.add(name=name, number=number, label=label)
                if kind.startswith("."):
                    entry.type = field.TYPE_MESSAGE
                    entry.type_name = kind
                else:
                    entry.type = types[kind]
                if name in ("dims", "float_data", "ints"):
                    entry.options.packed = name == "float_data"  # as onnx.proto declares them
        pool = descriptor_pool.DescriptorPool()
        pool.Add(file)
        for message_name in layout:
            descriptor = pool.FindMessageTypeByName(f"haiku_onnx.{message_name}")
            _schema[message_name] = message_factory.GetMessageClass(descriptor)
        return _schema


def fuse_activations(model: bytes) -> tuple[bytes, int]:
    """The model with its spelled-out hard-swish blocks rewritten (see the module's doc),
    and how many were rewritten. A block that does not match the pattern exactly is left
    as it is, so any model stays correct (at worst unchanged)."""
    classes = _message_classes()
    proto = classes["ModelProto"]()
    proto.ParseFromString(model)
    rewritten = _Graph(proto.graph, classes).fuse()
    return proto.SerializeToString(), rewritten


class _Graph:
    def __init__(self, graph: Any, classes: dict[str, Any]) -> None:
        self.graph = graph
        self.classes = classes
        self.initializers = {tensor.name: tensor for tensor in graph.initializer}
        self.constants = {
            node.output[0]: node.attribute[0].t
            for node in graph.node
            if node.op_type == "Constant"
            and len(node.attribute) == 1
            and node.attribute[0].name == "value"
        }
        self.outputs = {value.name for value in graph.output}
        self.producer: dict[str, Any] = {}
        self.consumers: dict[str, list[Any]] = {}
        for node in graph.node:
            for name in node.output:
                self.producer[name] = node
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.removed: set[int] = set()
        self.replacement: dict[int, list[Any]] = {}

    # -- reading -------------------------------------------------------------------------

    def tensor(self, name: str) -> Any | None:
        """A constant tensor: the exporter wrote the weights as Constant nodes, not
        initializers; both are read."""
        tensor = self.initializers.get(name)
        return tensor if tensor is not None else self.constants.get(name)

    def scalar(self, name: str) -> float | None:
        tensor = self.tensor(name)
        if tensor is None or any(size != 1 for size in tensor.dims):
            return None
        values = _float_values(tensor)
        return float(values.reshape(-1)[0]) if values is not None and values.size == 1 else None

    def only_consumer(self, name: str, op_type: str) -> Any | None:
        users = self.consumers.get(name, [])
        if len(users) != 1 or users[0].op_type != op_type or name in self.outputs:
            return None
        return users[0]

    def scalar_operand(self, node: Any, other: str) -> float | None:
        """The constant scalar operand of a binary ``node`` whose other operand is ``other``."""
        operands = list(node.input)
        if len(operands) != 2 or other not in operands:
            return None
        return self.scalar(operands[1 - operands.index(other)])

    def private_weight(self, name: str) -> Any | None:
        tensor = self.tensor(name)
        if tensor is None or len(self.consumers.get(name, [])) != 1:
            return None
        return tensor if _float_values(tensor) is not None else None

    # -- the rewrite ---------------------------------------------------------------------

    def fuse(self) -> int:
        count = 0
        for clip in list(self.graph.node):
            if clip.op_type == "Clip" and self.fuse_hard_swish(clip):
                count += 1
        if count:
            nodes = []
            for node in self.graph.node:
                if id(node) in self.replacement:
                    nodes.extend(self.replacement[id(node)])
                elif id(node) not in self.removed:
                    nodes.append(node)
            # the scalars folded away leave their Constant nodes unused
            used = {name for node in nodes for name in node.input} | self.outputs
            nodes = [n for n in nodes if n.op_type != "Constant" or n.output[0] in used]
            del self.graph.node[:]
            self.graph.node.extend(nodes)
        return count

    def fuse_hard_swish(self, clip: Any) -> bool:
        """``x * Clip(x + 3, 0, 6) / 6`` around ``clip``, with the affine scalings and the
        convolution around it when they are there."""
        if (
            len(clip.input) != 3
            or self.scalar(clip.input[1]) != 0.0
            or self.scalar(clip.input[2]) != 6.0
        ):
            return False
        add3 = self.producer.get(clip.input[0])
        if add3 is None or add3.op_type != "Add" or len(self.consumers[add3.output[0]]) != 1:
            return False
        xs = [name for name in add3.input if self.scalar(name) != 3.0]
        if len(xs) != 1 or self.scalar_operand(add3, xs[0]) != 3.0:
            return False
        x = xs[0]
        multiply = self.only_consumer(clip.output[0], "Mul")
        if multiply is None or x not in multiply.input:
            return False
        divide = self.only_consumer(multiply.output[0], "Div")
        if (
            divide is None
            or list(divide.input)[0] != multiply.output[0]
            or self.scalar(divide.input[1]) != 6.0
        ):
            return False
        if sorted(id(node) for node in self.consumers.get(x, [])) != sorted(
            (id(add3), id(multiply))
        ):
            return False
        self.removed.update(id(node) for node in (add3, clip, multiply, divide))
        node_class = self.classes["NodeProto"]
        out = divide.output[0]
        alpha = 1.0 / 6.0
        convolution = self.fold_affine_into_convolution(x)
        if convolution is not None:
            fold = convolution(out)
            if fold is not None:
                alpha, out = fold
        gate = f"{out}__hard_sigmoid"
        self.replacement[id(divide)] = [
            node_class(
                name=f"{divide.name}__hard_sigmoid",
                op_type="HardSigmoid",
                input=[x],
                output=[gate],
                attribute=[self.float_attribute("alpha", alpha), self.float_attribute("beta", 0.5)],
            ),
            node_class(
                name=f"{divide.name}__hard_swish", op_type="Mul", input=[x, gate], output=[out]
            ),
        ]
        return True

    def fold_affine_into_convolution(
        self, x: str
    ) -> Callable[[str], tuple[float, str] | None] | None:
        """If ``x`` is ``Conv(...) * s1 + b1`` (each link used once), fold ``s1`` and ``b1``
        into the convolution, make ``x`` its output, and return the step that then folds the
        ``* s2`` after the hard-swish (whose output is the argument) the same way."""
        add = self.producer.get(x)
        if add is None or add.op_type != "Add":
            return None
        scale = next(
            (
                self.producer.get(n)
                for n in add.input
                if self.producer.get(n) is not None and self.producer[n].op_type == "Mul"
            ),
            None,
        )
        if scale is None or len(self.consumers[scale.output[0]]) != 1:
            return None
        b1 = self.scalar_operand(add, scale.output[0])
        y = next(
            (
                n
                for n in scale.input
                if self.producer.get(n) is not None and self.producer[n].op_type == "Conv"
            ),
            None,
        )
        if b1 is None or y is None:
            return None
        s1 = self.scalar_operand(scale, y)
        conv = self.producer[y]
        if s1 is None or len(self.consumers[y]) != 1 or y in self.outputs:
            return None
        weights = self.private_weight(conv.input[1])
        bias_name = conv.input[2] if len(conv.input) > 2 else ""
        bias = self.private_weight(bias_name) if bias_name else None
        if weights is None or (bias_name and bias is None):
            return None
        import numpy as np

        w = _float_values(weights)
        c = _float_values(bias) if bias is not None else np.zeros(w.shape[0], dtype=np.float32)
        _set_floats(weights, w * np.float32(s1))
        c = c * np.float32(s1) + np.float32(b1)
        bias = self.set_bias(conv, bias, c)
        # the convolution now writes x itself
        conv.output[0] = x
        self.removed.update((id(scale), id(add)))

        def fold_scale_after(out: str) -> tuple[float, str] | None:
            rescale = self.only_consumer(out, "Mul")
            s2 = self.scalar_operand(rescale, out) if rescale is not None else None
            if rescale is None or s2 is None or abs(s2) < 1e-6:
                return None
            _set_floats(weights, _float_values(weights) * np.float32(s2))
            _set_floats(bias, _float_values(bias) * np.float32(s2))
            self.removed.add(id(rescale))
            self.fold_bias_into_next_convolution(rescale.output[0])
            return 1.0 / (6.0 * s2), rescale.output[0]

        return fold_scale_after

    def fold_bias_into_next_convolution(self, out: str) -> None:
        """``out + b2`` feeding a 1 x 1 convolution only: the ``b2`` moves into its bias."""
        import numpy as np

        add = self.only_consumer(out, "Add")
        b2 = self.scalar_operand(add, out) if add is not None else None
        if add is None or b2 is None:
            return
        conv = self.only_consumer(add.output[0], "Conv")
        if conv is None or list(conv.input)[0] != add.output[0]:
            return
        weights = self.private_weight(conv.input[1])
        bias_name = conv.input[2] if len(conv.input) > 2 else ""
        bias = self.private_weight(bias_name) if bias_name else None
        if weights is None or (bias_name and bias is None):
            return
        w = _float_values(weights)
        attributes = {a.name: a for a in conv.attribute}
        pads = list(attributes["pads"].ints) if "pads" in attributes else []
        auto_pad = attributes["auto_pad"].s if "auto_pad" in attributes else b"NOTSET"
        if (
            w.ndim != 4
            or w.shape[2:] != (1, 1)
            or any(pads)
            or auto_pad not in (b"NOTSET", b"VALID")
        ):
            return
        c = _float_values(bias) if bias is not None else np.zeros(w.shape[0], dtype=np.float32)
        self.set_bias(conv, bias, c + np.float32(b2) * w.sum(axis=(1, 2, 3)))
        conv.input[0] = out
        self.removed.add(id(add))

    def set_bias(self, conv: Any, bias: Any | None, values: Any) -> Any:
        if bias is None:
            bias = self.graph.initializer.add(name=f"{conv.output[0]}__bias", data_type=_FLOAT)
            self.initializers[bias.name] = bias
            while len(conv.input) < 3:
                conv.input.append("")
            conv.input[2] = bias.name
            self.consumers[bias.name] = [conv]
        _set_floats(bias, values)
        return bias

    def float_attribute(self, name: str, value: float) -> Any:
        return self.classes["AttributeProto"](name=name, f=value, type=_FLOAT_ATTRIBUTE)


def _float_values(tensor: Any) -> Any:
    """The float32 values of ``tensor`` as an array of its shape, or None if it holds another type."""
    import numpy as np

    if tensor.data_type != _FLOAT:
        return None
    shape = tuple(tensor.dims)
    if tensor.raw_data:
        values = np.frombuffer(tensor.raw_data, dtype="<f4")
    else:
        values = np.asarray(tensor.float_data, dtype=np.float32)
    if values.size != int(np.prod(shape, dtype=np.int64)):
        return None
    return values.reshape(shape).astype(np.float32)


def _set_floats(tensor: Any, values: Any) -> None:
    import numpy as np

    values = np.asarray(values, dtype="<f4")
    del tensor.dims[:]
    tensor.dims.extend(values.shape)
    del tensor.float_data[:]
    tensor.raw_data = values.tobytes()
