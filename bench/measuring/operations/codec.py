"""The codec's runs at each side and chunk length (``Coding``): a quantized model's sequence
sent as packets of bytes, a chunk of frames a packet (``frae.codec.Encoder``), and received
(``frae.codec.Decoder``); the entropy coder alone, the same symbols coded to the same bytes
and back (``frae.codec.coder``: a range coder a packet, each sequence written into it, ended
at the shortest length; opened over the packet's bytes, each sequence read), with no model and
no packet; and the codec with its coder bypassed, each call of the coder answered with what it
answered in a run before (``Recorder``, ``Replay``): the codec less the bypassed run is what
the coder costs within it, where the model's work has taken the caches the coder alone keeps
warm. Each run sends or receives the whole sequence from the zero state, its coder built
anew, as a fresh stream's would be.

What the packets weigh is measured once, beside them (``packet_sizes``): the mean bits of a
packet past the stream's opening and of its symbols' information under the prior, which the
sender's records carry (``ResultRecord.packet_bits``, ``information_bits``).

The runs at one side and chunk length are timed in turn, a sample of each a round, so that a
drift of the machine falls on each alike (the coder's share is the difference of two of
them); the runs are made once a point, on a model holding ``codec_weights``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, NamedTuple
from unittest import mock

import numpy as np
import numpy.typing as npt

from bench.grid import STREAM_CHUNKS
from bench.measuring.job import Job
from bench.measuring.operations.base import Operation
from bench.measuring.operations.stream import pieces
from bench.measuring.point import OnPoint, Row, Unit
from bench.measuring.timing import Made, Prepared, Rule, seconds_of
from bench.records import BYPASSED, CODEC, CODER, CODING, RECEIVER, SENDER
from frae.config import FRAEConfig

WEIGHTS_SEED, WEIGHTS_STDDEV = 1, 1.0
"""The codec's model holds weights N(0, 1) drawn from seed 1 (``codec_weights``)."""
PRIOR_SEED = 1
"""The prior is fitted on another sequence of the same shape, drawn from this seed."""

Symbols = npt.NDArray[np.int32]


class CodecRun(NamedTuple):
    """One measurement of the codec, ready to run: the packets (``CODEC``), the coder alone
    (``CODER``) or the packets with the coder bypassed (``BYPASSED``), at one side and chunk
    length; ``sizes``, the fields of ``ResultRecord`` its records carry beside the timings."""

    operation: str
    side: str
    chunk: int
    run: Callable[[], object]
    sizes: dict[str, float] | None = None


class Packet(NamedTuple):
    """A packet's frame count and the coder's bytes it carries (past its head)."""

    frames: int
    coded: bytes


def codec_weights(config: FRAEConfig) -> dict[str, npt.NDArray[np.float32]]:
    """Weights whose codes spread over several symbols a frame, as a trained model's do: the
    initial weights' N(0, 0.05) keep every code of the default model on one symbol, which
    would time an entropy coder that has nothing to code."""
    rng = np.random.default_rng(WEIGHTS_SEED)
    return {
        name: rng.normal(0.0, WEIGHTS_STDDEV, shape).astype(np.float32)
        for name, shape in config.parameter_shapes().items()
    }


def codec_runs(
    model: Any, x: npt.NDArray[np.float32], chunks: tuple[int, ...]
) -> Iterator[CodecRun]:
    """Each side at each chunk length, through packets, through the coder alone and with the
    coder bypassed, on ``model``'s symbols of ``x`` (B, T, F) under a prior of another
    sequence's; the sender's packets weighed (``packet_sizes``)."""
    from frae import codec
    from frae.data import multi_sine

    batch, steps, features = x.shape
    fitted_on = multi_sine(batch=batch, steps=steps, features=features, seed=PRIOR_SEED)
    prior = codec.fit_prior(model, fitted_on)
    for chunk in chunks:
        cut, sent, received = pieces(x, chunk), list[Any](), list[Any]()
        packets = _sending(model, prior, cut, recording(sent))()
        _receiving(model, prior, packets, recording(received))()
        unpacked = unpack(packets)
        symbols = read_symbols(prior, unpacked, batch)
        sizes = packet_sizes(prior, packets, symbols)
        sending, receiving = _sending(model, prior, cut), _receiving(model, prior, packets)
        yield CodecRun(CODEC, SENDER, chunk, sending, sizes)
        yield CodecRun(CODEC, RECEIVER, chunk, receiving)
        yield CodecRun(CODER, SENDER, chunk, _writing(prior, symbols))
        yield CodecRun(CODER, RECEIVER, chunk, _reading(prior, unpacked, batch))
        replayed = _receiving(model, prior, packets, replaying(received))
        yield CodecRun(BYPASSED, SENDER, chunk, _sending(model, prior, cut, replaying(sent)))
        yield CodecRun(BYPASSED, RECEIVER, chunk, replayed)


