"""The model as a codec, free of every framework: the code a receiver sees
(``quantization``, the contract's "Quantized codes"), the prior over its symbols (``prior``,
kept in checkpoints beside the weights: ``load_prior``),
the entropy coder that turns symbols into words and back (``coder``, constriction's range
coder: the ``codec`` extra, imported when it first codes), and a signal to bytes and back
(``compression``, in the format of ``byte_format``), or a chunk at a time as packets
(``packets``), which survive the losses of ``loss``; the rate a learned prior gives the codes
(``rate``, the contract's "Rate: training the codec for its bits") and its integer tables
(``learned_prior``)."""

import os

from frae.codec.byte_format import (
    HEADER_BYTES,
    MAX_STREAM_SYMBOLS,
    OPENING_BYTES,
    PACKET_BYTES,
    REFRESH_STEP,
    SEQUENCE_BYTES,
    TRAILER_BYTES,
)
from frae.codec.coder import (
    ENDING_BITS,
    ESCAPE_BITS,
    ROUNDING_BITS,
    decode_symbols,
    encode_symbols,
    information_bits,
    size_bound_bits,
)
from frae.codec.compression import compress, decompress, read
from frae.codec.learned_prior import prior_from_model, prior_from_parameters
from frae.codec.loss import gilbert_elliott
from frae.codec.packets import CONCEALMENTS, Decoder, Encoder
from frae.codec.prior import MAX_TABLE_SYMBOLS, PRECISION, Prior, fit_prior, prior_of_symbols
from frae.codec.rate import FLOOR_BITS, bits
from frae.quantization import SYMBOL_LIMIT, passes_gradient, quantize, symbols, tie_margin


def load_prior(path: str | os.PathLike[str]) -> Prior | None:
    """The prior a checkpoint holds beside its weights, ``None`` if it holds none: checked
    as ``frae.checkpoints.load_prior`` checks it, that module imported on the call, as the
    checkpoints use this package and not the other way round."""
    from frae.checkpoints import load_prior as read_prior

    return read_prior(path)


__all__ = [
    "CONCEALMENTS",
    "ENDING_BITS",
    "ESCAPE_BITS",
    "FLOOR_BITS",
    "HEADER_BYTES",
    "MAX_STREAM_SYMBOLS",
    "MAX_TABLE_SYMBOLS",
    "OPENING_BYTES",
    "PACKET_BYTES",
    "PRECISION",
    "REFRESH_STEP",
    "ROUNDING_BITS",
    "SEQUENCE_BYTES",
    "SYMBOL_LIMIT",
    "TRAILER_BYTES",
    "Decoder",
    "Encoder",
    "Prior",
    "bits",
    "compress",
    "decode_symbols",
    "decompress",
    "encode_symbols",
    "fit_prior",
    "gilbert_elliott",
    "information_bits",
    "load_prior",
    "passes_gradient",
    "prior_from_model",
    "prior_from_parameters",
    "prior_of_symbols",
    "quantize",
    "read",
    "size_bound_bits",
    "symbols",
    "tie_margin",
]
