"""The model as a codec, free of every framework: the code a receiver sees
(``quantization``, the contract's "Quantized codes"), the prior over its symbols (``prior``)
and the entropy coder that turns symbols into words and back (``coder``, constriction's range
coder: the ``codec`` extra, imported when it first codes)."""

from frae.codec.coder import ESCAPE_BITS, decode_symbols, encode_symbols, information_bits
from frae.codec.prior import MAX_TABLE_SYMBOLS, PRECISION, Prior, fit_prior, prior_of_symbols
from frae.codec.quantization import SYMBOL_LIMIT, passes_gradient, quantize, symbols, tie_margin

__all__ = [
    "ESCAPE_BITS",
    "MAX_TABLE_SYMBOLS",
    "PRECISION",
    "SYMBOL_LIMIT",
    "Prior",
    "decode_symbols",
    "encode_symbols",
    "fit_prior",
    "information_bits",
    "passes_gradient",
    "prior_of_symbols",
    "quantize",
    "symbols",
    "tie_margin",
]