def unpack(packets: list[bytes]) -> list[Packet]:
    """Each packet's frame count and coder's bytes (``frae.codec.byte_format.unpack_packet``)."""
    from frae.codec.byte_format import unpack_packet

    heads = [unpack_packet(packet) for packet in packets]
    pairs = zip(heads, packets, strict=True)
    return [Packet(head.frames, packet[head.start :]) for head, packet in pairs]


def read_symbols(prior: Any, packets: list[Packet], sequences: int) -> list[list[Symbols]]:
    """The symbols each packet carries, a (frames, L) array for each of its ``sequences``."""
    from frae.codec.coder import SymbolCoder, opened

    coder = SymbolCoder(prior)
    found = []
    for frames, coded in packets:
        decoder = opened(coded)
        found.append([coder.read(decoder, frames) for _ in range(sequences)])
    return found


def packet_sizes(
    prior: Any, packets: list[bytes], symbols: list[list[Symbols]]
) -> dict[str, float] | None:
    """The mean bits of the packets past the stream's opening (``packet_bits``) and of their
    symbols' information under the prior (``information_bits``, additive over frames:
    ``frae.codec.information_bits``); ``None`` where the opening is the only packet."""
    from frae.codec import information_bits

    later = len(packets) - 1
    if later < 1:
        return None
    by_sequence = zip(*symbols[1:], strict=True)
    information = sum(information_bits(prior, np.concatenate(one)) for one in by_sequence)
    bits = 8 * sum(len(packet) for packet in packets[1:])
    return {"packet_bits": bits / later, "information_bits": information / later}


RANGE_CODER = ("start", "ended", "opened")
"""The range coder's functions ``frae.codec.packets`` calls beside its ``SymbolCoder``'s
methods: a packet's coder started, ended at the shortest length, opened over its bytes."""
Through = Callable[[Any, dict[str, Callable[..., Any]]], Any]
"""What an end's coder calls go through, made of its ``SymbolCoder`` and the range coder's
functions (``RANGE_CODER``) by name."""


class Recorder:
    """The coder as it is, each call's answer kept, in order: the ``SymbolCoder``'s methods
    and the range coder's functions alike."""

    def __init__(
        self, coder: Any, functions: dict[str, Callable[..., Any]], answers: list[Any]
    ) -> None:
        self.coder, self.functions, self.answers = coder, functions, answers

    def __getattr__(self, name: str) -> Callable[..., Any]:
        real = self.functions[name] if name in self.functions else getattr(self.coder, name)

        def recorded(*args: Any) -> Any:
            answer = real(*args)
            self.answers.append(answer)
            return answer

        setattr(self, name, recorded)  # found without this lookup from the next call on
        return recorded


class Replay:
    """The coder bypassed: each call, whatever its name and arguments, answered with the next
    of the answers a ``Recorder`` kept, in order. No range coder is started, written, ended,
    opened or read: what is left of the codec is the model, the symbols, the packet's head
    and the checks and bookkeeping of a stream's ends."""

    def __init__(self, answers: list[Any]) -> None:
        self.next = iter(answers).__next__

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def replayed(*args: Any) -> Any:
            return self.next()

        setattr(self, name, replayed)
        return replayed


def recording(answers: list[Any]) -> Through:
    """Coder calls through a ``Recorder`` that keeps their answers in ``answers``."""
    return lambda coder, functions: Recorder(coder, functions, answers)


def replaying(answers: list[Any]) -> Through:
    """Coder calls answered by a ``Replay`` of ``answers``."""
    return lambda coder, functions: Replay(answers)


@contextlib.contextmanager
def coding_through(end: Any, through: Through | None) -> Iterator[None]:
    """``end``'s coder calls (an ``Encoder``'s or a ``Decoder``'s: its ``SymbolCoder``'s and
    the range coder's functions of ``frae.codec.packets``) made through what ``through``
    makes of them while the block runs; where it is ``None``, as they are."""
    if through is None:
        yield
        return
    from frae.codec import packets

    made = through(end.coder, {name: getattr(packets, name) for name in RANGE_CODER})
    end.coder = made
    with contextlib.ExitStack() as patches:
        for name in RANGE_CODER:
            patches.enter_context(mock.patch.object(packets, name, getattr(made, name)))
        yield


def _sending(
    model: Any, prior: Any, pieces: list[npt.NDArray[Any]], through: Through | None = None
) -> Callable[[], list[bytes]]:
    """An Encoder's run over ``pieces``, its coder calls made ``through`` where given."""
    from frae.codec import Encoder

    def send() -> list[bytes]:
        sender = Encoder(model, prior)
        with coding_through(sender, through):
            return [sender.push(piece) for piece in pieces]

    return send


def _receiving(
    model: Any, prior: Any, packets: list[bytes], through: Through | None = None
) -> Callable[[], None]:
    """A Decoder's run over ``packets``, its coder calls made ``through`` where given."""
    from frae.codec import Decoder

    def receive() -> None:
        receiver = Decoder(model, prior)
        with coding_through(receiver, through):
            for packet in packets:
                receiver.push(packet)

    return receive


def _writing(prior: Any, symbols: list[list[Symbols]]) -> Callable[[], None]:
    """Each packet's symbols into a range coder of its own, a sequence at a time, then ended,
    as ``Encoder.push`` codes them."""
    from frae.codec.coder import SymbolCoder, ended, start

    def write() -> None:
        coder = SymbolCoder(prior)
        for sequences in symbols:
            encoder = start()
            for sequence in sequences:
                coder.write(encoder, sequence)
            ended(encoder)

    return write


def _reading(prior: Any, packets: list[Packet], sequences: int) -> Callable[[], None]:
    """Each packet's coder bytes opened and its sequences read, as ``Decoder.push`` reads
    them: the packets unpacked first."""

    def read() -> None:
        read_symbols(prior, packets, sequences)

    return read


Runs = dict[tuple[str, int], list[CodecRun]]
"""The codec's runs by side and chunk length."""


def made_runs(at: OnPoint) -> tuple[Runs, dict[str, str]]:
    """The codec's runs on the point's model and input, or none and why (``unsupported`` or
    ``error``)."""
    try:
        runs = list(codec_runs(at.model, at.x, STREAM_CHUNKS))
    except NotImplementedError as error:
        return {}, {"unsupported": str(error)}
    except Exception as error:  # reported on every row
        return {}, {"error": f"{type(error).__name__}: {error}"}
    together: Runs = {}
    for run in runs:
        together.setdefault((run.side, run.chunk), []).append(run)
    return together, {}


class Coding(Operation):
    """The codec's runs at one side and chunk length: through packets, the coder alone and
    the codec with its coder bypassed, timed in turn; where they could not be made, every
    run's record says why."""

    sided = True

    def weights(self, config: FRAEConfig) -> dict[str, npt.NDArray[np.float32]]:
        return codec_weights(config)

    def names(self, name: str) -> tuple[str, ...]:
        return CODING

    def prepare(self, at: OnPoint, unit: Unit, job: Job, row: Row) -> Made:
        made, why = at.once(CODEC, made_runs)
        if why:
            return [row(operation, **why) for operation in CODING]
        assert unit.side is not None and unit.chunk is not None
        runs = made[unit.side, unit.chunk]
        settings = job.settings.for_stream()
        rows: list[Row] = [
            partial(row, run.operation, threads=settings.threads, **(run.sizes or {}))
            for run in runs
        ]

        def each_once() -> list[float]:
            return [seconds_of(run.run) for run in runs]

        try:
            firsts = each_once()  # a stream's first run: its compiles, and nothing to warm up
        except Exception as error:  # every run's record says why
            return [each(error=f"{type(error).__name__}: {error}") for each in rows]
        return Prepared(rows, firsts, each_once, 1, Rule.of(settings))
